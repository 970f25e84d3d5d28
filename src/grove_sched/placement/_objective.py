"""The single definition of placement cost, shared by greedy ranking, the CP-SAT model and reporting.

The cost of a placement is a tuple of tier values compared lexicographically (`ObjectiveBreakdown.key`), never
one weighted sum: the old sum multiplied every tier's upper bound over the whole cluster and overflowed int64
from about 10,000 nodes, refusing gangs that fit. Greedy and the bounds compare tuples; CP-SAT, which needs one
integer objective, weighs only the tiers of its own small model and solves them in stages when even those would
not fit (`_cpsat`). Tiers, most important first (`TIERS`; three of them are vectors over the gang's topology
hierarchy, `_levels`):

1. missing extra pods (pods above each group's minimum that were not placed);
2. preferred domains: per level, broadest first, the extra domains each preferred scope touches at that level and
   every broader one. A preferred rack that cannot hold the gang so falls back to one block, then one zone, before
   spreading (KAI's behaviour), instead of scattering over racks anywhere;
3. empty domains opened at the narrowest level above the hosts (racks, or whatever the cluster's own hierarchy
   has there; the host level has tier 6). Counting broader levels too (empty blocks, zones) crowded single-rack
   and one-pod gangs into used blocks and placed fewer GPUs on the openb trace (6,171 vs 6,198, seed 2);
4. room: free GPUs, before placement, of the domains the required scopes chose (domain-level best fit: fill the
   fullest rack that fits), at whatever level each scope is. The same at the broader levels, as a tie-breaker
   between equally full racks, cost GPUs on the disaggregated benchmark sequences (3,370 -> 3,352 at 1,000 nodes);
   it is not a tier;
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
from typing import Any

import numpy as np
import numpy.typing as npt

from grove_sched.model import ObjectiveBreakdown
from grove_sched.placement._problem import Problem
from grove_sched.placement._snapshot import CodeArray, IntArray

TIERS = ("missing", "violations", "domains", "room", "fragmented", "empty", "stranded", "missed")
IMPOSSIBLE = np.iinfo(np.int64).max
"""Every value of a bound row whose domain cannot hold some minimum: it sorts after every real cost."""

Key = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Layout:
    """How many values each tier has for one problem (`TIERS` order); the key is their concatenation."""

    sizes: tuple[int, ...]

    @property
    def width(self) -> int:
        """Length of a cost key."""
        return sum(self.sizes)

    def start(self, name: str) -> int:
        """Position of a tier's first value in the key."""
        return sum(self.sizes[: TIERS.index(name)])

    def tier_of(self, position: int) -> tuple[int, int, int]:
        """(tier index, entry within the tier, entries of the tier) of a key position."""
        for i, size in enumerate(self.sizes):
            if position < size:
                return i, position, size
            position -= size
        raise IndexError(position)


def layout(problem: Problem) -> Layout:
    """Tier sizes: one value per hierarchy level for preferred domains, per grouping level for empty domains, one
    for the rest."""
    sizes = {"violations": len(problem.levels.keys), "domains": len(problem.levels.grouping)}
    return Layout(tuple(sizes.get(name, 1) for name in TIERS))


def node_gpus(problem: Problem) -> IntArray:
    """Free GPUs per node (zeros when no GPU resource exists)."""
    if problem.gpu is None:
        return np.zeros(problem.snapshot.num_nodes, dtype=np.int64)
    result: IntArray = problem.snapshot.free[:, problem.gpu]
    return result


def evaluate(problem: Problem, counts: IntArray, nodes: IntArray | None = None) -> ObjectiveBreakdown:
    """Cost of a placement given as pods per (internal group, node); `nodes` names the columns if not all."""
    if nodes is None:  # every tier depends on the touched nodes only
        nodes = np.flatnonzero(counts.any(axis=0))
        counts = counts[:, nodes]
    idx = nodes
    levels = problem.levels
    touched = counts.sum(axis=0) > 0
    missing = int((problem.replicas - counts.sum(axis=1)).sum())
    violations = [0] * len(levels.keys)
    for scope in problem.preferred:
        used = idx[counts[list(scope.groups)].sum(axis=0) > 0]
        for level, dom in zip(scope.chain_levels, scope.chain, strict=True):
            violations[level] += max(0, int(np.unique(dom[used]).size) - 1)
    opened = []
    for level in levels.grouping:
        ids = np.unique(levels.domains[level][idx[touched]])
        opened.append(int(levels.empty[level][ids[ids >= 0]].sum()))
    room = 0
    for scope in problem.required:
        ids = np.unique(scope.domains[idx[counts[list(scope.groups)].sum(axis=0) > 0]])
        room += int(levels.room[scope.level][ids[ids >= 0]].sum())
    stranded = fragmented = 0
    if problem.gpu is not None:
        used_gpu = (counts * problem.req[:, problem.gpu][:, None]).sum(axis=0)
        stranded = int((node_gpus(problem)[idx] - used_gpu)[touched].sum())
        if problem.fragile is not None:
            on = idx[touched]
            after = problem.snapshot.free[on] - counts[:, touched].T @ problem.req
            fragmented = int(problem.unusable(after).sum())
    return ObjectiveBreakdown(
        missing_extra_pods=missing,
        preferred_violations=tuple(violations),
        empty_domains_opened=tuple(opened),
        required_domain_free_gpus=room,
        fragmented_gpus=fragmented,
        empty_nodes_opened=int(problem.snapshot.empty[idx[touched]].sum()),
        stranded_gpus=stranded,
        missed_preference_weight=int((counts * problem.pref_cost[:, idx]).sum()),
        levels=levels.keys,
    )


def bound_rows(problem: Problem, domains: CodeArray, required_level: int | None = None) -> IntArray:
    """Per domain id of `domains` (-1 = no domain), a lower bound on every tier value of any placement confined to
    that domain, as one row per domain in key order (`IMPOSSIBLE` rows for domains that cannot hold a minimum).

    With `required_level`, `domains` is that (required, deciding) level of the hierarchy: a required scope of the
    level whose groups need pods is charged exactly its domain's room, which every plan confined to the domain
    pays. Memoised per problem: prune bounds, the score's floors and the proofs all ask for the same rows."""
    found = problem.memo.get(("rows", id(domains), required_level))
    if found is not None and found[0] is domains:
        rows_found: IntArray = found[1]
        return rows_found
    rows = _bound_rows(problem, domains, required_level)
    rows.flags.writeable = False
    problem.memo[("rows", id(domains), required_level)] = (domains, rows)
    return rows


def _bound_rows(problem: Problem, domains: CodeArray, required_level: int | None) -> IntArray:
    lay = layout(problem)
    count = max(int(domains.max(initial=-1)) + 1, 1)
    rows = np.zeros((count, lay.width), dtype=np.int64)
    idx = np.flatnonzero(problem.usable & (domains >= 0))  # the only nodes a plan can use
    dom = domains.take(idx)
    empty = problem.snapshot.empty.take(idx)
    impossible = np.zeros(count, dtype=np.bool_)
    opened = np.zeros(count, dtype=np.int64)
    most: list[IntArray] = []
    for g in range(problem.num_groups):
        mp = problem.maxpods[g].take(idx)
        slots = np.bincount(dom, weights=mp, minlength=count).astype(np.int64)
        rows[:, lay.start("missing")] += np.maximum(problem.replicas[g] - slots, 0)
        if len(problem.parent_of(problem.parent_names[problem.parent[g]])) > 1:
            continue  # a split group's minimum is shared between sub-groups; no per-group claim
        busy = np.bincount(dom, weights=np.where(empty, 0, mp), minlength=count).astype(np.int64)
        per_empty = np.zeros(count, dtype=np.int64)
        np.maximum.at(per_empty, dom, np.where(empty, mp, 0))
        per_node = np.zeros(count, dtype=np.int64)
        np.maximum.at(per_node, dom, mp)
        most.append(per_node)
        short = np.maximum(problem.internal_min[g] - busy, 0)
        impossible |= (short > 0) & (per_empty == 0)
        opened = np.maximum(opened, -(-short // np.maximum(per_empty, 1)))
    rows[:, lay.start("empty")] = opened
    rows[:, lay.start("stranded")] = _stranded_floor(problem, idx, dom, count, most)
    needs = int(problem.internal_min.sum()) > 0
    levels = problem.levels
    for i, level in enumerate(levels.grouping):
        if not needs:
            break
        ids = levels.domains[level].take(idx)
        in_empty = (ids >= 0) & levels.empty[level][np.maximum(ids, 0)]
        outside = np.bincount(dom, weights=~in_empty, minlength=count)
        rows[:, lay.start("domains") + i] = (outside == 0) & (np.bincount(dom, minlength=count) > 0)
    for scope in problem.preferred:
        _violation_floors(problem, scope.groups, scope.chain_levels, scope.chain, domains, rows, lay)
    for scope in problem.required:
        if int(problem.internal_min[list(scope.groups)].sum()) == 0:
            continue
        if scope.level == required_level:
            room = levels.room[required_level]
            known = min(count, room.size)
            rows[:known, lay.start("room")] += room[:known]
        else:
            rows[:, lay.start("room")] += _inner_room_floors(
                problem, scope.groups, scope.level, scope.domains, idx, dom, count
            )
    rows[impossible] = IMPOSSIBLE
    return rows


def _inner_room_floors(
    problem: Problem,
    groups: tuple[int, ...],
    level: int,
    scope_domains: CodeArray,
    idx: IntArray,
    dom: CodeArray,
    count: int,
) -> IntArray:
    """Per confining domain, the least room among the scope's domains inside it whose slots hold the scope's
    minimum: what the room tier charges any plan confined there (a role's rack inside a preferred block). Lets
    greedy skip blocks whose fitting racks are all emptier than K plans found (50,000 nodes: 16 greedy runs per
    disaggregated gang). 0 where nothing fits or the (domain x scope domain) table would be too large."""
    result = np.zeros(count, dtype=np.int64)
    sub = scope_domains.take(idx)
    labelled = sub >= 0
    room = problem.levels.room[level]
    width = min(int(sub.max(initial=-1)) + 1, room.size)
    if width <= 0 or count * width > _DENSE_PAIRS:
        return result
    labelled &= sub < width
    need = int(problem.internal_min[list(groups)].sum())
    slots = problem.maxpods[list(groups)].take(idx[labelled], axis=1).sum(axis=0)
    per_pair = _table(dom[labelled], sub[labelled], slots, count, width)
    charged = np.where(per_pair >= need, room[:width][None, :], IMPOSSIBLE).min(axis=1)
    result[charged < IMPOSSIBLE] = charged[charged < IMPOSSIBLE]
    return result


_DENSE_PAIRS = 1 << 20
"""Largest (confining domain x column) table the floors fill densely (`_table`); above it `_violation_floors`
sorts the pairs and the other floors give up (0, still a lower bound)."""


def _table(
    rows: npt.NDArray[np.integer[Any]], columns: npt.NDArray[np.integer[Any]], weights: IntArray, count: int, width: int
) -> npt.NDArray[np.float64]:
    """Sums of `weights` per (row, column) as a dense `count` x `width` table: a bincount, no sort."""
    cells = rows.astype(np.int64) * width + columns
    sums = np.bincount(cells, weights=weights, minlength=count * width)
    return sums.reshape(count, width).astype(np.float64, copy=False)


def _violation_floors(
    problem: Problem,
    groups: tuple[int, ...],
    chain_levels: tuple[int, ...],
    chain: tuple[CodeArray, ...],
    domains: CodeArray,
    rows: IntArray,
    lay: Layout,
) -> None:
    """A preferred scope touches at least two domains of a level (one violation) when no single domain of that
    level inside the confining domain has the slots for the scope's minimum."""
    need = int(problem.internal_min[list(groups)].sum())
    if need == 0:
        return
    slots = problem.maxpods[list(groups)].sum(axis=0)
    usable = (slots > 0) & (domains >= 0)
    count = rows.shape[0]
    confining = domains[usable].astype(np.int64)
    weights = slots[usable]
    for level, dom in zip(chain_levels, chain, strict=True):
        width = int(dom.max(initial=0)) + 1
        if count * width <= _DENSE_PAIRS:
            best = _table(confining, dom[usable], weights, count, width).max(axis=1).astype(np.int64)
        else:
            keys, inverse = np.unique(confining * width + dom[usable], return_inverse=True)
            sums = np.bincount(inverse.reshape(-1), weights=weights).astype(np.int64)
            best = np.zeros(count, dtype=np.int64)
            np.maximum.at(best, keys // width, sums)
        rows[:, lay.start("violations") + level] += (best < need).astype(np.int64)


def _stranded_floor(problem: Problem, idx: IntArray, dom: CodeArray, count: int, most: list[IntArray]) -> IntArray:
    """Per domain, a floor on stranded GPUs: a group's minimum needs at least ceil(min / most pods one node takes)
    nodes, each leaving at least the domain's least free GPUs, less every GPU the gang could use. Domains where
    a usable node has negative free GPUs get 0 (the tier can be negative there). `idx` are the usable nodes,
    `dom` their domains, `most` per whole (unsplit) group the most pods one node of each domain takes."""
    result = np.zeros(count, dtype=np.int64)
    if problem.gpu is None:
        return result
    least = np.full(count, IMPOSSIBLE, dtype=np.int64)
    np.minimum.at(least, dom, problem.snapshot.free[:, problem.gpu].take(idx))
    needed = np.zeros(count, dtype=np.int64)
    whole = [
        g for g in range(problem.num_groups) if len(problem.parent_of(problem.parent_names[problem.parent[g]])) == 1
    ]
    free = problem.snapshot.free[:, problem.gpu].take(idx)
    covered = np.zeros(count, dtype=np.int64)
    for g, per_node in zip(whole, most, strict=True):
        needed = np.maximum(needed, -(-int(problem.internal_min[g]) // np.maximum(per_node, 1)))
        slots, per_pod = problem.maxpods[g].take(idx), int(problem.req[g, problem.gpu])
        # Only where something other than GPUs limits the group (a pod's worth of GPUs left over on some node) can
        # the cover beat the count-times-least floor; elsewhere it is skipped (a sort of every usable node).
        if per_pod > 0 and ((free - slots * per_pod >= per_pod) & (slots > 0)).any():
            covered = np.maximum(covered, _least_free_cover(slots, free, dom, count, problem.internal_min[g]))
    used = int((problem.replicas * problem.req[:, problem.gpu]).sum())
    valid = (least >= 0) & (least < IMPOSSIBLE)
    result[valid] = np.maximum(np.maximum(needed[valid] * least[valid], covered[valid]) - used, 0)
    return result


_RATIO_STEPS = 4
_RATIO_CAP = 16
"""`_least_free_cover` files nodes by free GPUs per slot rounded down to quarters, capped at 16: a lower bound on
each node's true ratio, so the cover stays a lower bound, and a bincount instead of a sort of every usable node
(4 ms at 50,000 nodes)."""


def _least_free_cover(slots: IntArray, free: IntArray, dom: CodeArray, count: int, need: int) -> IntArray:
    """Per domain, a lower bound on the free GPUs of any set of its nodes with slots for `need` pods: the
    fractional cover taking nodes by fewest free GPUs per slot (a knapsack's LP relaxation), rounded up. Every
    node a plan touches counts its free GPUs in the stranded tier, so the touched nodes hold at least this many;
    with CPU-bound pods (two per node whatever its GPUs) it is what the count-times-least floor misses. 0 where
    the (domain x ratio) table would be too large."""
    result = np.zeros(count, dtype=np.int64)
    usable = slots > 0
    buckets = _RATIO_CAP * _RATIO_STEPS + 1
    if need <= 0 or not usable.any() or count * buckets > _DENSE_PAIRS:
        return result
    s = slots[usable]
    huge = s > 1 << 20  # saturated capacities: filed at ratio 0 (still a lower bound), never multiplied
    per_slot = np.where(huge, 1, s)
    capped = np.minimum(np.maximum(free[usable], 0), _RATIO_CAP * per_slot)
    ratio = np.where(huge, 0, np.minimum(capped * _RATIO_STEPS // per_slot, buckets - 1))
    per = _table(dom[usable], ratio, s, count, buckets)
    before = np.cumsum(per, axis=1) - per  # slots of the domain's cheaper buckets
    take = np.clip(need - before, 0, per)
    cost = take @ (np.arange(buckets) / _RATIO_STEPS)
    result[:] = np.ceil(cost - 1e-9).astype(np.int64)
    return result


def least_row(rows: IntArray) -> Key:
    """The lexicographically least row (a valid lower bound on every plan when each row bounds its domain)."""
    if rows.shape[0] == 0:
        return ()
    order = np.lexsort(rows.T[::-1])
    return tuple(int(x) for x in rows[order[0]])


def room_floor(problem: Problem) -> int:
    """A lower bound on the room tier: per required scope whose groups need pods, the least room among the domains
    whose slots can hold the scope's minimum (every feasible placement picks one of them)."""
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
        room = problem.levels.room[scope.level][:count]
        fits = slots[: room.size] >= need
        total += int(room[fits].min()) if fits.any() else 0
    return total
