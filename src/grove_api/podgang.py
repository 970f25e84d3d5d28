"""PodGang (`pg`, scheduler.grove.io/v1alpha1): the unit a gang scheduler places atomically.

The operator writes one PodGang per PCS replica (the base gang) plus one per scaled PCSG replica; a scheduler must
place at least `minReplicas` pods of every PodGroup or none. Note the lowercase JSON key `podgroups`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from grove_api._meta import Condition, GroveModel, Int32, ObjectMeta

__all__ = [
    "CONDITION_DISRUPTION_TARGET",
    "CONDITION_INITIALIZED",
    "CONDITION_READY",
    "CONDITION_SCHEDULED",
    "CONDITION_UNHEALTHY",
    "REASON_PODS_CREATED",
    "REASON_PODS_CREATION_PENDING",
    "NamespacedName",
    "PodGang",
    "PodGangPhase",
    "PodGangSpec",
    "PodGangStatus",
    "PodGroup",
    "TopologyConstraintGroupConfig",
    "TopologyPackConstraintKeys",
    "TopologySchedulingConstraint",
]

PodGangPhase = Literal["Pending", "Starting", "Running"]

CONDITION_INITIALIZED = "Initialized"
CONDITION_SCHEDULED = "Scheduled"
CONDITION_READY = "Ready"
CONDITION_UNHEALTHY = "Unhealthy"
CONDITION_DISRUPTION_TARGET = "DisruptionTarget"
REASON_PODS_CREATION_PENDING = "PodGangPodsCreationPending"
REASON_PODS_CREATED = "PodGangPodsCreated"


class NamespacedName(GroveModel):
    """A reference to a namespaced object (a pod, or a gang whose reservation may be reused)."""

    namespace: str
    name: str


class TopologyPackConstraintKeys(GroveModel):
    """Pack constraint already translated to node label keys (e.g. `topology.kubernetes.io/zone`)."""

    required: str | None = None
    preferred: str | None = None


class TopologySchedulingConstraint(GroveModel):
    """Scheduler-side topology constraint of a gang, group config or PodGroup."""

    pack_constraint: TopologyPackConstraintKeys | None = None


class PodGroup(GroveModel):
    """The pods of one PodClique inside a gang; `minReplicas` of them must be placed together.

    `podReferences` is always serialised (upstream has no omitempty): an empty list means "no pods yet".
    """

    name: str
    pod_references: list[NamespacedName] = Field(default_factory=list)
    min_replicas: Annotated[Int32, Field(ge=0)]
    topology_constraint: TopologySchedulingConstraint | None = None


class TopologyConstraintGroupConfig(GroveModel):
    """A constraint over a strict subset of the gang's PodGroups (one PCSG replica inside the base gang)."""

    name: str
    pod_group_names: list[str]
    topology_constraint: TopologySchedulingConstraint | None = None


class PodGangSpec(GroveModel):
    """PodGroups plus gang-wide and per-subset topology constraints."""

    pod_groups: list[PodGroup] = Field(alias="podgroups")
    topology_constraint: TopologySchedulingConstraint | None = None
    topology_constraint_group_configs: list[TopologyConstraintGroupConfig] | None = None
    priority_class_name: str | None = None
    reuse_reservation_ref: NamespacedName | None = None


class PodGangStatus(GroveModel):
    """Lifecycle phase and conditions; `placementScore` (0..1) is written by a scheduler."""

    phase: PodGangPhase
    conditions: list[Condition] | None = None
    placement_score: Annotated[float, Field(ge=0, le=1)] | None = None


class PodGang(GroveModel):
    """A PodGang object as stored by the API server."""

    API_VERSION: ClassVar[str] = "scheduler.grove.io/v1alpha1"
    KIND: ClassVar[str] = "PodGang"

    api_version: Literal["scheduler.grove.io/v1alpha1"] = "scheduler.grove.io/v1alpha1"
    kind: Literal["PodGang"] = "PodGang"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodGangSpec
    status: PodGangStatus | None = None
