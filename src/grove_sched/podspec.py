"""Translate plain pod and node dicts (as the informers store them) into the placement model's value types.

Why a module of its own: the cache (bound pods, nodes) and gang assembly (pending pods) both need the same
Kubernetes arithmetic: quantities to integers, effective pod requests (sum of containers, max with each init
container, plus overhead), tolerations, node selectors and affinity terms. Keeping it here, pure and dict-based,
lets both be tested without a cluster and keeps `placement` free of Kubernetes shapes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import Any

from grove_sched.model import (
    CPU,
    PODS,
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

__all__ = [
    "PodTerms",
    "bound_pod",
    "is_terminal",
    "node_info",
    "parse_quantity",
    "pod_requests",
    "pod_terms",
]

Obj = Mapping[str, Any]

_SUFFIXES: Mapping[str, Decimal] = MappingProxyType(
    {
        "n": Decimal("1e-9"),
        "u": Decimal("1e-6"),
        "m": Decimal("1e-3"),
        "": Decimal(1),
        "k": Decimal(10**3),
        "M": Decimal(10**6),
        "G": Decimal(10**9),
        "T": Decimal(10**12),
        "P": Decimal(10**15),
        "E": Decimal(10**18),
        "Ki": Decimal(2**10),
        "Mi": Decimal(2**20),
        "Gi": Decimal(2**30),
        "Ti": Decimal(2**40),
        "Pi": Decimal(2**50),
        "Ei": Decimal(2**60),
    }
)
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([numkMGTPE]i?|)$")


def parse_quantity(value: object, resource: str) -> int:
    """A Kubernetes quantity as an integer: millicores for cpu, whole units (rounded up) otherwise."""
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None or (match.group(2).endswith("i") and match.group(2)[:-1] in ("n", "u", "m", "")):
        raise ValueError(f"invalid quantity {text!r} for {resource}")
    try:
        amount = Decimal(match.group(1)) * _SUFFIXES[match.group(2)]
    except (InvalidOperation, KeyError) as err:
        raise ValueError(f"invalid quantity {text!r} for {resource}") from err
    if resource == CPU:
        amount *= 1000
    return math.ceil(amount)


def _resource_map(raw: Mapping[str, Any] | None) -> dict[str, int]:
    """Parse a requests/allocatable map; every resource is accounted, extended ones included."""
    return {str(name): parse_quantity(value, str(name)) for name, value in (raw or {}).items()}


def _container_requests(container: Obj) -> dict[str, int]:
    """Requests of one container; limits stand in for missing requests as the API server defaults them."""
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return _resource_map(merged)


def pod_requests(pod: Obj) -> dict[str, int]:
    """Effective requests: max(sum of containers, each init container) plus overhead (the kube-scheduler rule)."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or ():
        for name, amount in _container_requests(container).items():
            total[name] = total.get(name, 0) + amount
    for init in spec.get("initContainers") or ():
        for name, amount in _container_requests(init).items():
            total[name] = max(total.get(name, 0), amount)
    for name, amount in _resource_map(spec.get("overhead")).items():
        total[name] = total.get(name, 0) + amount
    total.pop(PODS, None)
    return {name: amount for name, amount in sorted(total.items()) if amount}


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


def _weighted(raw: Iterable[Obj]) -> tuple[WeightedPodAffinityTerm, ...]:
    return tuple(
        WeightedPodAffinityTerm(int(t.get("weight", 1)), _pod_term(t.get("podAffinityTerm") or {})) for t in raw
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
            PreferredNodeTerm(int(t.get("weight", 1)), _node_term(t.get("preference") or {}))
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
        labels=_str_map(meta.get("labels")),
        requests=MappingProxyType(pod_requests(pod)),
        anti_affinity=tuple(_pod_term(t) for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ()),
    )


def node_info(node: Obj) -> NodeInfo:
    """A node's allocatable, labels, NoSchedule/NoExecute taints and cordon flag."""
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    allocatable = _resource_map(status.get("allocatable") or status.get("capacity"))
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
