"""Defragmentation plans: which movable gangs, placed again elsewhere, would let a gang fit that fails only because
the free capacity is scattered.

Pure and deterministic like `victims` (a snapshot, the gang, the movable gangs in; a `DefragPlan` or None out), and
`place` is the oracle of every "fits": the gang's placement on the snapshot without the moved gangs' pods, then each
moved gang's placement, whole (every pod it runs now, same constraints), on what is left once the gang is placed.

"Only fragmentation" (`aggregate_room`): the gang does not fit, yet the free GPUs, CPU and memory of the nodes its
filters let through, summed over one domain of its gang-level required topology key (the whole cluster without
one), cover its minimum. When no domain has that much free in aggregate the cluster lacks capacity, moving gangs
cannot make any, and there is no plan (freeing capacity is preemption's job).

The search: `select_victims` (preemption's CP-SAT model per candidate domain, checked by `place`) is asked for the
fewest movable gangs, then fewest GPUs, whose removal lets the gang fit, every candidate counted below the gang so
that its priority tier plays no part. That is a relaxation (it does not ask the moved gangs to fit again), so each
answer is checked by placing the moved gangs again; when that fails, the search continues Lawler-style, with one
gang of the rejected set banned per branch, cheapest known set first. The work is bounded, deterministically (no
clock): at most `max_searches` victim searches (each bounded as preemption's: at most `max_domains` CP-SAT solves
of `max_deterministic_time` deterministic seconds and a bounded number of `place` calls) and at most
`max_checks` re-placement checks (one `place` call per moved gang each); at most `max_candidates` movable gangs
are offered (those that would leave a node emptiest), and plans moving more than `max_moved` gangs are not
considered. Sets that contain a rejected set plus more gangs (a chain of moves) are not explored.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol, TypeVar

import numpy as np

from grove_sched.gangs import GangKey
from grove_sched.model import CPU, GPU, MEMORY, BoundPod, GangRequest, Placement, PlacementOptions
from grove_sched.placement import InvalidGang, SelectorError, Snapshot, assumed_pods, build_problem, place
from grove_sched.preemption.victims import PreemptionOptions, VictimGang, fits, select_victims

__all__ = [
    "DefragOptions",
    "DefragPlan",
    "Held",
    "Movable",
    "aggregate_room",
    "nearest_to_room",
    "plan_defragmentation",
    "replace_moved",
]

_AGGREGATE = (GPU, CPU, MEMORY)


@dataclass(frozen=True, slots=True)
class Movable:
    """A running gang that may be moved: its bound pods, and the request that places all of them again."""

    key: GangKey
    pods: tuple[BoundPod, ...]
    request: GangRequest
    """Every pod in `pods`, each PodGroup's minimum = its running pods (a move must not shrink the gang)."""

    @property
    def gpus(self) -> int:
        """GPUs its pods request (what moving it costs)."""
        return sum(int(pod.requests.get(GPU, 0)) for pod in self.pods)


@dataclass(frozen=True, slots=True)
class DefragPlan:
    """The gangs to move (by key), where the gang then goes, where each moved gang goes, and the work it took."""

    moved: tuple[Movable, ...]
    placement: Placement
    moves: Mapping[GangKey, Placement]
    domain: str
    """The domain `select_victims` freed ("cluster" without a required key)."""
    searches: int
    checks: int

    @property
    def gpus(self) -> int:
        """GPUs the moved gangs hold."""
        return sum(m.gpus for m in self.moved)


@dataclass(frozen=True, slots=True)
class DefragOptions:
    """The search's bounds (every one deterministic, so the same input always gives the same plan)."""

    placement: PlacementOptions = field(default_factory=PlacementOptions)
    max_searches: int = 4
    """Victim searches (`select_victims` calls): the first, and one per banned gang of a rejected set."""
    max_checks: int = 8
    """Candidate sets whose moved gangs are placed again (each costs one `place` call per moved gang)."""
    max_candidates: int = 16
    """Movable gangs offered to the search: those whose move would leave their nodes emptiest first."""
    max_moved: int = 8
    """Plans moving more gangs are not considered."""
    max_domains: int = 4
    """Candidate domains of the gang's required key each victim search models."""
    max_deterministic_time: float = 0.1
    """CP-SAT budget per modelled domain, deterministic seconds."""


def aggregate_room(snapshot: Snapshot, request: GangRequest, options: PlacementOptions) -> str | None:
    """The first domain of the gang's required key ("cluster" without one) whose free GPUs, CPU and memory, summed
    over the nodes the gang's filters let through, cover its minimum; None when no domain has that much, or when
    some required scope of the gang (a role's rack) has no domain with room for its own minimum."""
    try:
        problem = build_problem(snapshot, request, options)
    except (InvalidGang, SelectorError):
        return None
    need = (problem.internal_min[:, None] * problem.req).sum(axis=0)
    columns = [c for c in (snapshot.resource_index(r) for r in _AGGREGATE) if c is not None and need[c] > 0]
    usable = np.logical_or.reduce(np.stack(problem.masks)) if problem.masks else np.ones(snapshot.num_nodes, bool)
    free = np.maximum(snapshot.free, 0)[usable]
    for scope in problem.required:  # every required scope (a role's rack, say) needs one domain with room for it
        groups = list(scope.groups)
        scope_need = (problem.internal_min[groups, None] * problem.req[groups]).sum(axis=0)
        if not _some_domain_holds(free, scope.domains[usable], scope_need, columns):
            return None
    key = request.topology.required_key
    if not key:
        return "cluster" if all(int(free[:, c].sum()) >= int(need[c]) for c in columns) else None
    domains = snapshot.domains(key)[usable]
    for d, name in enumerate(snapshot.domain_names(key)):
        inside = free[domains == d]
        if inside.size and all(int(inside[:, c].sum()) >= int(need[c]) for c in columns):
            return name
    return None


def _some_domain_holds(free: np.ndarray, domains: np.ndarray, need: np.ndarray, columns: list[int]) -> bool:
    """Whether the nodes of one domain (codes per node, -1: none) have `need` free in aggregate."""
    labelled = domains >= 0
    if not labelled.any():
        return False
    codes = domains[labelled]
    ok = np.ones(int(codes.max()) + 1, dtype=bool)
    for c in columns:
        ok &= np.bincount(codes, weights=free[labelled, c], minlength=ok.size) >= need[c]
    return bool(ok.any())


def replace_moved(
    snapshot: Snapshot, request: GangRequest, placement: Placement, moved: Sequence[Movable], options: PlacementOptions
) -> dict[GangKey, Placement] | None:
    """Each moved gang's new placement (largest first, then by key), on the snapshot without the moved pods and
    with the gang placed; None when one of them does not fit whole again."""
    current = snapshot.without(f"{p.namespace}/{p.name}" for m in moved for p in m.pods)
    current = current.with_assumed(assumed_pods(request, placement))
    moves: dict[GangKey, Placement] = {}
    for gang in sorted(moved, key=lambda m: (-m.gpus, m.key)):
        result = place(current, gang.request, options)
        wanted = sum(group.min_replicas for group in gang.request.groups)
        if not isinstance(result, Placement) or len(result.assignments) < wanted:
            return None
        current = current.with_assumed(assumed_pods(gang.request, result))
        moves[gang.key] = result
    return moves


def plan_defragmentation(
    snapshot: Snapshot, request: GangRequest, movable: Sequence[Movable], options: DefragOptions | None = None
) -> DefragPlan | None:
    """The cheapest plan found (fewest moved gangs, then fewest GPUs moved; among equal ones as the victim search
    breaks ties) within the bounds, or None: the gang fits already, the cluster lacks capacity in aggregate, or no
    checked set re-places."""
    opts = options or DefragOptions()
    if fits(snapshot, request, (), opts.placement) is not None:
        return None
    if aggregate_room(snapshot, request, opts.placement) is None:
        return None
    by_key = {gang.key: gang for gang in nearest_to_room(snapshot, movable, opts.max_candidates)}
    if not by_key:
        return None
    victims = [VictimGang(key, 0, gang.pods) for key, gang in by_key.items()]
    probe = replace(request, priority=1)  # every movable gang below it: no priority tier in the cost
    search_options = PreemptionOptions(
        placement=opts.placement, max_domains=opts.max_domains, max_deterministic_time=opts.max_deterministic_time
    )
    heap: list[tuple[tuple[int, int, tuple[GangKey, ...]], frozenset[GangKey], Placement, str]] = []
    searched: set[frozenset[GangKey]] = set()
    queued: set[tuple[GangKey, ...]] = set()

    def search(banned: frozenset[GangKey]) -> None:
        if len(searched) >= opts.max_searches or banned in searched:
            return
        searched.add(banned)
        allowed = [v for v in victims if v.key not in banned]
        selection = select_victims(snapshot, probe, allowed, search_options) if allowed else None
        if selection is None:
            return
        keys = tuple(sorted(v.key for v in selection.victims))
        if keys in queued or len(keys) > opts.max_moved:
            return
        queued.add(keys)
        cost = (len(keys), sum(by_key[k].gpus for k in keys), keys)
        heapq.heappush(heap, (cost, banned, selection.placement, selection.domain))

    search(frozenset())
    checks = 0
    while heap and checks < opts.max_checks:
        (_, _, keys), banned, placement, domain = heapq.heappop(heap)
        moved = tuple(by_key[k] for k in keys)
        checks += 1
        moves = replace_moved(snapshot, request, placement, moved, opts.placement)
        if moves is not None:
            return DefragPlan(moved, placement, MappingProxyType(moves), domain, len(searched), checks)
        for key in keys:
            search(banned | {key})
    return None


class Held(Protocol):
    """A running gang as `nearest_to_room` ranks it (a `Movable`, a `VictimGang`)."""

    @property
    def key(self) -> GangKey: ...

    @property
    def pods(self) -> tuple[BoundPod, ...]: ...

    @property
    def gpus(self) -> int: ...


_H = TypeVar("_H", bound=Held)


def nearest_to_room(snapshot: Snapshot, movable: Sequence[_H], limit: int) -> list[_H]:
    """At most `limit` movable gangs (one per key, with pods), those whose move would leave one of their nodes
    with the largest share of its GPUs free first (a node it empties first), then fewer GPUs, then by key: the
    search's work grows with the candidates, and a gang on a busy node frees nothing whole."""
    gpu = snapshot.resource_index(GPU)
    ranked: list[tuple[float, int, GangKey, _H]] = []
    seen: set[GangKey] = set()
    for gang in movable:
        if not gang.pods or gang.key in seen:
            continue
        seen.add(gang.key)
        share = 0.0
        if gpu is not None:
            held: dict[int, int] = {}
            for pod in gang.pods:
                row = snapshot.node_index.get(pod.node)
                if row is not None:
                    held[row] = held.get(row, 0) + int(pod.requests.get(GPU, 0))
            for row, gpus in held.items():
                total = int(snapshot.allocatable[row, gpu])
                if total > 0:
                    share = max(share, (max(int(snapshot.free[row, gpu]), 0) + gpus) / total)
        ranked.append((-share, gang.gpus, gang.key, gang))
    ranked.sort(key=lambda item: item[:3])
    return sorted((item[3] for item in ranked[:limit]), key=lambda m: m.key)
