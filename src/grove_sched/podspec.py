"""Translate plain pod and node dicts (as the informers store them) into the placement model's value types.

Why a module of its own: the cache (bound pods, nodes) and gang assembly (pending pods) both need the same
Kubernetes reading: tolerations, node selectors and affinity terms, and requests and allocatable through
`grove_sched.quantity` (which bounds every amount). Keeping it here, pure and dict-based, lets both be tested
without a cluster and keeps `placement` free of Kubernetes shapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from grove_sched.model import (
    BoundPod,
    LabelSelector,
    NodeInfo,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredNodeTerm,
    Requirement,
    Taint,
    Toleration,
    WeightedPodAffinityTerm,
)
from grove_sched.podcache import Shared
from grove_sched.quantity import bound_demand, node_capacity

__all__ = [
    "PodTerms",
    "bound_pod",
    "is_terminal",
    "node_info",
    "pod_terms",
]

Obj = Mapping[str, Any]


def is_terminal(pod: Obj) -> bool:
    """Succeeded/Failed pods (or pods being deleted) free their node's resources in the scheduler's view."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed")


def _requirement(raw: Obj) -> Requirement:
    return Requirement(
        str(raw.get("key", "")), str(raw.get("operator", "In")), tuple(str(v) for v in raw.get("values") or ())
    )


def _node_term(raw: Obj) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=tuple(_requirement(r) for r in raw.get("matchExpressions") or ()),
        match_fields=tuple(_requirement(r) for r in raw.get("matchFields") or ()),
    )


def _selector(raw: Obj | None) -> LabelSelector:
    raw = raw or {}
    return LabelSelector(
        match_labels=MappingProxyType({str(k): str(v) for k, v in (raw.get("matchLabels") or {}).items()}),
        match_expressions=tuple(_requirement(r) for r in raw.get("matchExpressions") or ()),
    )


def _pod_term(raw: Obj) -> PodAffinityTerm:
    return PodAffinityTerm(
        selector=_selector(raw.get("labelSelector")),
        topology_key=str(raw.get("topologyKey", "")),
        namespaces=tuple(str(n) for n in raw.get("namespaces") or ()),
    )


def _weight(value: object) -> int:
    """A preference weight; Kubernetes allows 1 to 100 (anything else would skew the objective's tiers)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
        raise ValueError(f"preference weight {value!r} is not a whole number in 1..100")
    return value


def _weighted(raw: Iterable[Obj]) -> tuple[WeightedPodAffinityTerm, ...]:
    return tuple(
        WeightedPodAffinityTerm(_weight(t.get("weight", 1)), _pod_term(t.get("podAffinityTerm") or {})) for t in raw
    )


@dataclass(frozen=True, slots=True)
class PodTerms:
    """Everything placement needs from one pod's spec besides its requests."""

    labels: Mapping[str, str]
    node_selector: Mapping[str, str]
    tolerations: tuple[Toleration, ...]
    required_node_terms: tuple[NodeSelectorTerm, ...]
    preferred_node_terms: tuple[PreferredNodeTerm, ...]
    pod_affinity: tuple[PodAffinityTerm, ...]
    pod_anti_affinity: tuple[PodAffinityTerm, ...]
    preferred_pod_affinity: tuple[WeightedPodAffinityTerm, ...]
    preferred_pod_anti_affinity: tuple[WeightedPodAffinityTerm, ...]


def _str_map(raw: Mapping[str, Any] | None) -> Mapping[str, str]:
    return MappingProxyType({str(k): str(v) for k, v in (raw or {}).items()})


SHARED_MAPS_MAX = 4096
"""Distinct read-only maps `_shared_map` keeps: bound pods repeat a few label sets and request vectors, and
500,000 of them each holding its own copies cost about 250 MB."""

_SHARED_MAPS: Shared[tuple[tuple[str, Any], ...], Mapping[str, Any]] = Shared(SHARED_MAPS_MAX)


def _shared_map(items: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only map equal to `items`, the same object for equal contents while the memo has room."""
    return _SHARED_MAPS.get(tuple(items.items()), lambda: MappingProxyType(dict(items)))


def pod_terms(pod: Obj) -> PodTerms:
    """Constraint terms of a pod (labels, selectors, tolerations, affinity)."""
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    node_aff = affinity.get("nodeAffinity") or {}
    pod_aff = affinity.get("podAffinity") or {}
    anti = affinity.get("podAntiAffinity") or {}
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return PodTerms(
        labels=_str_map((pod.get("metadata") or {}).get("labels")),
        node_selector=_str_map(spec.get("nodeSelector")),
        tolerations=tuple(
            Toleration(
                key=str(t.get("key") or ""),
                operator=str(t.get("operator") or "Equal"),
                value=str(t.get("value") or ""),
                effect=str(t.get("effect") or ""),
            )
            for t in spec.get("tolerations") or ()
        ),
        required_node_terms=tuple(_node_term(t) for t in required.get("nodeSelectorTerms") or ()),
        preferred_node_terms=tuple(
            PreferredNodeTerm(_weight(t.get("weight", 1)), _node_term(t.get("preference") or {}))
            for t in node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        ),
        pod_affinity=tuple(_pod_term(t) for t in pod_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or ()),
        pod_anti_affinity=tuple(_pod_term(t) for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ()),
        preferred_pod_affinity=_weighted(pod_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ()),
        preferred_pod_anti_affinity=_weighted(anti.get("preferredDuringSchedulingIgnoredDuringExecution") or ()),
    )


def bound_pod(pod: Obj, node: str | None = None) -> BoundPod:
    """A pod that consumes capacity on `node` (default: its `spec.nodeName`)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    anti = (spec.get("affinity") or {}).get("podAntiAffinity") or {}
    return BoundPod(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        node=str(node or spec.get("nodeName") or ""),
        labels=_shared_map({str(k): str(v) for k, v in (meta.get("labels") or {}).items()}),
        requests=_shared_map(bound_demand(pod)),
        anti_affinity=_bound_anti_affinity(anti),
    )


def _bound_anti_affinity(anti: Obj) -> tuple[PodAffinityTerm, ...]:
    """A bound pod's required anti-affinity; terms the API would never have accepted are ignored, not fatal."""
    try:
        return tuple(_pod_term(t) for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
    except (AttributeError, TypeError, ValueError):
        return ()


def node_info(node: Obj) -> NodeInfo:
    """A node's allocatable, labels, NoSchedule/NoExecute taints and cordon flag."""
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    allocatable = node_capacity(status.get("allocatable") or status.get("capacity"))
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect") or "NoSchedule"))
        for t in spec.get("taints") or ()
        if t.get("effect") in ("NoSchedule", "NoExecute", None)
    )
    return NodeInfo(
        name=str(meta.get("name", "")),
        labels=_str_map(meta.get("labels")),
        allocatable=MappingProxyType(allocatable),
        taints=taints,
        unschedulable=bool(spec.get("unschedulable")),
    )
