"""Stage 3: best-fit greedy placement inside one candidate domain.

Greedy gives every candidate domain a feasible plan and a cost under the shared objective, which ranks the
domains for CP-SAT and supplies its hint (and the fallback answer). It works on a local copy of the domain's
nodes only, so one step costs a few numpy operations over ~100 nodes: pick the best-fit node for the current
group and put as many of its pods there as fit. Required sub-scopes (group configs, per-group keys, in-gang
pod affinity) take their tightest sub-domain that passes the aggregate check; in-gang anti-affinity bans
domains as pods land.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grove_sched.placement._objective import evaluate
from grove_sched.placement._problem import Problem
from grove_sched.placement._snapshot import BoolArray, CodeArray, IntArray


@dataclass(slots=True)
class _Local:
    """The problem restricted to one domain's nodes (mutable working state of one greedy run)."""

    maxpods: IntArray
    allowed: BoolArray
    free: IntArray
    empty: BoolArray
    groupings: list[CodeArray]
    """Domains of each grouping level (broadest first) whose empty domains the tier "empty domains" counts."""
    pref_cost: IntArray
    required: list[CodeArray]
    preferred: list[list[CodeArray]]
    """Per preferred scope, its chain's domains (broadest first)."""
    anti: list[CodeArray]
    touched: BoolArray
    pref_touched: list[list[BoolArray]]


def greedy(problem: Problem, nodes: IntArray, tries: int = 1) -> IntArray | None:
    """Pods per (internal group, node of `nodes`), or None when greedy cannot fit every minimum; each required
    scope tries up to `tries` sub-domains, best first (see `MAX_SUBDOMAIN_TRIES`)."""
    snap = problem.snapshot
    maxpods = problem.maxpods[:, nodes]
    levels = problem.levels
    loc = _Local(
        maxpods=maxpods,
        allowed=maxpods > 0,
        free=np.maximum(snap.free[nodes], 0),
        empty=snap.empty[nodes],
        groupings=[levels.domains[level][nodes] for level in levels.grouping],
        pref_cost=problem.pref_cost[:, nodes],
        required=[scope.domains[nodes] for scope in problem.required],
        preferred=[[dom[nodes] for dom in scope.chain] for scope in problem.preferred],
        anti=[rule.domains[nodes] for rule in problem.anti],
        touched=np.zeros(nodes.size, dtype=np.bool_),
        pref_touched=[[np.zeros(nodes.size, dtype=np.bool_) for _ in scope.chain] for scope in problem.preferred],
    )
    counts = np.zeros_like(maxpods)
    order = sorted(range(problem.num_groups), key=lambda g: (-_size(problem, g), g))
    # A step may fill several nodes at once when placing on one node cannot change the ranking of the others.
    batchable = [
        not any(g in (rule.group, *rule.members) for rule in problem.anti)
        and not any(g in scope.groups for scope in problem.preferred)
        for g in range(problem.num_groups)
    ]
    step = _Step(problem, loc, counts, batchable)
    pending = [set(range(len(problem.required))) for _ in range(problem.num_groups)]
    for g in range(problem.num_groups):
        pending[g] = {s for s, scope in enumerate(problem.required) if g in scope.groups}
    done: set[int] = set()
    # Choose each required scope's sub-domain against the capacity left by groups placed so far, and place a
    # group's minimum as soon as every scope containing it has chosen, so later scopes see what it used.
    for s in range(len(problem.required)):
        for g in order:
            pending[g].discard(s)
        ready = [g for g in order if g not in done and not pending[g]]
        if not _place_in_subdomain(problem, loc, step, s, ready, tries):
            return None
        done.update(ready)
    for g in order:
        if g not in done and not step.place(g, int(problem.internal_min[g])):
            return None
    for g in order:
        step.place(g, int(problem.replicas[g]))
    return _fill_opened_node(problem, nodes, counts)


MAX_TAIL_PODS = 64
"""Largest number of pods `_fill_opened_node` tries to move onto a part-filled node (its search is a small
subset-sum over pod counts)."""


def _fill_opened_node(problem: Problem, nodes: IntArray, counts: IntArray) -> IntArray:
    """Greedy opens empty nodes last, so when a group spills onto them the last one is often left part-filled
    (64 one-GPU pods: the busy nodes' free GPUs, then 8 per empty node, 1-7 GPUs stranded on the last). Moving the
    group's pods off busy nodes it fills completely, pod counts summing to what the opened node still takes, fills
    that node instead and leaves those busy nodes as they were: fewer stranded GPUs, the same nodes opened (CP-SAT
    found this in 40-90 ms; here it is a subset sum). Only for a group alone on the nodes concerned, with no
    anti-affinity or preferred scope, and kept only when the whole cost key improves."""
    gpu = problem.gpu
    if gpu is None or not counts.any():
        return counts
    snap = problem.snapshot
    free_after = snap.free[nodes, gpu] - problem.req[:, gpu] @ counts
    pods = counts.sum(axis=0)
    empty = snap.empty[nodes]
    best, best_key = counts, None
    for g in range(problem.num_groups):
        per_pod = int(problem.req[g, gpu])
        if per_pod <= 0 or any(g in (rule.group, *rule.members) for rule in problem.anti):
            continue
        if any(g in scope.groups for scope in problem.preferred):
            continue
        alone = (pods > 0) & (pods == counts[g])  # nodes holding pods of g only
        tails = np.flatnonzero(alone & empty & (free_after > 0))
        if tails.size != 1:
            continue
        tail = int(tails[0])
        room = min(int(free_after[tail]) // per_pod, int(problem.maxpods[g, nodes[tail]] - counts[g, tail]))
        donors = np.flatnonzero(alone & ~empty & (free_after == 0) & (counts[g] <= room))
        if room <= 0 or room > MAX_TAIL_PODS or not donors.size:
            continue
        moved = _most_up_to(counts[g, donors], room)
        if not moved:
            continue
        trial = counts.copy()
        trial[g, donors[moved]] = 0
        trial[g, tail] += int(counts[g, donors[moved]].sum())
        if best_key is None:
            best_key = evaluate(problem, counts, nodes).key
        key = evaluate(problem, trial, nodes).key
        if key < best_key:
            best, best_key = trial, key
    return best


def _most_up_to(sizes: IntArray, limit: int) -> list[int]:
    """Indices of a subset of `sizes` with the largest sum not above `limit` (dynamic programming over sums)."""
    reach: dict[int, list[int]] = {0: []}
    for i, size in enumerate(int(x) for x in sizes):
        for total, members in list(reach.items()):
            after = total + size
            if after <= limit and after not in reach:
                reach[after] = [*members, i]
        if limit in reach:
            break
    return reach[max(reach)]


class _Step:
    """Places pods of one group up to a target, best-fit node by node."""

    def __init__(self, problem: Problem, loc: _Local, counts: IntArray, batchable: list[bool]) -> None:
        self.problem = problem
        self.loc = loc
        self.counts = counts
        self.batchable = batchable
        self.exclusive = [any(r.group == g and g in r.members for r in problem.anti) for g in range(problem.num_groups)]

    def place(self, g: int, target: int) -> bool:
        """Add pods of g until `target` are placed; False when they do not fit."""
        problem, loc, counts = self.problem, self.loc, self.counts
        placed = int(counts[g].sum())
        while placed < target:
            found = _best_nodes(problem, loc, g, target - placed, self.batchable[g])
            if not found:
                return False
            for node, fit in found:
                take = min(target - placed, fit, int(loc.maxpods[g, node] - counts[g, node]))
                if self.exclusive[g]:
                    take = 1
                counts[g, node] += take
                placed += take
                loc.free[node] -= problem.req[g] * take
                loc.touched[node] = True
                for s, scope in enumerate(problem.preferred):
                    if g in scope.groups:
                        for touched, dom in zip(loc.pref_touched[s], loc.preferred[s], strict=True):
                            touched |= dom == dom[node]
                _apply_anti(problem, loc, g, node)
                if counts[g, node] >= loc.maxpods[g, node]:
                    loc.allowed[g, node] = False
        return True


def _size(problem: Problem, g: int) -> int:
    """Sort key: bigger GPU pods first, then bigger CPU pods."""
    gpu = int(problem.req[g, problem.gpu]) if problem.gpu is not None else 0
    return gpu * 10**9 + int(problem.req[g, 0])


def _best_nodes(problem: Problem, loc: _Local, g: int, want: int, batch: bool) -> list[tuple[int, int]]:
    """Best-fit node(s) for the next pods of g: stay in preferred domains, keep empty racks, leave no GPUs without
    the CPU and memory to use them, keep empty nodes, leave few GPUs.

    With `batch`, keeps taking nodes in rank order until `want` pods fit, stopping after a node that opens an
    empty rack (that changes the rank of its rack mates)."""
    idx = np.flatnonzero(loc.allowed[g])
    if not idx.size:
        return []
    req = problem.req[g]
    requested = np.flatnonzero(req > 0)
    if requested.size:
        fit = (loc.free[idx][:, requested] // req[requested]).min(axis=1)
        keep = fit > 0
        idx, fit = idx[keep], fit[keep]
        if not idx.size:
            return []
    else:
        fit = loc.maxpods[g, idx]
    keys: list[IntArray] = [idx, loc.pref_cost[g, idx]]
    if problem.gpu is not None:
        take = np.minimum(fit, want)
        keys.append(loc.free[idx, problem.gpu] - take * req[problem.gpu])
    keys.append((~loc.touched[idx] & loc.empty[idx]).astype(np.int64))
    if problem.fragile is not None:
        keys.append(problem.unusable(loc.free[idx] - np.minimum(fit, want)[:, None] * req[None, :]))
    # opening an empty domain, then leaving a preferred scope's domains: narrowest level first in the key list,
    # so that the broadest level is the most important key (lexsort sorts by the last key first)
    opens = np.zeros(idx.size, dtype=np.int64)
    for dom, empty in zip(reversed(loc.groupings), reversed(_grouping_empty(problem)), strict=True):
        domains = dom[idx]
        opened = np.zeros(empty.size + 1, dtype=np.bool_)
        opened[dom[loc.touched]] = True
        opening = (empty[domains] & ~opened[domains] & (domains >= 0)).astype(np.int64)
        keys.append(opening)
        opens |= opening
    for level in reversed(range(len(problem.levels.keys))):
        outside = np.zeros(idx.size, dtype=np.int64)
        for s, scope in enumerate(problem.preferred):
            if g not in scope.groups or level not in scope.chain_levels:
                continue
            touched = loc.pref_touched[s][scope.chain_levels.index(level)]
            if touched.any():
                outside += ~touched[idx]
        if outside.any():
            keys.append(outside)
    order = np.lexsort(tuple(keys))
    if not batch:
        best = int(order[0])
        return [(int(idx[best]), int(fit[best]))]
    chosen: list[tuple[int, int]] = []
    left = want
    for i in order:
        if chosen and int(fit[i]) > left:
            break  # this node would be left part-filled: rank again for what is left, which may fill another exactly
        chosen.append((int(idx[i]), int(fit[i])))
        left -= int(fit[i])
        if left <= 0 or opens[i]:
            break
    return chosen


def _grouping_empty(problem: Problem) -> list[BoolArray]:
    """Per grouping level (broadest first), whether each of its domains is empty."""
    levels = problem.levels
    return [levels.empty[level] for level in levels.grouping]


def _apply_anti(problem: Problem, loc: _Local, g: int, node: int) -> None:
    """Ban domains for groups that in-gang anti-affinity keeps away from the pod just placed."""
    for rule, dom in zip(problem.anti, loc.anti, strict=True):
        d = dom[node]
        if d < 0:
            continue
        same = dom == d
        if rule.group == g:
            for m in rule.members:
                loc.allowed[m] &= ~same
        elif g in rule.members:
            loc.allowed[rule.group] &= ~same


MAX_SUBDOMAIN_TRIES = 64
"""Sub-domains a required scope tries, best first, in greedy's second pass (run only when the first, with one
try, found no plan anywhere). The first pass checks each group's room on its own, so in a tight rack a leader and
its workers can each pass while not fitting together; greedy then failed everywhere and CP-SAT, with no hint, ran
out of time: in the end-to-end disaggregated benchmark at 80% of free GPUs, base gangs that fitted waited for the
30 s flush. The second pass also requires the groups' summed requests to fit the domain's free total and tries
the next sub-domain when the tightest fails node by node. Neither is in the first pass: there each lowered the
GPUs placed on the disaggregated sequences at 1,000 nodes (3,383 -> 3,357 and 3,370), where skipping a tight
rack's block served later gangs better; as a second pass they cost 8 GPUs there (3,374.7) and none at 5,000 nodes
(13,773.3 vs 13,773.7)."""


def _place_in_subdomain(problem: Problem, loc: _Local, step: _Step, s: int, ready: list[int], tries: int) -> bool:
    """Restrict required scope s's groups to a sub-domain and place the minimum of the groups now `ready`,
    trying the next-best sub-domain (state rolled back) when they do not fit."""
    groups, dom = problem.required[s].groups, loc.required[s]
    choices = _subdomain_choices(problem, loc, s, joint=tries > 1)
    if choices is None:
        return False
    choices = choices[: max(tries, 1)]
    # Rollback state only when a second choice may follow (the first pass, one try, is greedy's hot path).
    saved = [loc.allowed, loc.free, loc.touched, *(t for chain in loc.pref_touched for t in chain), step.counts]
    before = [array.copy() for array in saved] if len(choices) > 1 else []
    for k, choice in enumerate(choices):
        if k:
            for array, copy in zip(saved, before, strict=True):
                array[...] = copy
        if choice is not None:
            for g in groups:
                loc.allowed[g] &= dom == choice
        if all(step.place(g, int(problem.internal_min[g])) for g in ready):
            return True
    return False


def _subdomain_choices(problem: Problem, loc: _Local, s: int, joint: bool) -> list[int | None] | None:
    """A required scope's sub-domains whose remaining room fits their minimum, best first; [None] when there is
    no choice to make (one domain, or nothing to place); None when no sub-domain fits.

    Best = the tightest (fewest free GPUs on usable nodes: rack-level best fit, as the objective's tier 4), then
    the one holding the most minimum pods on already-used nodes (opens fewest empty nodes).
    """
    scope = problem.required[s]
    groups, dom = list(scope.groups), loc.required[s]
    usable = loc.allowed[groups].any(axis=0) & (dom >= 0)
    present = np.unique(dom[usable])
    if present.size == 0:
        return [None] if int(problem.internal_min[groups].sum()) == 0 else None
    count = int(dom.max()) + 1
    ok = np.zeros(count, dtype=np.bool_)
    ok[present] = True
    on_used = np.zeros(count, dtype=np.int64)
    for g in groups:
        idx = np.flatnonzero(loc.allowed[g] & (dom >= 0))
        req = problem.req[g]
        requested = np.flatnonzero(req > 0)
        room = loc.maxpods[g, idx]
        if requested.size:
            room = np.minimum(room, (loc.free[idx][:, requested] // req[requested]).min(axis=1))
        need = problem.internal_min[g]
        ok &= np.bincount(dom[idx], weights=room, minlength=count) >= need
        used = ~loc.empty[idx] | loc.touched[idx]
        on_used += np.minimum(np.bincount(dom[idx], weights=np.where(used, room, 0), minlength=count), need).astype(
            np.int64
        )
    if joint and len(groups) > 1:  # the groups share the domain's capacity: their summed minimum must fit its total
        total = problem.internal_min[groups] @ problem.req[groups]
        for r in np.flatnonzero(total > 0):
            have = np.bincount(dom[usable], weights=np.maximum(loc.free[usable, r], 0), minlength=count)
            ok &= have >= total[r]
    if not ok.any():
        return None
    if present.size <= 1:
        return [None]
    gpu = problem.gpu
    spare = np.bincount(dom[usable], weights=loc.free[usable, gpu] if gpu is not None else None, minlength=count)
    return sorted((int(d) for d in np.flatnonzero(ok)), key=lambda d: (spare[d], -on_used[d], d))
