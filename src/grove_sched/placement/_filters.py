"""Per-group node filtering (stage 1), with kube-scheduler style counting of why nodes were rejected.

Every filter is a boolean vector over nodes. The first failing filter of each node is counted so that an
Unschedulable message reads like kube-scheduler's "0/64 nodes are available: 40 Insufficient nvidia.com/gpu, ...".
Inter-pod rules against bound pods are resolved here to node masks via topology domains; rules among the gang's
own pods are returned for the solver.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from grove_sched.model import PODS, PodAffinityTerm, PodGroup
from grove_sched.placement._selectors import (
    label_selector_mask,
    match_labels_mask,
    node_terms_mask,
    selector_matches,
    untolerated_taints,
)
from grove_sched.placement._snapshot import BoolArray, IntArray, Snapshot


@dataclass(frozen=True, slots=True)
class GroupFilter:
    """Result of filtering nodes for one PodGroup template."""

    mask: BoolArray
    rejected: Counter[str]
    self_affinity: tuple[PodAffinityTerm, ...]
    pref_cost: IntArray
    static: BoolArray
    """Nodes the group may use whatever runs on them (not cordoned, taints tolerated, selectors and node affinity
    met): removing pods, as preemption would, can open no other node."""


def filter_group(snapshot: Snapshot, group: PodGroup, namespace: str) -> GroupFilter:
    """Nodes a pod of `group` may use ignoring resources, plus the reasons other nodes were rejected."""
    n = snapshot.num_nodes
    remaining = np.ones(n, dtype=np.bool_)
    rejected: Counter[str] = Counter()

    def apply(ok: BoolArray, reason: str) -> None:
        nonlocal remaining
        dropped = remaining & ~ok
        count = int(dropped.sum())
        if count:
            rejected[reason] += count
        remaining = remaining & ok

    apply(~snapshot.unschedulable, "node(s) were unschedulable")
    taint_mask = untolerated_taints(snapshot, group.tolerations)
    if taint_mask.any():
        for idx in np.flatnonzero(remaining & taint_mask)[:1]:
            taint = next(t for t in snapshot.taints if snapshot.taint_matrix[idx, snapshot.taints.index(t)])
            label = f"{{{taint.key}{'=' + taint.value if taint.value else ''}: {taint.effect}}}"
            apply(~taint_mask, f"node(s) had untolerated taint {label}")
    node_ok = match_labels_mask(snapshot.node_labels, group.node_selector) & node_terms_mask(
        snapshot, group.required_node_terms
    )
    apply(node_ok, "node(s) didn't match Pod's node affinity/selector")
    static = remaining
    apply(~_bound_anti_affinity(snapshot, group, namespace), "node(s) didn't match pod anti-affinity rules")
    affinity_ok, self_terms = _bound_affinity(snapshot, group, namespace)
    apply(affinity_ok, "node(s) didn't match pod affinity rules")
    return GroupFilter(remaining, rejected, self_terms, _preference_cost(snapshot, group, namespace), static)


def max_pods(snapshot: Snapshot, mask: BoolArray, req: IntArray, cap: int, room: IntArray | None = None) -> IntArray:
    """`min_r floor(room_r / req_r)` over requested resources on allowed nodes, clipped to `cap`; the room is the
    free capacity unless given (the allocatable asks what would fit if the nodes were empty)."""
    requested = np.flatnonzero(req > 0)
    free = np.maximum((snapshot.free if room is None else room)[:, requested], 0)
    fits = (free // req[requested]).min(axis=1) if requested.size else np.full(snapshot.num_nodes, cap)
    result: IntArray = np.where(mask, np.minimum(fits, cap), 0).astype(np.int64)
    return result


def insufficient(snapshot: Snapshot, mask: BoolArray, req: IntArray) -> Counter[str]:
    """Per resource, how many otherwise allowed nodes lack room for one pod (a node may count twice)."""
    short = (snapshot.free < req[None, :]) & mask[:, None]
    counts: Counter[str] = Counter()
    for col, name in enumerate(snapshot.resources):
        total = int(short[:, col].sum())
        if total:
            counts["Too many pods" if name == PODS else f"Insufficient {name}"] += total
    return counts


def _namespaces(term: PodAffinityTerm, default: str) -> tuple[str, ...]:
    return term.namespaces or (default,)


def _bound_matches(snapshot: Snapshot, term: PodAffinityTerm, namespace: str) -> BoolArray:
    """Bound pod rows matched by a term (selector and namespaces; departed rows never match)."""
    if not len(snapshot.pods):
        return np.zeros(0, dtype=np.bool_)
    ns_ok = snapshot.namespace_mask(_namespaces(term, namespace))
    return label_selector_mask(snapshot.pod_labels, term.selector) & ns_ok & snapshot.pod_alive


def _domains_holding(snapshot: Snapshot, key: str, pods: BoolArray) -> BoolArray:
    """Nodes whose `key` domain holds at least one of the given bound pods."""
    dom = snapshot.domains(key)
    if not pods.any():
        return np.zeros(snapshot.num_nodes, dtype=np.bool_)
    held = np.unique(dom[snapshot.pod_node[pods]])
    held = held[held >= 0]
    return np.isin(dom, held) & (dom >= 0)


def _bound_anti_affinity(snapshot: Snapshot, group: PodGroup, namespace: str) -> BoolArray:
    """Nodes excluded by the group's anti-affinity to bound pods, or by bound pods' anti-affinity to the group."""
    banned = np.zeros(snapshot.num_nodes, dtype=np.bool_)
    for term in group.pod_anti_affinity:
        banned |= _domains_holding(snapshot, term.topology_key, _bound_matches(snapshot, term, namespace))
    for i in snapshot.anti_affinity_pods:
        pod = snapshot.pods[int(i)]
        for term in pod.anti_affinity:
            if namespace in _namespaces(term, pod.namespace) and selector_matches(term.selector, group.labels):
                dom = snapshot.domains(term.topology_key)
                own = dom[snapshot.pod_node[i]]
                if own >= 0:
                    banned |= dom == own
    return banned


def _bound_affinity(
    snapshot: Snapshot, group: PodGroup, namespace: str
) -> tuple[BoolArray, tuple[PodAffinityTerm, ...]]:
    """Nodes allowed by required pod affinity; terms satisfiable only by the gang itself are returned."""
    ok = np.ones(snapshot.num_nodes, dtype=np.bool_)
    self_terms: list[PodAffinityTerm] = []
    for term in group.pod_affinity:
        matches = _bound_matches(snapshot, term, namespace)
        if matches.size and matches.any():
            ok &= _domains_holding(snapshot, term.topology_key, matches)
        else:
            self_terms.append(term)
    return ok, tuple(self_terms)


def _preference_cost(snapshot: Snapshot, group: PodGroup, namespace: str) -> IntArray:
    """Per node, the preference weight a pod of the group would miss there (0 = every preference met)."""
    cost = np.zeros(snapshot.num_nodes, dtype=np.int64)
    for pref in group.preferred_node_terms:
        cost += np.where(node_terms_mask(snapshot, (pref.term,)), 0, pref.weight)
    for weighted in group.preferred_pod_affinity:
        near = _domains_holding(
            snapshot, weighted.term.topology_key, _bound_matches(snapshot, weighted.term, namespace)
        )
        cost += np.where(near, 0, weighted.weight)
    for weighted in group.preferred_pod_anti_affinity:
        near = _domains_holding(
            snapshot, weighted.term.topology_key, _bound_matches(snapshot, weighted.term, namespace)
        )
        cost += np.where(near, weighted.weight, 0)
    return cost
