"""The pod spec of a first-API gang member: what a PodGangSet and its PodCliques put into every pod.

The operator builds PodGangSet pods from it and `kubectl grove convert` writes it into the equivalent
PodCliqueSet's clique, so both give the same pods. Three things are added to the template's spec:

* `scheduling.nodeAffinity`, ANDed with the template's own node affinity;
* the `topology` terms of the PodCliques whose selector matches the pod's labels, appended to its pod affinity;
* a limit equal to the request for every extended resource requested without one: the original README asks for
  `nvidia.com/gpu` under `requests` alone, which kube-apiserver refuses for a pod ("Limit must be set for non
  overcommitable resources").
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from grove_api.dynamo_v1 import DynamoPodClique, PodGangSet

__all__ = ["gang_pod_spec", "limit_extended_requests", "merge_node_affinity", "selecting_podcliques"]

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def selecting_podcliques(podcliques: Iterable[DynamoPodClique], labels: Mapping[str, str]) -> list[DynamoPodClique]:
    """The PodCliques (of the pod's namespace) whose selector matches `labels`, by name."""
    chosen = [p for p in podcliques if p.metadata.deletion_timestamp is None and p.spec.selector.matches(labels)]
    return sorted(chosen, key=lambda p: p.metadata.name or "")


def merge_node_affinity(pod: Mapping[str, Any] | None, extra: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Both node affinities at once: required terms are ORed within each side, so the sides are ANDed by pairing
    every term of one with every term of the other; preferred terms are concatenated."""
    if not extra:
        return copy.deepcopy(dict(pod)) if pod else None
    if not pod:
        return copy.deepcopy(dict(extra))
    merged: dict[str, Any] = {}
    mine = (pod.get(_REQUIRED) or {}).get("nodeSelectorTerms") or []
    theirs = (extra.get(_REQUIRED) or {}).get("nodeSelectorTerms") or []
    if mine and theirs:
        merged[_REQUIRED] = {"nodeSelectorTerms": [_and_terms(a, b) for a in mine for b in theirs]}
    elif mine or theirs:
        merged[_REQUIRED] = {"nodeSelectorTerms": copy.deepcopy(mine or theirs)}
    preferred = [*(pod.get(_PREFERRED) or ()), *(extra.get(_PREFERRED) or ())]
    if preferred:
        merged[_PREFERRED] = copy.deepcopy(preferred)
    return merged


def _and_terms(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    term: dict[str, Any] = {}
    for key in ("matchExpressions", "matchFields"):
        both = [*(a.get(key) or ()), *(b.get(key) or ())]
        if both:
            term[key] = copy.deepcopy(both)
    return term


def _merge_pod_affinity(pod: Mapping[str, Any] | None, cliques: Sequence[DynamoPodClique]) -> dict[str, Any] | None:
    merged = copy.deepcopy(dict(pod or {}))
    for clique in cliques:
        if clique.spec.topology is None:
            continue
        for key, terms in clique.spec.topology.pod_affinity().items():
            merged[key] = [*(merged.get(key) or ()), *terms]
    return merged or None


def _extended(resource: str) -> bool:
    """An extended resource (`vendor.example/thing`, not `kubernetes.io/...`) or hugepages: never overcommitted."""
    if resource.startswith("hugepages-"):
        return True
    domain = resource.split("/", 1)[0] if "/" in resource else ""
    return bool(domain) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def limit_extended_requests(spec: dict[str, Any]) -> None:
    """Give every requested extended resource without a limit a limit equal to its request (in place)."""
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            if not isinstance(container, dict):
                continue
            resources = container.get("resources")
            if not isinstance(resources, dict) or not isinstance(resources.get("requests"), dict):
                continue
            given = resources.get("limits")
            limits: dict[str, Any] = given if isinstance(given, dict) else {}
            missing = {r: q for r, q in resources["requests"].items() if _extended(str(r)) and r not in limits}
            if missing:
                resources["limits"] = {**limits, **missing}


def gang_pod_spec(
    pgs: PodGangSet, labels: Mapping[str, str], podcliques: Iterable[DynamoPodClique]
) -> tuple[dict[str, Any], list[DynamoPodClique]]:
    """The template's spec with the three additions above, and the PodCliques whose terms it got."""
    spec = copy.deepcopy(pgs.spec.template.spec)
    limit_extended_requests(spec)
    cliques = selecting_podcliques(podcliques, labels)
    affinity = dict(spec.get("affinity") or {})
    scheduling = pgs.spec.scheduling.node_affinity if pgs.spec.scheduling else None
    node = merge_node_affinity(affinity.get("nodeAffinity"), scheduling)
    pod_affinity = _merge_pod_affinity(affinity.get("podAffinity"), cliques)
    for key, value in (("nodeAffinity", node), ("podAffinity", pod_affinity)):
        if value:
            affinity[key] = value
    if affinity:
        spec["affinity"] = affinity
    return spec, cliques
