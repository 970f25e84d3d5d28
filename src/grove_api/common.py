"""API fragments used by more than one Grove kind.

Topology constraints, autoscaling configuration, reconcile errors and DRA resource-sharing entries appear in the
PodCliqueSet template and again in the PodClique / PodCliqueScalingGroup objects derived from it, so they are
defined once here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from grove_api._meta import GroveModel, Int32, Time

__all__ = [
    "AutoScalingConfig",
    "LastError",
    "PCSGResourceSharingFilter",
    "PCSGResourceSharingSpec",
    "PCSResourceSharingFilter",
    "PCSResourceSharingSpec",
    "ResourceClaimTemplateConfig",
    "ResourceSharingScope",
    "ResourceSharingSpec",
    "TopologyConstraint",
    "TopologyDomain",
    "TopologyPackConstraint",
]

TopologyDomain = Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[a-z][a-z0-9-]*$")]
"""A topology level name (region, zone, block, rack, host, numa, …) as declared in a ClusterTopologyBinding."""


class TopologyPackConstraint(GroveModel):
    """Pack each replica into one domain: `required` is hard, `preferred` is best effort."""

    required: TopologyDomain | None = None
    preferred: TopologyDomain | None = None


class TopologyConstraint(GroveModel):
    """User-facing topology constraint, inherited PCS -> PCSG -> PCLQ; `packDomain` is the deprecated form."""

    topology_name: str | None = None
    pack: TopologyPackConstraint | None = None
    pack_domain: TopologyDomain | None = None

    def required_domain(self) -> str | None:
        """The hard pack domain, falling back to the deprecated `packDomain`."""
        if self.pack is not None and self.pack.required:
            return self.pack.required
        return self.pack_domain or None

    def preferred_domain(self) -> str | None:
        """The best-effort pack domain, if any."""
        return self.pack.preferred if self.pack is not None and self.pack.preferred else None


class AutoScalingConfig(GroveModel):
    """HPA settings for a standalone PodClique or a scaling group; `metrics` are autoscaling/v2 MetricSpecs."""

    min_replicas: Int32 | None = None
    max_replicas: Int32
    metrics: list[dict[str, Any]] | None = None


class LastError(GroveModel):
    """The last failure of a reconcile step, surfaced on the object's status."""

    code: str
    description: str
    observed_at: Time


ResourceSharingScope = Literal["AllReplicas", "PerReplica"]


class ResourceSharingSpec(GroveModel):
    """A shared ResourceClaim drawn from a named template (internal to the PCS, else an external template)."""

    name: str
    namespace: str | None = None
    scope: ResourceSharingScope


class PCSResourceSharingFilter(GroveModel):
    """Restricts PCS-level claims to some child cliques and/or scaling groups."""

    child_clique_names: list[str] | None = None
    child_scaling_group_names: list[str] | None = None


class PCSResourceSharingSpec(ResourceSharingSpec):
    """PCS-level resource sharing; the filter may name cliques and scaling groups."""

    filter: PCSResourceSharingFilter | None = None


class PCSGResourceSharingFilter(GroveModel):
    """Restricts PCSG-level claims to some member cliques."""

    child_clique_names: list[str] | None = None


class PCSGResourceSharingSpec(ResourceSharingSpec):
    """PCSG-level resource sharing; the filter may only name member cliques."""

    filter: PCSGResourceSharingFilter | None = None


class ResourceClaimTemplateConfig(GroveModel):
    """A named resource.k8s.io ResourceClaimTemplateSpec referenced by `resourceSharing` entries."""

    name: str
    template_spec: dict[str, Any]
