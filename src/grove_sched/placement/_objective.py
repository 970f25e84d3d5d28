"""The single definition of placement cost, shared by greedy ranking, the CP-SAT model and reporting.

Tiers are lexicographic: each weight exceeds the largest possible total of every tier below it (computed from
this problem's own bounds), so a lower tier can never outweigh a higher one and the sum stays inside int64.
Tiers, most important first: missing extra pods, extra preferred domains touched, empty racks opened, empty
nodes opened, GPUs stranded on touched nodes, missed preference weight (node / pod affinity preferences).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grove_sched.model import ObjectiveBreakdown
from grove_sched.placement._problem import Problem
from grove_sched.placement._snapshot import CodeArray, IntArray

_INT64_SAFE = 2**62


@dataclass(frozen=True, slots=True)
class Weights:
    """Weights of the six tiers (index 0 = most important)."""

    tiers: tuple[int, int, int, int, int, int]


def weights(problem: Problem) -> Weights:
    """Lexicographic weights from upper bounds of each tier on this problem."""
    usable = problem.maxpods.max(axis=0) > 0
    total_pods = int(problem.replicas.sum())
    ub6 = int((problem.replicas * problem.pref_cost.max(axis=1, initial=0)).sum())
    ub5 = int(np.maximum(node_gpus(problem), 0)[usable].sum())
    ub4 = int((problem.snapshot.empty & usable).sum())
    ub3 = int(problem.empty_racks.sum())
    ub2 = total_pods * len(problem.preferred)
    w6 = 1
    w5 = w6 * (ub6 + 1)
    w4 = w5 * (ub5 + 1)
    w3 = w4 * (ub4 + 1)
    w2 = w3 * (ub3 + 1)
    w1 = w2 * (ub2 + 1)
    if w1 * (total_pods + 1) >= _INT64_SAFE:
        raise OverflowError("objective weights overflow int64; the gang or cluster is too large for one model")
    return Weights((w1, w2, w3, w4, w5, w6))


def node_gpus(problem: Problem) -> IntArray:
    """Free GPUs per node (zeros when no GPU resource exists)."""
    if problem.gpu is None:
        return np.zeros(problem.snapshot.num_nodes, dtype=np.int64)
    result: IntArray = problem.snapshot.free[:, problem.gpu]
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
    stranded = 0
    if problem.gpu is not None:
        used_gpu = (counts * problem.req[:, problem.gpu][:, None]).sum(axis=0)
        stranded = int((node_gpus(problem)[idx] - used_gpu)[touched].sum())
    missed = int((counts * problem.pref_cost[:, idx]).sum())
    values = (missing, violations, racks, empty_nodes, stranded, missed)
    weighted = sum(v * t for v, t in zip(values, w.tiers, strict=True))
    return ObjectiveBreakdown(
        missing_extra_pods=missing,
        preferred_domain_violations=violations,
        empty_racks_opened=racks,
        empty_nodes_opened=empty_nodes,
        stranded_gpus=stranded,
        missed_preference_weight=missed,
        weighted=weighted,
    )


def lower_bounds(problem: Problem, domains: CodeArray, w: Weights) -> IntArray:
    """A valid lower bound on the weighted cost of any placement confined to each domain (-1 = no domain).

    It counts pods that cannot fit at all (tier 1), an empty rack that must be opened when the domain's usable
    nodes all sit in empty racks (tier 3) and, per group, the empty nodes needed once non-empty nodes are full
    (tier 4). Unplaceable domains get a huge bound. Used to score answers when not every domain was modelled.
    """
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
    bound = missing * w.tiers[0] + racks * w.tiers[2] + opened * w.tiers[3]
    result: IntArray = np.where(impossible, np.iinfo(np.int64).max, bound)
    return result
