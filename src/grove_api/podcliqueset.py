"""PodCliqueSet (`pcs`, grove.io/v1alpha1): the user-facing workload.

Each PCS replica is a full copy of the system: its own PodCliques, scaling groups, PodGangs and headless service,
all expanded by the operator from `spec.template`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from grove_api._meta import Condition, GroveModel, Int32, Int64, ObjectMeta, Time
from grove_api.common import (
    AutoScalingConfig,
    LastError,
    PCSGResourceSharingSpec,
    PCSResourceSharingSpec,
    ResourceClaimTemplateConfig,
    ResourceSharingSpec,
    TopologyConstraint,
)
from grove_api.podclique import PodCliqueSpec

__all__ = [
    "CONDITION_TOPOLOGY_LEVELS_UNAVAILABLE",
    "DEFAULT_TERMINATION_DELAY",
    "CliqueStartupType",
    "HeadlessServiceConfig",
    "PodCliqueScalingGroupConfig",
    "PodCliqueSet",
    "PodCliqueSetReplicaUpdateProgress",
    "PodCliqueSetSpec",
    "PodCliqueSetStatus",
    "PodCliqueSetTemplateSpec",
    "PodCliqueSetUpdateProgress",
    "PodCliqueSetUpdateStrategy",
    "PodCliqueTemplateSpec",
    "PodGangStatusSummary",
    "PodGangSummaryPhase",
    "UpdateStrategyType",
]

CliqueStartupType = Literal["CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"]
UpdateStrategyType = Literal["RollingRecreate", "OnDelete"]
PodGangSummaryPhase = Literal["Pending", "Starting", "Running", "Failed", "Succeeded"]

CONDITION_TOPOLOGY_LEVELS_UNAVAILABLE = "TopologyLevelsUnavailable"
DEFAULT_TERMINATION_DELAY = "4h"


class PodCliqueTemplateSpec(GroveModel):
    """One clique of the template: its name, pod metadata, constraints and PodClique spec."""

    name: str
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    topology_constraint: TopologyConstraint | None = None
    resource_sharing: list[ResourceSharingSpec] | None = None
    spec: PodCliqueSpec


class PodCliqueScalingGroupConfig(GroveModel):
    """A group of cliques scaled together; `replicas` only seeds the PCSG object at creation."""

    name: str
    clique_names: list[str]
    annotations: dict[str, str] | None = None
    replicas: Annotated[Int32, Field(ge=1)] | None = None
    min_available: Annotated[Int32, Field(ge=1)] | None = None
    scale_config: AutoScalingConfig | None = None
    resource_sharing: list[PCSGResourceSharingSpec] | None = None
    topology_constraint: TopologyConstraint | None = None

    def effective_replicas(self) -> int:
        """`replicas` with its CRD default of 1 applied."""
        return 1 if self.replicas is None else self.replicas

    def effective_min_available(self) -> int:
        """`minAvailable` with its CRD default of 1 applied."""
        return 1 if self.min_available is None else self.min_available


class HeadlessServiceConfig(GroveModel):
    """Options of the per-replica headless service (which is always created)."""

    publish_not_ready_addresses: bool = True


class PodCliqueSetTemplateSpec(GroveModel):
    """Everything one PCS replica is built from."""

    cliques: list[PodCliqueTemplateSpec] = Field(min_length=1)
    clique_startup_type: CliqueStartupType | None = None
    priority_class_name: str | None = None
    headless_service_config: HeadlessServiceConfig | None = None
    topology_constraint: TopologyConstraint | None = None
    termination_delay: str | None = None
    resource_claim_templates: list[ResourceClaimTemplateConfig] | None = None
    resource_sharing: list[PCSResourceSharingSpec] | None = None
    pod_clique_scaling_groups: list[PodCliqueScalingGroupConfig] | None = None

    def effective_startup_type(self) -> CliqueStartupType:
        """`cliqueStartupType` with its CRD default (AnyOrder) applied."""
        return self.clique_startup_type or "CliqueStartupTypeAnyOrder"

    def clique(self, name: str) -> PodCliqueTemplateSpec | None:
        """The clique template called `name`, if any."""
        return next((c for c in self.cliques if c.name == name), None)

    def scaling_group_of(self, clique_name: str) -> PodCliqueScalingGroupConfig | None:
        """The scaling group that contains `clique_name`, or None for a standalone clique."""
        return next((g for g in self.pod_clique_scaling_groups or () if clique_name in g.clique_names), None)


class PodCliqueSetUpdateStrategy(GroveModel):
    """How template changes roll out."""

    type: UpdateStrategyType | None = None


class PodCliqueSetSpec(GroveModel):
    """Desired replicas, update strategy and template of a PodCliqueSet."""

    replicas: Annotated[Int32, Field(ge=0)] | None = None
    update_strategy: PodCliqueSetUpdateStrategy | None = None
    template: PodCliqueSetTemplateSpec

    def effective_update_strategy(self) -> UpdateStrategyType:
        """The update strategy type with its CRD default (RollingRecreate) applied."""
        if self.update_strategy is None or self.update_strategy.type is None:
            return "RollingRecreate"
        return self.update_strategy.type


class PodGangStatusSummary(GroveModel):
    """Declared upstream in the PCS status (`podGangStatuses`) but never populated."""

    name: str
    phase: PodGangSummaryPhase
    conditions: list[Condition] | None = None


class PodCliqueSetReplicaUpdateProgress(GroveModel):
    """Rollout progress of one PCS replica during a rolling recreate."""

    replica_index: Int32
    update_started_at: Time | None = None
    update_ended_at: Time | None = None


class PodCliqueSetUpdateProgress(GroveModel):
    """Rollout progress of the whole PodCliqueSet."""

    update_started_at: Time | None = None
    update_ended_at: Time | None = None
    updated_pod_cliques_count: Int32 = 0
    total_pod_cliques_count: Int32 = 0
    updated_pod_clique_scaling_groups_count: Int32 = 0
    total_pod_clique_scaling_groups_count: Int32 = 0
    currently_updating: list[PodCliqueSetReplicaUpdateProgress] | None = None


class PodCliqueSetStatus(GroveModel):
    """Observed availability, rollout state and conditions of a PodCliqueSet."""

    observed_generation: Int64 | None = None
    conditions: list[Condition] | None = None
    last_errors: list[LastError] | None = None
    replicas: Int32 = 0
    updated_replicas: Int32 = 0
    available_replicas: Int32 = 0
    hpa_pod_selector: str | None = None
    pod_gang_statuses: list[PodGangStatusSummary] | None = None
    current_generation_hash: str | None = None
    update_progress: PodCliqueSetUpdateProgress | None = None


class PodCliqueSet(GroveModel):
    """A PodCliqueSet object as stored by the API server."""

    API_VERSION: ClassVar[str] = "grove.io/v1alpha1"
    KIND: ClassVar[str] = "PodCliqueSet"

    api_version: Literal["grove.io/v1alpha1"] = "grove.io/v1alpha1"
    kind: Literal["PodCliqueSet"] = "PodCliqueSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodCliqueSetSpec
    status: PodCliqueSetStatus | None = None
