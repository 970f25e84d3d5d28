"""PodClique (`pclq`, grove.io/v1alpha1): a set of identical pods with one role.

`PodCliqueSpec` is also the clique template inside a PodCliqueSet, which is why it lives here and is imported by
`podcliqueset`. The operator owns PodClique objects; users scale them through the scale subresource.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from grove_api._meta import Condition, GroveModel, Int32, Int64, ObjectMeta, Time
from grove_api.common import AutoScalingConfig, LastError

__all__ = [
    "CONDITION_MIN_AVAILABLE_BREACHED",
    "CONDITION_PODCLIQUE_AVAILABLE",
    "CONDITION_PODCLIQUE_SCHEDULED",
    "PodClique",
    "PodCliqueSpec",
    "PodCliqueStatus",
    "PodCliqueUpdateProgress",
    "PodsSelectedToUpdate",
]

CONDITION_PODCLIQUE_SCHEDULED = "PodCliqueScheduled"
CONDITION_MIN_AVAILABLE_BREACHED = "MinAvailableBreached"
CONDITION_PODCLIQUE_AVAILABLE = "PodCliqueAvailable"
"""Grove's own addition (upstream has no such condition): True while `readyReplicas >= minAvailable`; False with
reason `NotYetAvailable` until that has held once since the PodClique was created. Gang termination reads it to
leave never-available PodCliques alone."""


class PodCliqueSpec(GroveModel):
    """Pod template plus gang parameters; `roleName` missing on the wire reads as ""."""

    role_name: str = ""
    pod_spec: dict[str, Any]
    replicas: Annotated[Int32, Field(ge=0)]
    min_available: Annotated[Int32, Field(ge=0)] | None = None
    starts_after: list[str] | None = None
    auto_scaling_config: AutoScalingConfig | None = None

    def effective_min_available(self) -> int:
        """`minAvailable` as the webhook defaults it: the clique's replicas when unset."""
        return self.replicas if self.min_available is None else self.min_available


class PodsSelectedToUpdate(GroveModel):
    """Rolling-recreate bookkeeping: the ready pod being replaced now and those already replaced."""

    current: str
    completed: list[str] | None = None


class PodCliqueUpdateProgress(GroveModel):
    """Progress of a template rollout through one PodClique."""

    update_started_at: Time | None = None
    update_ended_at: Time | None = None
    pod_clique_set_generation_hash: str
    pod_template_hash: str
    ready_pods_selected_to_update: PodsSelectedToUpdate | None = None


class PodCliqueStatus(GroveModel):
    """Observed pod counts, conditions and rollout state of a PodClique."""

    observed_generation: Int64 | None = None
    last_errors: list[LastError] | None = None
    replicas: Int32 = 0
    ready_replicas: Int32 = 0
    updated_replicas: Int32 = 0
    schedule_gated_replicas: Int32 = 0
    scheduled_replicas: Int32 = 0
    hpa_pod_selector: str | None = None
    conditions: list[Condition] | None = None
    current_pod_clique_set_generation_hash: str | None = None
    current_pod_template_hash: str | None = None
    update_progress: PodCliqueUpdateProgress | None = None


class PodClique(GroveModel):
    """A PodClique object as stored by the API server."""

    API_VERSION: ClassVar[str] = "grove.io/v1alpha1"
    KIND: ClassVar[str] = "PodClique"

    api_version: Literal["grove.io/v1alpha1"] = "grove.io/v1alpha1"
    kind: Literal["PodClique"] = "PodClique"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodCliqueSpec
    status: PodCliqueStatus | None = None
