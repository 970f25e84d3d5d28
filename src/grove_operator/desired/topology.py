"""Translating user topology constraints (domains) into PodGang constraints (node label keys) (§1.6, §3.3).

Users write `pack: {required: rack}`; schedulers need `topology.kubernetes.io/rack`. The mapping comes from the
ClusterTopologyBinding named by `topologyName`, inherited PCS -> scaling group -> clique. Topology-aware scheduling
is on whenever the named binding exists. A constraint whose binding is missing or whose domain the binding lacks is
dropped, and the reason is recorded for the PodCliqueSet's `TopologyLevelsUnavailable` condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_api import (
    ClusterTopologyBinding,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplateSpec,
    TopologyConstraint,
)

__all__ = [
    "REASON_ALL_LEVELS_AVAILABLE",
    "REASON_LEVELS_UNAVAILABLE",
    "REASON_TAS_DISABLED",
    "REASON_TOPOLOGY_NAME_MISSING",
    "REASON_TOPOLOGY_NOT_FOUND",
    "TopologyTranslator",
]

REASON_LEVELS_UNAVAILABLE = "ClusterTopologyLevelsUnavailable"
REASON_ALL_LEVELS_AVAILABLE = "AllClusterTopologyLevelsAvailable"
REASON_TOPOLOGY_NOT_FOUND = "ClusterTopologyNotFound"
REASON_TOPOLOGY_NAME_MISSING = "TopologyNameMissing"
REASON_TAS_DISABLED = "TopologyAwareSchedulingDisabled"


@dataclass
class TopologyTranslator:
    """Translates the constraints of one PodCliqueSet and collects why any were dropped.

    `problems` maps a condition reason to human-readable details; it is empty when every constraint translated.
    """

    pcs: PodCliqueSet
    topologies: Mapping[str, ClusterTopologyBinding]
    problems: dict[str, list[str]] = field(default_factory=dict)
    used_topologies: set[str] = field(default_factory=set)

    def topology_name(
        self, group: PodCliqueScalingGroupConfig | None = None, clique: PodCliqueTemplateSpec | None = None
    ) -> str | None:
        """The effective topologyName at a level: the nearest one set on clique, scaling group or PCS."""
        for constraint in (
            clique.topology_constraint if clique is not None else None,
            group.topology_constraint if group is not None else None,
            self.pcs.spec.template.topology_constraint,
        ):
            if constraint is not None and constraint.topology_name:
                return constraint.topology_name
        return None

    def _translate(
        self, constraint: TopologyConstraint | None, topology_name: str | None, where: str
    ) -> dict[str, Any] | None:
        if constraint is None:
            return None
        domains = {"required": constraint.required_domain(), "preferred": constraint.preferred_domain()}
        if not any(domains.values()):
            return None
        if not topology_name:
            self._problem(REASON_TOPOLOGY_NAME_MISSING, f"{where}: no topologyName set or inherited")
            return None
        binding = self.topologies.get(topology_name)
        if binding is None:
            self._problem(REASON_TOPOLOGY_NOT_FOUND, f"{where}: ClusterTopologyBinding {topology_name!r} not found")
            return None
        keys: dict[str, str] = {}
        for kind, domain in domains.items():
            if not domain:
                continue
            key = binding.spec.key_for(domain)
            if key is None:
                self._problem(REASON_LEVELS_UNAVAILABLE, f"{where}: domain {domain!r} not in {topology_name!r}")
                return None
            keys[kind] = key
        self.used_topologies.add(topology_name)
        return {"packConstraint": keys}

    def _problem(self, reason: str, detail: str) -> None:
        details = self.problems.setdefault(reason, [])
        if detail not in details:
            details.append(detail)

    def pcs_constraint(self) -> dict[str, Any] | None:
        """The PodGang-level constraint of the PCS template."""
        return self._translate(self.pcs.spec.template.topology_constraint, self.topology_name(), "podCliqueSet")

    def group_constraint(self, group: PodCliqueScalingGroupConfig) -> dict[str, Any] | None:
        """The constraint of one replica of a scaling group."""
        return self._translate(group.topology_constraint, self.topology_name(group), f"scalingGroup {group.name}")

    def clique_constraint(
        self, clique: PodCliqueTemplateSpec, group: PodCliqueScalingGroupConfig | None = None
    ) -> dict[str, Any] | None:
        """The PodGroup constraint of one clique."""
        return self._translate(clique.topology_constraint, self.topology_name(group, clique), f"clique {clique.name}")

    def translate_all(self) -> None:
        """Translate every constraint of the PCS once, to fill `problems` (used by the status computation)."""
        template = self.pcs.spec.template
        self.pcs_constraint()
        for group in template.pod_clique_scaling_groups or ():
            self.group_constraint(group)
        for clique in template.cliques:
            self.clique_constraint(clique, template.scaling_group_of(clique.name))

    def has_constraints(self) -> bool:
        """True when the PCS asks for any topology packing at all."""
        template = self.pcs.spec.template
        constraints = [template.topology_constraint]
        constraints += [g.topology_constraint for g in template.pod_clique_scaling_groups or ()]
        constraints += [c.topology_constraint for c in template.cliques]
        return any(c is not None and (c.required_domain() or c.preferred_domain()) for c in constraints)
