"""The single definition of placement cost, shared by greedy ranking, the CP-SAT model and reporting.

Tiers are lexicographic: each weight exceeds the largest possible total of every tier below it (computed from
this problem's own bounds), so a lower tier can never outweigh a higher one and the sum stays inside int64.
Tiers, most important first (`TIERS`):

1. missing extra pods (pods above each group's minimum that were not placed);
2. extra preferred domains touched;
3. empty racks opened;
4. free GPUs in the chosen required domains ("room": domain-level best fit per required scope, i.e. fill the
   fullest rack that fits; measured before placement over every labelled node of the domain);
5. fragmented GPUs: free GPUs left on touched nodes that the cluster's typical GPU pod could not use for lack
   of CPU or memory (`_fragment`);
6. empty nodes opened;
7. GPUs stranded on touched nodes (node-level best fit);
8. missed preference weight (node / pod affinity preferences).

Tier 5 sits above empty nodes because on the openb trace, where nodes run out of CPU before GPUs, it was worth
more GPUs ranked there (6,177 vs 6,184 GPUs placed, seed 0); on clusters whose nodes have CPU and memory to spare
it is 0 everywhere and changes nothing.

Tier 4 is what makes a sequence of gangs pack well. Without it the exact solver chose, per gang, whichever rack
in the top domains gave the fewest stranded GPUs; that spread every gang over many racks and used up the racks
that could still host a large role (on the disaggregated benchmark, seed 1, the racks able to host two 6-GPU pods
fell to 0 by gang 130, while rack-level best fit kept 8). Ranking it above empty nodes matches the greedy
baselines, which fill the fullest rack even if that opens a node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grove_sched.model import ObjectiveBreakdown
from grove_sched.placement._problem import Problem
from grove_sched.placement._snapshot import BoolArray, CodeArray, IntArray

_INT64_SAFE = 2**62

TIERS = ("missing", "violations", "racks", "room", "fragmented", "empty", "stranded", "missed")


@dataclass(frozen=True, slots=True)
class Weights:
    """Weight of every tier, in `TIERS` order (most important first), plus each required scope's per-domain room
    (tier 4's prices, computed once per gang because every evaluation needs them)."""

    tiers: tuple[int, ...]
    rooms: tuple[IntArray, ...] = ()

    def of(self, name: str) -> int:
        """The weight of one tier by name."""
        return self.tiers[TIERS.index(name)]


def weights(problem: Problem) -> Weights:
    """Lexicographic weights from upper bounds of each tier on this problem."""
    usable = problem.maxpods.max(axis=0) > 0
    total_pods = int(problem.replicas.sum())
    rooms = tuple(domain_room(problem, scope.domains) for scope in problem.required)
    upper = {
        "missing": total_pods,
        "violations": total_pods * len(problem.preferred),
        "racks": int(problem.empty_racks.sum()),
        "empty": int((problem.snapshot.empty & usable).sum()),
        "room": sum(int(room.max(initial=0)) for room in rooms),
        "fragmented": int(np.maximum(node_gpus(problem), 0)[problem.fragile].sum())
        if problem.fragile is not None
        else 0,
        "stranded": int(np.maximum(node_gpus(problem), 0)[usable].sum()),
        "missed": int((problem.replicas * problem.pref_cost.max(axis=1, initial=0)).sum()),
    }
    result: list[int] = []
    scale = 1
    for name in reversed(TIERS):
        result.append(scale)
        scale *= upper[name] + 1
    if scale >= _INT64_SAFE:
        raise OverflowError("objective weights overflow int64; the gang or cluster is too large for one model")
    return Weights(tuple(reversed(result)), rooms)


def node_gpus(problem: Problem) -> IntArray:
    """Free GPUs per node (zeros when no GPU resource exists)."""
    if problem.gpu is None:
        return np.zeros(problem.snapshot.num_nodes, dtype=np.int64)
    result: IntArray = problem.snapshot.free[:, problem.gpu]
    return result


def domain_room(problem: Problem, domains: CodeArray) -> IntArray:
    """Free GPUs per domain id before placement (labelled nodes only): tier 5 charges a scope its domain's room."""
    labelled = domains >= 0
    count = max(int(domains.max(initial=-1)) + 1, 1)
    gpus = np.maximum(node_gpus(problem), 0)
    result: IntArray = np.bincount(domains[labelled], weights=gpus[labelled], minlength=count).astype(np.int64)
    return result


def evaluate(problem: Problem, counts: IntArray, w: Weights, nodes: IntArray | None = None) -> ObjectiveBreakdown:
    """Cost of a placement given as pods per (internal group, node); `nodes` names the columns if not all."""
    idx = nodes if nodes is not None else np.arange(problem.snapshot.num_nodes)
    touched = counts.sum(axis=0) > 0
    missing = int((problem.replicas - counts.sum(axis=1)).sum())
    violations = 0
    for scope in problem.preferred:
        used = counts[list(scope.groups)].sum(axis=0) > 0
        violations += max(0, int(np.unique(scope.domains[idx[used]]).size) - 1)
    racks = 0
    if problem.racks is not None:
        rack_ids = problem.racks[idx[touched]]
        racks = int(problem.empty_racks[np.unique(rack_ids[rack_ids >= 0])].sum())
    empty_nodes = int(problem.snapshot.empty[idx[touched]].sum())
    room = 0
    for s, scope in enumerate(problem.required):
        used = counts[list(scope.groups)].sum(axis=0) > 0
        ids = np.unique(scope.domains[idx[used]])
        rooms = w.rooms[s] if len(w.rooms) == len(problem.required) else domain_room(problem, scope.domains)
        room += int(rooms[ids[ids >= 0]].sum())
    stranded = fragmented = 0
    if problem.gpu is not None:
        used_gpu = (counts * problem.req[:, problem.gpu][:, None]).sum(axis=0)
        stranded = int((node_gpus(problem)[idx] - used_gpu)[touched].sum())
        if problem.fragile is not None:
            on = idx[touched]
            after = problem.snapshot.free[on] - counts[:, touched].T @ problem.req
            fragmented = int(problem.unusable(after).sum())
    missed = int((counts * problem.pref_cost[:, idx]).sum())
    values = {
        "missing": missing,
        "violations": violations,
        "racks": racks,
        "empty": empty_nodes,
        "room": room,
        "fragmented": fragmented,
        "stranded": stranded,
        "missed": missed,
    }
    weighted = sum(values[name] * t for name, t in zip(TIERS, w.tiers, strict=True))
    return ObjectiveBreakdown(
        missing_extra_pods=missing,
        preferred_domain_violations=violations,
        empty_racks_opened=racks,
        empty_nodes_opened=empty_nodes,
        stranded_gpus=stranded,
        missed_preference_weight=missed,
        weighted=weighted,
        required_domain_free_gpus=room,
        fragmented_gpus=fragmented,
    )


@dataclass(frozen=True, slots=True)
class Floors:
    """Per-domain lower bounds of single tiers for any placement confined to that domain."""

    missing: IntArray
    racks: IntArray
    empty: IntArray
    impossible: BoolArray


def floors(problem: Problem, domains: CodeArray) -> Floors:
    """Cheap per-domain lower bounds (-1 = no domain): pods that cannot fit at all (tier 1), an empty rack that
    must be opened when the domain's usable nodes all sit in empty racks (tier 3) and, per group, the empty nodes
    needed once non-empty nodes are full (tier 4); `impossible` marks domains that cannot hold some minimum."""
    count = max(int(domains.max(initial=-1)) + 1, 1)
    usable = (problem.maxpods.max(axis=0) > 0) & (domains >= 0)
    empty = problem.snapshot.empty
    dom = domains[usable]
    missing = np.zeros(count, dtype=np.int64)
    opened = np.zeros(count, dtype=np.int64)
    impossible = np.zeros(count, dtype=np.bool_)
    for g in range(problem.num_groups):
        mp = problem.maxpods[g, usable]
        slots = np.bincount(dom, weights=mp, minlength=count).astype(np.int64)
        missing += np.maximum(problem.replicas[g] - slots, 0)
        if len(problem.parent_of(problem.parent_names[problem.parent[g]])) > 1:
            continue  # a split group's minimum is shared between sub-groups; no per-group claim
        busy = np.bincount(dom, weights=np.where(empty[usable], 0, mp), minlength=count).astype(np.int64)
        per_empty = np.zeros(count, dtype=np.int64)
        np.maximum.at(per_empty, dom, np.where(empty[usable], mp, 0))
        short = np.maximum(problem.internal_min[g] - busy, 0)
        impossible |= (short > 0) & (per_empty == 0)
        opened = np.maximum(opened, -(-short // np.maximum(per_empty, 1)))
    racks = np.zeros(count, dtype=np.int64)
    if problem.racks is not None and int(problem.internal_min.sum()) > 0:
        rack = problem.racks[usable]
        in_empty_rack = (rack >= 0) & problem.empty_racks[np.maximum(rack, 0)]
        outside = np.bincount(dom, weights=~in_empty_rack, minlength=count)
        racks = ((outside == 0) & (np.bincount(dom, minlength=count) > 0)).astype(np.int64)
    return Floors(missing, racks, opened, impossible)


def lower_bounds(problem: Problem, domains: CodeArray, w: Weights) -> IntArray:
    """A valid lower bound on the weighted cost of any placement confined to each domain (-1 = no domain);
    unplaceable domains get a huge bound. Used as CP-SAT's objective floor and to prove optimality."""
    f = floors(problem, domains)
    bound = f.missing * w.of("missing") + f.racks * w.of("racks") + f.empty * w.of("empty")
    result: IntArray = np.where(f.impossible, np.iinfo(np.int64).max, bound)
    return result


def room_floor(problem: Problem) -> int:
    """A lower bound on tier 5: per required scope whose groups need pods, the least room among the domains whose
    slots can hold the scope's minimum (every feasible placement picks one of them)."""
    total = 0
    for scope in problem.required:
        groups = list(scope.groups)
        need = int(problem.internal_min[groups].sum())
        if need == 0:
            continue
        labelled = scope.domains >= 0
        count = max(int(scope.domains.max(initial=-1)) + 1, 1)
        slots = np.bincount(
            scope.domains[labelled],
            weights=problem.maxpods[np.ix_(np.asarray(groups, dtype=np.int64), np.flatnonzero(labelled))].sum(axis=0),
            minlength=count,
        )
        room = domain_room(problem, scope.domains)
        fits = slots >= need
        total += int(room[fits].min()) if fits.any() else 0
    return total
