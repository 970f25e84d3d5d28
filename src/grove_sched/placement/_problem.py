"""Normalise a GangRequest against a Snapshot into the arrays every solver stage shares.

Validation (malformed gangs), splitting heterogeneous groups into homogeneous sub-groups, resolving every
topology constraint into a `Scope` over node domain arrays, and stage-1 filtering all happen here once, so the
greedy, CP-SAT and decoding stages see one consistent, purely numeric problem.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grove_sched.model import (
    CPU,
    GPU,
    MEMORY,
    GangRequest,
    LabelSelector,
    PlacementOptions,
    PodGroup,
    TopologyConstraint,
)
from grove_sched.placement._filters import filter_group, insufficient, max_pods
from grove_sched.placement._fragment import Profile, may_fragment, unusable_gpus
from grove_sched.placement._levels import Hierarchy, build_hierarchy
from grove_sched.placement._selectors import selector_matches
from grove_sched.placement._snapshot import BoolArray, CodeArray, IntArray, Snapshot


class InvalidGang(ValueError):
    """The gang itself is malformed; the message says what to fix."""


@dataclass(frozen=True, slots=True)
class Scope:
    """Groups that must (required) or should (preferred) share one domain of `key`.

    `level` is the key's level in the problem's hierarchy and `chain` the domains of that level and every broader
    one, broadest first (`domains` is the last): a preferred scope that cannot fit one domain of its level falls
    back to one domain of the next broader level. A required scope's chain is its own level only (its parents'
    room as a tie-breaker cost GPUs on the benchmark sequences). For preferred scopes a node lacking a label counts
    as a domain of its own.
    """

    name: str
    groups: tuple[int, ...]
    key: str
    domains: CodeArray
    level: int = -1
    chain: tuple[CodeArray, ...] = ()
    chain_levels: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class AntiRule:
    """Required anti-affinity among the gang's pods: a pod of `group` shares no `key` domain with `members`."""

    group: int
    members: tuple[int, ...]
    key: str
    domains: CodeArray
    per_node: bool


@dataclass(frozen=True, slots=True)
class Problem:
    """The normalised placement problem (internal groups are homogeneous sub-groups of PodGroups)."""

    snapshot: Snapshot
    gang: GangRequest
    names: tuple[str, ...]
    parent: tuple[int, ...]
    parent_names: tuple[str, ...]
    parent_min: tuple[int, ...]
    pods: tuple[tuple[str, ...], ...]
    req: IntArray
    replicas: IntArray
    maxpods: IntArray
    pref_cost: IntArray
    required: tuple[Scope, ...]
    preferred: tuple[Scope, ...]
    anti: tuple[AntiRule, ...]
    gpu: int | None
    levels: Hierarchy
    rejected: tuple[Counter[str], ...]
    internal_min: IntArray
    profile: Profile | None = None
    fragile: BoolArray | None = None
    """Nodes where this gang could leave unusable GPUs (`_fragment.may_fragment`); None: nowhere."""
    static: tuple[BoolArray, ...] = ()
    """Per PodGroup, the nodes its pods may use whatever runs there (`GroupFilter.static`)."""
    masks: tuple[BoolArray, ...] = ()
    """Per internal group, the nodes its filters let through (resources aside)."""
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """Values derived from the problem alone (bound rows per level), computed once per placement."""

    def reasons(self, g: int) -> Counter[str]:
        """Why nodes cannot take a pod of internal group g, kube-scheduler style (counted only when a message
        needs them: most placements never do)."""
        found = self.memo.get(("reasons", g))
        if found is None:
            found = Counter(self.rejected[g])
            if self.masks:
                found.update(insufficient(self.snapshot, self.masks[g], self.req[g]))
            self.memo[("reasons", g)] = found
        result: Counter[str] = found
        return result

    @property
    def usable(self) -> BoolArray:
        """Nodes some group can use."""
        found = self.memo.get("usable")
        if found is None:
            found = self.memo["usable"] = self.maxpods.max(axis=0) > 0
        result: BoolArray = found
        return result

    @property
    def whole(self) -> CodeArray:
        """Every node in one domain (the whole cluster as a level)."""
        found = self.memo.get("whole")
        if found is None:
            found = self.memo["whole"] = np.zeros(self.snapshot.num_nodes, dtype=np.int32)
        result: CodeArray = found
        return result

    @property
    def num_groups(self) -> int:
        """Number of internal (homogeneous) groups."""
        return len(self.names)

    def unusable(self, free: IntArray) -> IntArray:
        """Free GPUs per row of free vectors that the snapshot's typical GPU pod could not use (tier
        "fragmented"); zeros without a GPU resource or bound GPU pods."""
        if self.gpu is None or self.fragile is None:
            return np.zeros(free.shape[:-1], dtype=np.int64)
        snap = self.snapshot
        return unusable_gpus(free, self.gpu, snap.resource_index(CPU), snap.resource_index(MEMORY), self.profile)

    def parent_of(self, name: str) -> tuple[int, ...]:
        """Internal groups of a PodGroup name."""
        return tuple(g for g in range(self.num_groups) if self.parent_names[self.parent[g]] == name)


def build_problem(snapshot: Snapshot, gang: GangRequest, options: PlacementOptions) -> Problem:
    """Validate and normalise; raises InvalidGang or SelectorError with an actionable message."""
    _validate(gang)
    names: list[str] = []
    parent: list[int] = []
    pods: list[tuple[str, ...]] = []
    reqs: list[IntArray] = []
    filters = []
    for p, group in enumerate(gang.groups):
        flt = filter_group(snapshot, group, gang.namespace)
        filters.append(flt)
        split = _split(snapshot, group)
        for k, (vec, pod_names) in enumerate(split):
            names.append(group.name if len(split) == 1 else f"{group.name}[{k}]")
            parent.append(p)
            pods.append(pod_names)
            reqs.append(vec)
    req = np.stack(reqs)
    replicas = np.asarray([len(x) for x in pods], dtype=np.int64)
    parent_t = tuple(parent)
    maxpods = np.stack(
        [max_pods(snapshot, filters[parent_t[g]].mask, req[g], int(replicas[g])) for g in range(len(names))]
    )
    pref_cost = np.stack([filters[parent_t[g]].pref_cost for g in range(len(names))])
    rejected = [Counter(filters[parent_t[g]].rejected) for g in range(len(names))]
    subs = {group.name: tuple(g for g in range(len(names)) if parent_t[g] == p) for p, group in enumerate(gang.groups)}
    everything = tuple(range(len(names)))
    wanted: list[tuple[str, tuple[int, ...], str, bool]] = []  # (name, groups, key, required)

    def add(name: str, groups: tuple[int, ...], topo: TopologyConstraint) -> None:
        if topo.required_key:
            wanted.append((name, groups, topo.required_key, True))
        if topo.preferred_key:
            wanted.append((name, groups, topo.preferred_key, False))

    add(f"gang {gang.name}", everything, gang.topology)
    for cfg in gang.group_configs:
        add(f"group config {cfg.name}", tuple(g for name in cfg.group_names for g in subs[name]), cfg.topology)
    for group in gang.groups:
        add(f"group {group.name}", subs[group.name], group.topology)
    for p, group in enumerate(gang.groups):
        for term in group.pod_affinity:
            if term not in filters[p].self_affinity:
                continue
            members = _members(gang, term.selector, term.namespaces, subs)
            if not members:
                raise InvalidGang(
                    f"group {group.name} requires pod affinity to pods that neither exist nor are in the gang"
                )
            groups = tuple(sorted(set(subs[group.name]) | set(members)))
            wanted.append((f"pod affinity of {group.name}", groups, term.topology_key, True))
        for weighted in group.preferred_pod_affinity:
            # Among the gang's own pods a preference is a preferred scope (bound pods are _filters' pref_cost).
            term = weighted.term
            members = _members(gang, term.selector, term.namespaces, subs)
            if members:
                groups = tuple(sorted(set(subs[group.name]) | set(members)))
                if all((g, k) != (groups, term.topology_key) for _, g, k, hard in wanted if not hard):
                    wanted.append((f"preferred pod affinity of {group.name}", groups, term.topology_key, False))
    levels = build_hierarchy(
        snapshot, gang.topology_levels or options.default_levels, {key for _, _, key, _ in wanted}, options.hostname_key
    )
    required = [_scope(levels, name, groups, key, False) for name, groups, key, hard in wanted if hard]
    preferred = [_scope(levels, name, groups, key, True) for name, groups, key, hard in wanted if not hard]
    anti: list[AntiRule] = []
    for group in gang.groups:
        for term in group.pod_anti_affinity:
            members = _members(gang, term.selector, term.namespaces, subs)
            if members:
                dom = snapshot.domains(term.topology_key)
                # every node its own domain (and every node labelled: an unlabelled node is in no domain at all)
                per_node = term.topology_key == options.hostname_key or (_unique(dom) and bool((dom >= 0).all()))
                if per_node:
                    dom = np.arange(snapshot.num_nodes, dtype=np.int32)
                anti.extend(AntiRule(g, members, term.topology_key, dom, per_node) for g in subs[group.name])
    for scope in required:
        missing = scope.domains < 0
        for g in scope.groups:
            lost = int((maxpods[g, missing] > 0).sum())
            if lost:
                rejected[g][f"node(s) lacked topology label {scope.key}"] += lost
            maxpods[g, missing] = 0
    for rule in anti:
        if rule.per_node and rule.group in rule.members:
            maxpods[rule.group] = np.minimum(maxpods[rule.group], 1)
    gpu = snapshot.resource_index(GPU)
    maxpods.flags.writeable = False
    profile = snapshot.gpu_pod_profile if gpu is not None else None
    fragile = None
    if gpu is not None and profile is not None:
        free = snapshot.free
        cpu, memory = snapshot.resource_index(CPU), snapshot.resource_index(MEMORY)
        mask = may_fragment(free, req, maxpods, gpu, cpu, memory, profile) & (maxpods.max(axis=0) > 0)
        fragile = mask if mask.any() else None
    return Problem(
        snapshot=snapshot,
        gang=gang,
        names=tuple(names),
        parent=parent_t,
        parent_names=tuple(g.name for g in gang.groups),
        parent_min=tuple(g.min_replicas for g in gang.groups),
        pods=tuple(pods),
        req=req,
        replicas=replicas,
        maxpods=maxpods,
        pref_cost=pref_cost,
        required=tuple(required),
        preferred=tuple(preferred),
        anti=tuple(anti),
        gpu=gpu,
        levels=levels,
        rejected=tuple(rejected),
        internal_min=_internal_min(gang, parent_t, replicas),
        profile=profile,
        fragile=fragile,
        static=tuple(f.static for f in filters),
        masks=tuple(filters[parent_t[g]].mask for g in range(len(names))),
    )


def _internal_min(gang: GangRequest, parent: tuple[int, ...], replicas: IntArray) -> IntArray:
    """A PodGroup's minimum handed to its sub-groups in order (exact when a group is homogeneous)."""
    left = [g.min_replicas for g in gang.groups]
    result = np.zeros(len(parent), dtype=np.int64)
    for g, p in enumerate(parent):
        result[g] = min(int(replicas[g]), left[p])
        left[p] -= int(result[g])
    return result


def _validate(gang: GangRequest) -> None:
    if not gang.groups:
        raise InvalidGang(f"gang {gang.name} has no pod groups")
    seen_groups: set[str] = set()
    seen_pods: set[str] = set()
    pods = 0
    for group in gang.groups:
        if group.name in seen_groups:
            raise InvalidGang(f"group {group.name} appears twice in gang {gang.name}")
        seen_groups.add(group.name)
        if group.min_replicas < 0:
            raise InvalidGang(f"group {group.name} has negative min replicas {group.min_replicas}")
        if group.min_replicas > len(group.pods):
            raise InvalidGang(f"group {group.name} requires {group.min_replicas} pods but has {len(group.pods)}")
        pods += len(group.pods)
        seen_pods.update(pod.name for pod in group.pods)
        if len(seen_pods) != pods:
            raise InvalidGang(f"pod {_first_duplicate(gang)} appears twice in gang {gang.name}")
        # per-pod overrides are checked one by one; the group's own requests once (not once per pod)
        shared_negative = [name for name, amount in group.requests.items() if amount < 0]
        for pod in group.pods:
            negative = shared_negative if not pod.requests else [n for n, a in pod.requests.items() if a < 0]
            if negative:
                raise InvalidGang(f"pod {pod.name} of group {group.name} requests negative {negative[0]}")
    for cfg in gang.group_configs:
        unknown = [name for name in cfg.group_names if name not in seen_groups]
        if unknown:
            raise InvalidGang(f"group config {cfg.name} names unknown groups {', '.join(unknown)}")


def _first_duplicate(gang: GangRequest) -> str:
    """The first pod name that repeats, in group and pod order (only called when one does)."""
    seen: set[str] = set()
    for group in gang.groups:
        for pod in group.pods:
            if pod.name in seen:
                return pod.name
            seen.add(pod.name)
    return ""


def _split(snapshot: Snapshot, group: PodGroup) -> list[tuple[IntArray, tuple[str, ...]]]:
    """Homogeneous sub-groups (by request vector) in order of their first pod name."""
    if group.pods and all(pod.requests is None for pod in group.pods):  # the usual case, without per-pod work
        vec = _key(snapshot, group, group.requests)
        return [(np.asarray(vec, dtype=np.int64), tuple(sorted(pod.name for pod in group.pods)))]
    by_vec: dict[tuple[int, ...], list[str]] = {}
    shared: tuple[int, ...] | None = None  # the group's vector, computed once for every pod without overrides
    for pod in sorted(group.pods, key=lambda p: p.name):
        if pod.requests is None:
            if shared is None:
                shared = _key(snapshot, group, group.requests)
            key = shared
        else:
            key = _key(snapshot, group, pod.requests)
        by_vec.setdefault(key, []).append(pod.name)
    if not by_vec:
        return [(snapshot.vector(group.requests) if _known(snapshot, group) else snapshot.vector({}), ())]
    return [(np.asarray(vec, dtype=np.int64), tuple(names)) for vec, names in by_vec.items()]


def _key(snapshot: Snapshot, group: PodGroup, requests: Mapping[str, int]) -> tuple[int, ...]:
    """A request map as a hashable vector; a resource no node offers makes the gang invalid."""
    try:
        vec = snapshot.vector(requests)
    except KeyError as err:
        raise InvalidGang(f"group {group.name} requests {err.args[0]}, which no node offers") from None
    return tuple(int(x) for x in vec)


def _known(snapshot: Snapshot, group: PodGroup) -> bool:
    return all(snapshot.resource_index(name) is not None or amount == 0 for name, amount in group.requests.items())


def _members(
    gang: GangRequest, selector: LabelSelector, namespaces: tuple[str, ...], subs: dict[str, tuple[int, ...]]
) -> tuple[int, ...]:
    """Internal groups of the gang whose pod labels a term's selector matches."""
    if namespaces and gang.namespace not in namespaces:
        return ()
    return tuple(g for group in gang.groups if selector_matches(selector, group.labels) for g in subs[group.name])


def _unique(dom: CodeArray) -> bool:
    """Whether every labelled node is its own domain (hostname-like key)."""
    labelled = dom[dom >= 0]
    return bool(labelled.size) and int(np.bincount(labelled).max()) <= 1


def _scope(levels: Hierarchy, name: str, groups: tuple[int, ...], key: str, spread: bool) -> Scope:
    """A scope over `key`'s level of the hierarchy (every scope key is one of its levels); `spread` (preferred
    scopes) gives it the chain of broader levels and unlabelled nodes their own domains."""
    level = levels.index(key)
    assert level is not None  # `build_hierarchy` adds every scope key
    chain_levels = levels.chain(level) if spread else (level,)
    chain = tuple(levels.spread(lv) if spread else levels.domains[lv] for lv in chain_levels)
    return Scope(name, groups, key, chain[-1], level, chain, chain_levels)
