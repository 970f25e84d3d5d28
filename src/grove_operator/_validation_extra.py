"""Topology and resource-sharing rules of the PodCliqueSet validation (grove-reference §3.12).

These rules need more context than a single field (the ClusterTopologyBinding's level order, the template's claim
templates and the names of cliques and groups), so they live apart from the per-field rules in `validation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grove_api import ClusterTopologyBinding
from grove_operator._fieldchecks import FieldErrors

__all__ = ["check_resource_sharing", "check_topology", "topology_warnings"]

_TEMPLATE = "spec.template"


def _constraints(template: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(field path, constraint) of every topologyConstraint set at PCS, scaling-group and clique level."""
    entries: list[tuple[str, Mapping[str, Any]]] = []
    if template.get("topologyConstraint"):
        entries.append((f"{_TEMPLATE}.topologyConstraint", template["topologyConstraint"]))
    for index, group in enumerate(template.get("podCliqueScalingGroups") or ()):
        if group.get("topologyConstraint"):
            entries.append(
                (f"{_TEMPLATE}.podCliqueScalingGroups[{index}].topologyConstraint", group["topologyConstraint"])
            )
    for index, clique in enumerate(template.get("cliques") or ()):
        if clique.get("topologyConstraint"):
            entries.append((f"{_TEMPLATE}.cliques[{index}].topologyConstraint", clique["topologyConstraint"]))
    return entries


def check_topology(
    errors: FieldErrors,
    pcs: Mapping[str, Any],
    topologies: Mapping[str, ClusterTopologyBinding],
    *,
    enabled: bool = True,
) -> None:
    """Create-time topology rules: with topology-aware scheduling off no constraint at all; else one topology per
    PCS, binding and domains exist, sane nesting."""
    template = (pcs.get("spec") or {}).get("template") or {}
    entries = _constraints(template)
    if not enabled:
        for path, _ in entries:
            errors.add(path, "Forbidden", "topology-aware scheduling is disabled in this operator")
        return
    names = {str(c["topologyName"]) for _, c in entries if c.get("topologyName")}
    if len(names) > 1:
        errors.add(_TEMPLATE, "Invalid", f"a PodCliqueSet may use only one topology, found {sorted(names)}")
    if not entries:
        return
    if not names:
        errors.add(entries[0][0] + ".topologyName", "Required", "topologyName must be set or inherited")
        return
    binding = topologies.get(next(iter(sorted(names))))
    if binding is None:
        errors.add(
            entries[0][0] + ".topologyName", "NotFound", f"ClusterTopologyBinding {sorted(names)[0]!r} not found"
        )
        return
    for path, constraint in entries:
        if constraint.get("packDomain"):
            errors.add(f"{path}.packDomain", "Forbidden", "packDomain is deprecated; use pack.required")
        for kind, domain in (constraint.get("pack") or {}).items():
            if domain and binding.spec.key_for(str(domain)) is None:
                errors.add(f"{path}.pack.{kind}", "NotFound", f"domain {domain!r} not in {binding.metadata.name!r}")
    _check_domain_nesting(errors, template, binding)


def topology_warnings(pcs: Mapping[str, Any], topologies: Mapping[str, ClusterTopologyBinding]) -> list[str]:
    """A preferred domain coarser than the required one at the same level can never be honoured beyond it."""
    warnings = []
    entries = _constraints((pcs.get("spec") or {}).get("template") or {})
    binding = topologies.get(next((str(c["topologyName"]) for _, c in entries if c.get("topologyName")), ""))
    for path, constraint in entries:
        pack = constraint.get("pack") or {}
        if binding is None or not pack.get("required") or not pack.get("preferred"):
            continue
        depth = {level.domain: index for index, level in enumerate(binding.spec.levels)}
        required, preferred = depth.get(str(pack["required"])), depth.get(str(pack["preferred"]))
        if required is not None and preferred is not None and preferred < required:
            warnings.append(
                f"{path}.pack.preferred: {pack['preferred']!r} is coarser than the required {pack['required']!r}"
                " and adds nothing"
            )
    return warnings


def _required_depth(constraint: Mapping[str, Any] | None, depth: Mapping[str, int]) -> int | None:
    domain = ((constraint or {}).get("pack") or {}).get("required")
    return depth.get(str(domain)) if domain else None


def _check_domain_nesting(errors: FieldErrors, template: Mapping[str, Any], binding: ClusterTopologyBinding) -> None:
    """A parent's required domain must not be narrower than its child's (PCS >= PCSG >= PCLQ)."""
    depth = {level.domain: index for index, level in enumerate(binding.spec.levels)}
    pcs_depth = _required_depth(template.get("topologyConstraint"), depth)
    groups = list(template.get("podCliqueScalingGroups") or ())
    group_of = {c: g for g in groups for c in g.get("cliqueNames") or ()}
    for index, group in enumerate(groups):
        child = _required_depth(group.get("topologyConstraint"), depth)
        if pcs_depth is not None and child is not None and child < pcs_depth:
            path = f"{_TEMPLATE}.podCliqueScalingGroups[{index}].topologyConstraint.pack.required"
            errors.add(path, "Invalid", "must not be broader than the PodCliqueSet's required domain")
    for index, clique in enumerate(template.get("cliques") or ()):
        child = _required_depth(clique.get("topologyConstraint"), depth)
        group = group_of.get(clique.get("name"))
        parents = [_required_depth(group.get("topologyConstraint"), depth) if group else None, pcs_depth]
        if child is not None and any(parent is not None and child < parent for parent in parents):
            path = f"{_TEMPLATE}.cliques[{index}].topologyConstraint.pack.required"
            errors.add(path, "Invalid", "must not be broader than its parent's required domain")


def _check_sharing_list(
    errors: FieldErrors,
    path: str,
    entries: Any,
    templates: set[str],
    known_filters: Mapping[str, set[str]],
) -> None:
    """resourceSharing entries: unique names, known internal templates, valid scope, known filter targets."""
    seen: set[str] = set()
    for index, entry in enumerate(entries or ()):
        entry_path = f"{path}[{index}]"
        name = str(entry.get("name") or "")
        if not name:
            errors.add(f"{entry_path}.name", "Required", "name is required")
        elif name in seen:
            errors.add(f"{entry_path}.name", "Duplicate", f"{name!r} listed more than once")
        elif not entry.get("namespace") and name not in templates:
            errors.add(f"{entry_path}.name", "NotFound", f"no resourceClaimTemplate named {name!r}")
        seen.add(name)
        if entry.get("scope") not in ("AllReplicas", "PerReplica"):
            errors.add(f"{entry_path}.scope", "Invalid", "must be AllReplicas or PerReplica")
        for key, allowed in known_filters.items():
            for f_index, target in enumerate((entry.get("filter") or {}).get(key) or ()):
                if target not in allowed:
                    errors.add(f"{entry_path}.filter.{key}[{f_index}]", "NotFound", f"unknown {target!r}")


def check_resource_sharing(errors: FieldErrors, template: Mapping[str, Any]) -> None:
    """resourceSharing at PCS, PCSG and clique level refers to known templates and filter targets."""
    templates_list = list(template.get("resourceClaimTemplates") or ())
    templates = {str(t.get("name")) for t in templates_list}
    if len(templates) != len(templates_list):
        errors.add(f"{_TEMPLATE}.resourceClaimTemplates", "Duplicate", "template names must be unique")
    cliques = {str(c.get("name")) for c in template.get("cliques") or ()}
    groups = list(template.get("podCliqueScalingGroups") or ())
    pcs_filters = {"childCliqueNames": cliques, "childScalingGroupNames": {str(g.get("name")) for g in groups}}
    _check_sharing_list(errors, f"{_TEMPLATE}.resourceSharing", template.get("resourceSharing"), templates, pcs_filters)
    for index, group in enumerate(groups):
        members = {"childCliqueNames": {str(c) for c in group.get("cliqueNames") or ()}}
        path = f"{_TEMPLATE}.podCliqueScalingGroups[{index}].resourceSharing"
        _check_sharing_list(errors, path, group.get("resourceSharing"), templates, members)
    for index, clique in enumerate(template.get("cliques") or ()):
        path = f"{_TEMPLATE}.cliques[{index}].resourceSharing"
        _check_sharing_list(errors, path, clique.get("resourceSharing"), templates, {})
