"""Stage 2: candidate domains at the deciding level, pruned by a necessary aggregate check.

The deciding level is the gang's required key (hard: the gang must fit one domain), else its preferred key (soft:
a domain of that level that holds the whole gang is tried first, then one of each broader level of the hierarchy
in turn, then the whole cluster), else the narrowest level of the hierarchy above the hosts (soft: one such domain
first, the whole cluster otherwise). The aggregate check is one bincount per group; a domain failing it cannot
hold the gang, which also yields the "best domain" numbers for Unschedulable reasons.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grove_sched.model import GPU, PODS
from grove_sched.placement._filters import max_pods
from grove_sched.placement._problem import Problem
from grove_sched.placement._snapshot import CodeArray, IntArray


@dataclass(frozen=True, slots=True)
class Level:
    """The deciding level: node → domain id (-1 = not a candidate) and whether one domain is mandatory."""

    key: str | None
    domains: CodeArray
    names: tuple[str, ...]
    hard: bool
    index: int = -1
    """The level in the problem's hierarchy (-1: the whole cluster)."""


@dataclass(frozen=True, slots=True)
class Candidates:
    """Domains that pass the aggregate check, ordered tightest first, and per-group slot totals."""

    level: Level
    ids: tuple[int, ...]
    slots: IntArray
    reasons: tuple[str, ...]


def deciding_level(problem: Problem) -> Level:
    """Pick the level whose domains are enumerated first."""
    gang = problem.gang.topology
    levels = problem.levels
    if gang.required_key:
        index = levels.index(gang.required_key)
        assert index is not None  # every scope key is a level
        return _level(problem, index, True)
    if gang.preferred_key:
        index = levels.index(gang.preferred_key)
        assert index is not None
        return _level(problem, index, False)
    if levels.grouping:
        return _level(problem, levels.grouping[-1], False)
    return whole_cluster(problem)


def broader_level(problem: Problem, level: Level) -> Level | None:
    """The next level to try when no domain of a soft `level` holds the gang: for the gang's preferred level its
    parent (KAI's fallback to a higher-level domain), then the whole cluster; None after the whole cluster."""
    if level.key is None:
        return None
    levels = problem.levels
    if problem.gang.topology.preferred_key and level.index >= 0 and levels.parent[level.index] >= 0:
        return _level(problem, levels.parent[level.index], False)
    return whole_cluster(problem)


def whole_cluster(problem: Problem) -> Level:
    """The whole cluster as one soft domain."""
    return Level(None, problem.whole, ("cluster",), False)


def _level(problem: Problem, index: int, hard: bool) -> Level:
    levels = problem.levels
    return Level(levels.keys[index], levels.domains[index], levels.names[index], hard, index)


def candidates(problem: Problem, level: Level) -> Candidates:
    """Domains where every group's slots and the gang's free resources cover the minimum demand."""
    labelled = level.domains >= 0
    if not labelled.any():
        return Candidates(
            level, (), np.zeros((problem.num_groups, 0), np.int64), (f"topology key {level.key} is carried by no node",)
        )
    count = max(int(level.domains.max()) + 1, len(level.names))
    usable = np.flatnonzero(labelled & problem.usable)  # only these nodes can hold a pod: the rest adds nothing
    dom = level.domains[usable]
    slots = np.stack(
        [np.bincount(dom, weights=problem.maxpods[g, usable], minlength=count) for g in range(problem.num_groups)]
    ).astype(np.int64)
    ok = np.ones(count, dtype=np.bool_)
    for p in range(len(problem.parent_names)):
        subs = [g for g in range(problem.num_groups) if problem.parent[g] == p]
        ok &= slots[subs].sum(axis=0) >= problem.parent_min[p]
    demand = (problem.req * problem.internal_min[:, None]).sum(axis=0)
    for r in np.flatnonzero(demand > 0):
        total = np.bincount(dom, weights=np.maximum(problem.snapshot.free[usable, r], 0), minlength=count)
        ok &= total >= demand[r]
    tight = _room(problem, level, count)
    cover = _exact_fit_cover(problem, level.domains, count)
    rank = np.empty(len(level.names), dtype=np.int64)
    rank[np.argsort(np.asarray(level.names, dtype=object), kind="stable")] = np.arange(len(level.names))
    found = np.flatnonzero(ok)
    ranked = np.full(count, len(level.names), dtype=np.int64)
    ranked[: rank.size] = rank[:count]
    # tightest first: most exact-fit minimum pods, then fewest free GPUs, then name and id
    order = found[np.lexsort((found, ranked[found], tight[found], -cover[found]))]
    ids = tuple(int(d) for d in order)
    reasons = () if ids else _explain(problem, level, slots)
    return Candidates(level, ids, slots, reasons)


def _room(problem: Problem, level: Level, count: int) -> IntArray:
    """Free GPUs per domain (every labelled node of it), the tightness candidates are ranked by."""
    if level.index >= 0:
        room: IntArray = problem.levels.room[level.index]
        if room.size >= count:
            return room[:count]
    labelled = level.domains >= 0
    if problem.gpu is None:
        return np.zeros(count, dtype=np.int64)
    free = np.maximum(problem.snapshot.free[labelled, problem.gpu], 0)
    result: IntArray = np.bincount(level.domains[labelled], weights=free, minlength=count).astype(np.int64)
    return result


def _exact_fit_cover(problem: Problem, domains: CodeArray, count: int) -> IntArray:
    """Per domain, how many minimum pods fit on nodes that pods of their GPU size would fill exactly (no GPU left).

    Ranking domains by this first lets greedy (which only visits the first `max_greedy_domains`) find
    zero-waste domains early, where plain tightness would visit tight-but-fragmented domains first.
    """
    cover = np.zeros(count, dtype=np.int64)
    gpu = problem.gpu
    if gpu is None:
        return cover
    labelled = domains >= 0
    dom = domains[labelled]
    free_gpu = np.maximum(problem.snapshot.free[labelled, gpu], 0)
    sizes = problem.req[:, gpu]
    for size in sorted({int(x) for x in sizes if x > 0}):
        same = np.flatnonzero(sizes == size)
        room = problem.maxpods[np.ix_(same, np.flatnonzero(labelled))].sum(axis=0)
        fills = (free_gpu > 0) & (free_gpu % size == 0) & (room * size >= free_gpu)
        slots = np.bincount(dom, weights=np.where(fills, free_gpu // size, 0), minlength=count).astype(np.int64)
        cover += np.minimum(slots, int(problem.internal_min[same].sum()))
    return cover


def _explain(problem: Problem, level: Level, slots: IntArray) -> tuple[str, ...]:
    """Why no domain passes: per group the best domain's slots, else a joint shortage."""
    where = f"{level.key} domain" if level.key else "node set"
    reasons: list[str] = []
    for p, name in enumerate(problem.parent_names):
        subs = [g for g in range(problem.num_groups) if problem.parent[g] == p]
        total = slots[subs].sum(axis=0)
        need = problem.parent_min[p]
        if need and int(total.max(initial=0)) < need:
            best = int(np.argmax(total)) if total.size else -1
            size = _pod_size(problem, subs[0])
            best_text = f"best: {level.names[best]} with {int(total[best])}" if best >= 0 else "no domain at all"
            reasons.append(f"no {where} has {need} free slots for {size} pods of group {name} ({best_text})")
            detail = _node_reasons(problem, subs[0])
            if detail:
                reasons.append(f"group {name}: {detail}")
    if not reasons:
        demand = (problem.req * problem.internal_min[:, None]).sum(axis=0)
        wanted = ", ".join(f"{problem.snapshot.resources[r]}={int(demand[r])}" for r in np.flatnonzero(demand))
        reasons.append(
            f"no {where} has room for the minimum of every group of gang {problem.gang.name} together ({wanted})"
        )
    return tuple(reasons)


def _pod_size(problem: Problem, g: int) -> str:
    """A short description of a pod size, e.g. "4-GPU" or "cpu=2000"."""
    gpu = problem.snapshot.resource_index(GPU)
    if gpu is not None and problem.req[g, gpu] > 0:
        return f"{int(problem.req[g, gpu])}-GPU"
    names = problem.snapshot.resources
    parts = [f"{names[r]}={int(v)}" for r, v in enumerate(problem.req[g]) if v and names[r] != PODS]
    return "{" + ", ".join(parts) + "}" if parts else "empty"


def _node_reasons(problem: Problem, g: int) -> str:
    """kube-scheduler style counts for nodes that cannot host one pod of internal group g."""
    n = problem.snapshot.num_nodes
    avail = int((problem.maxpods[g] > 0).sum())
    counts = problem.reasons(g)
    if not counts:
        return f"{avail}/{n} nodes are available"
    text = ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{avail}/{n} nodes are available: {text}"


def node_reasons(problem: Problem) -> tuple[str, ...]:
    """Per-group node filter summaries for groups that cannot reach their minimum anywhere in the cluster."""
    out: list[str] = []
    for p, name in enumerate(problem.parent_names):
        subs = [g for g in range(problem.num_groups) if problem.parent[g] == p]
        if int(problem.maxpods[subs].sum()) < problem.parent_min[p]:
            out.append(f"group {name} needs {problem.parent_min[p]} pods: {_node_reasons(problem, subs[0])}")
    return tuple(out)


def beyond_allocatable(problem: Problem) -> bool:
    """Whether some PodGroup's minimum would not fit even if every node it may use were empty (its pods ask more
    than the nodes' allocatable, or too few nodes pass its static filters): then no preemption can help."""
    snapshot = problem.snapshot
    for p in range(len(problem.parent_names)):
        subs = [g for g in range(problem.num_groups) if problem.parent[g] == p]
        mask = problem.static[p] if problem.static else np.ones(snapshot.num_nodes, dtype=np.bool_)
        room = sum(
            int(max_pods(snapshot, mask, problem.req[g], int(problem.replicas[g]), snapshot.allocatable).sum())
            for g in subs
        )
        if room < problem.parent_min[p]:
            return True
    return False
