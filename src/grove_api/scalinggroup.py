"""PodCliqueScalingGroup (`pcsg`, grove.io/v1alpha1): cliques that scale together as one replica unit.

One PCSG object exists per (PodCliqueSet replica x scaling-group config); each of its replicas owns one PodClique
per member clique. Its scale subresource publishes `.status.selector` (not `hpaPodSelector` as PCS/PCLQ do).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from grove_api._meta import Condition, GroveModel, Int32, Int64, ObjectMeta, Time
from grove_api.common import LastError

__all__ = [
    "CONDITION_GANG_TERMINATION_IN_PROGRESS",
    "PodCliqueScalingGroup",
    "PodCliqueScalingGroupSpec",
    "PodCliqueScalingGroupStatus",
    "PodCliqueScalingGroupUpdateProgress",
    "ReplicasSelectedToUpdate",
]

CONDITION_GANG_TERMINATION_IN_PROGRESS = "GangTerminationInProgress"


class PodCliqueScalingGroupSpec(GroveModel):
    """Replica count, gang minimum and member clique template names of one scaling group."""

    replicas: Annotated[Int32, Field(ge=0)] = 1
    min_available: Annotated[Int32, Field(ge=1)] | None = None
    clique_names: list[str]

    def effective_min_available(self) -> int:
        """`minAvailable` with its CRD default of 1 applied."""
        return 1 if self.min_available is None else self.min_available


class ReplicasSelectedToUpdate(GroveModel):
    """Rolling-recreate bookkeeping: the PCSG replica index being recreated now and those already done."""

    current: Int32
    completed: list[Int32] | None = None


class PodCliqueScalingGroupUpdateProgress(GroveModel):
    """Progress of a template rollout through one scaling group."""

    update_started_at: Time | None = None
    update_ended_at: Time | None = None
    pod_clique_set_generation_hash: str
    updated_pod_cliques_count: Int32 = 0
    total_pod_cliques_count: Int32 = 0
    ready_replica_indices_selected_to_update: ReplicasSelectedToUpdate | None = None


class PodCliqueScalingGroupStatus(GroveModel):
    """Observed replica counts, conditions and rollout state of a scaling group."""

    replicas: Int32 = 0
    scheduled_replicas: Int32 = 0
    available_replicas: Int32 = 0
    updated_replicas: Int32 = 0
    selector: str | None = None
    observed_generation: Int64 | None = None
    last_errors: list[LastError] | None = None
    conditions: list[Condition] | None = None
    current_pod_clique_set_generation_hash: str | None = None
    update_progress: PodCliqueScalingGroupUpdateProgress | None = None


class PodCliqueScalingGroup(GroveModel):
    """A PodCliqueScalingGroup object as stored by the API server."""

    API_VERSION: ClassVar[str] = "grove.io/v1alpha1"
    KIND: ClassVar[str] = "PodCliqueScalingGroup"

    api_version: Literal["grove.io/v1alpha1"] = "grove.io/v1alpha1"
    kind: Literal["PodCliqueScalingGroup"] = "PodCliqueScalingGroup"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodCliqueScalingGroupSpec
    status: PodCliqueScalingGroupStatus | None = None
