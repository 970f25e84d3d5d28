"""ClusterTopologyBinding (`ct`, grove.io/v1alpha1, cluster scoped): the topology hierarchy Grove packs into.

Levels are ordered broadest to narrowest and map a domain name (what users write in `topologyConstraint`) to the
node label key the scheduler actually matches on.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from grove_api._meta import Condition, GroveModel, Int64, ObjectMeta
from grove_api.common import TopologyDomain

__all__ = [
    "CONDITION_SCHEDULER_TOPOLOGY_DRIFT",
    "ClusterTopologyBinding",
    "ClusterTopologyBindingSpec",
    "ClusterTopologyBindingStatus",
    "SchedulerTopologyBinding",
    "SchedulerTopologyStatus",
    "TopologyLevel",
]

CONDITION_SCHEDULER_TOPOLOGY_DRIFT = "SchedulerTopologyDrift"

_LABEL_KEY_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"


class TopologyLevel(GroveModel):
    """One level of the hierarchy: a domain name and the node label key that identifies it."""

    domain: TopologyDomain
    key: Annotated[str, Field(min_length=1, max_length=63, pattern=_LABEL_KEY_PATTERN)]


class SchedulerTopologyBinding(GroveModel):
    """Declares that a backend's topology resource is managed externally (only drift-checked)."""

    scheduler_name: str
    topology_reference: str


class ClusterTopologyBindingSpec(GroveModel):
    """Ordered levels plus optional per-backend bindings."""

    levels: list[TopologyLevel] = Field(min_length=1)
    scheduler_topology_bindings: list[SchedulerTopologyBinding] | None = None

    def key_for(self, domain: str) -> str | None:
        """The node label key of `domain`, or None when the topology does not define it."""
        return next((level.key for level in self.levels if level.domain == domain), None)


class SchedulerTopologyStatus(GroveModel):
    """Whether one backend's topology resource matches the levels."""

    scheduler_name: str
    topology_reference: str
    in_sync: bool
    scheduler_backend_topology_observed_generation: Int64 | None = None
    message: str | None = None


class ClusterTopologyBindingStatus(GroveModel):
    """Drift reporting for backend topology resources."""

    observed_generation: Int64 | None = None
    conditions: list[Condition] | None = None
    scheduler_topology_statuses: list[SchedulerTopologyStatus] | None = None


class ClusterTopologyBinding(GroveModel):
    """A ClusterTopologyBinding object as stored by the API server."""

    API_VERSION: ClassVar[str] = "grove.io/v1alpha1"
    KIND: ClassVar[str] = "ClusterTopologyBinding"

    api_version: Literal["grove.io/v1alpha1"] = "grove.io/v1alpha1"
    kind: Literal["ClusterTopologyBinding"] = "ClusterTopologyBinding"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ClusterTopologyBindingSpec
    status: ClusterTopologyBindingStatus | None = None
