"""Decision units for the CP-SAT model: node classes with pod patterns, or single nodes with pod counts.

Interchangeable nodes (same domains at every constrained level, same free vector, empty flag, pod limits and
preference costs) form one class, and a variable counts the class members that take one pattern (pods per
group on a node). This removes node symmetry and keeps the model size independent of the node count. When
the number of patterns explodes (many groups of tiny pods), each node becomes its own unit with one count
variable per group instead. Both kinds expose the same shape to the model builder.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from grove_sched.placement._problem import Problem
from grove_sched.placement._snapshot import BoolArray, IntArray


@dataclass(slots=True)
class Unit:
    """A group of interchangeable nodes; `vectors[i]` is the pods-per-group contribution of `var i`."""

    nodes: IntArray
    vectors: list[tuple[int, ...]] = field(default_factory=list)
    uppers: list[int] = field(default_factory=list)
    limit: int = 0

    @property
    def rep(self) -> int:
        """A representative node (all members share every modelled attribute)."""
        return int(self.nodes[0])


@dataclass(frozen=True, slots=True)
class UnitSet:
    """All units plus what kind they are ("class" or "node") and the patterns used."""

    kind: str
    units: tuple[Unit, ...]
    num_patterns: int


def enumerate_patterns(problem: Problem, nodes: IntArray, limit: int) -> IntArray | None:
    """All non-empty pods-per-group vectors a node could hold, or None when there are more than `limit`."""
    upper = np.minimum(problem.replicas, problem.maxpods[:, nodes].max(axis=1, initial=0))
    total = int(np.prod(upper + 1))
    if total > limit:
        return None
    grid = np.asarray(list(itertools.product(*(range(int(u) + 1) for u in upper))), dtype=np.int64)
    grid = grid[grid.sum(axis=1) > 0]
    for rule in problem.anti:
        if not rule.per_node:
            continue
        members = list(rule.members)
        has = grid[:, rule.group] > 0
        allowed = 1 if rule.group in rule.members else 0
        grid = grid[~has | (grid[:, members].sum(axis=1) <= allowed)]
    result: IntArray = grid.reshape(-1, problem.num_groups)
    return result


def class_columns(problem: Problem, nodes: IntArray, per_node_rules: bool) -> IntArray:
    """Per node, every attribute the model distinguishes; equal rows are interchangeable nodes."""
    cols: list[IntArray] = [
        dom[nodes].astype(np.int64) for scope in problem.required + problem.preferred for dom in scope.chain
    ]
    cols.extend(rule.domains[nodes].astype(np.int64) for rule in problem.anti if per_node_rules or not rule.per_node)
    levels = problem.levels
    cols.extend(levels.domains[level][nodes].astype(np.int64) for level in levels.grouping)
    cols.append(problem.snapshot.empty[nodes].astype(np.int64))
    stacked = [np.stack(cols, axis=1)] if cols else []
    stacked += [np.maximum(problem.snapshot.free[nodes], 0), problem.maxpods[:, nodes].T, problem.pref_cost[:, nodes].T]
    result: IntArray = np.concatenate(stacked, axis=1)
    return result


def class_units(problem: Problem, nodes: IntArray, max_patterns: int) -> UnitSet | None:
    """Node classes with feasible patterns; None when patterns explode."""
    patterns = enumerate_patterns(problem, nodes, max_patterns)
    if patterns is None:
        return None
    columns = class_columns(problem, nodes, per_node_rules=False)
    _, first, inverse = np.unique(columns, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first, kind="stable")
    reps = nodes[first[order]]
    free = np.maximum(problem.snapshot.free[reps], 0)
    need = patterns @ problem.req
    fits: BoolArray = np.asarray((patterns[None, :, :] <= problem.maxpods[:, reps].T[:, None, :]).all(axis=2))
    fits &= np.asarray((need[None, :, :] <= free[:, None, :]).all(axis=2))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    members = rank[inverse]
    # members of every class in one pass (a mask per class cost classes x nodes: ~2 ms for 200 classes)
    by_class = np.argsort(members, kind="stable")
    bounds = np.searchsorted(members[by_class], np.arange(order.size + 1))
    vectors = [tuple(q) for q in patterns.tolist()]
    units: list[Unit] = []
    for c in range(order.size):
        unit = Unit(nodes=np.sort(nodes[by_class[bounds[c] : bounds[c + 1]]]))
        unit.limit = int(unit.nodes.size)
        for q in np.flatnonzero(fits[c]).tolist():
            unit.vectors.append(vectors[q])
            unit.uppers.append(unit.limit)
        if unit.vectors:
            units.append(unit)
    return UnitSet("class", tuple(units), int(patterns.shape[0]))


def node_units(problem: Problem, nodes: IntArray) -> UnitSet:
    """One unit per node with a count variable per group that may use it."""
    units: list[Unit] = []
    for n in nodes:
        unit = Unit(nodes=np.asarray([n], dtype=np.int64))
        for g in range(problem.num_groups):
            upper = int(problem.maxpods[g, n])
            if upper > 0:
                vec = [0] * problem.num_groups
                vec[g] = 1
                unit.vectors.append(tuple(vec))
                unit.uppers.append(upper)
        unit.limit = sum(unit.uppers)
        if unit.vectors:
            units.append(unit)
    return UnitSet("node", tuple(units), 0)


def decode(problem: Problem, units: UnitSet, values: list[list[int]]) -> IntArray:
    """Pods per (group, node): class members take patterns in node-name order, patterns in enumeration order."""
    counts = np.zeros_like(problem.maxpods)
    for unit, chosen in zip(units.units, values, strict=True):
        if units.kind == "node":
            node = unit.rep
            for vec, value in zip(unit.vectors, chosen, strict=True):
                counts[:, node] += np.asarray(vec, dtype=np.int64) * value
            continue
        cursor = 0
        for vec, value in zip(unit.vectors, chosen, strict=True):
            for node in unit.nodes[cursor : cursor + value]:
                counts[:, int(node)] = vec
            cursor += value
    return counts


def hint_values(problem: Problem, units: UnitSet, counts: IntArray) -> list[list[int]]:
    """A greedy plan expressed as values of the unit variables."""
    result: list[list[int]] = []
    for unit in units.units:
        if units.kind == "node":
            node = unit.rep
            result.append([int(counts[vec.index(1), node]) for vec in unit.vectors])
            continue
        tally = dict.fromkeys(unit.vectors, 0)
        for node in unit.nodes:
            vec = tuple(int(x) for x in counts[:, int(node)])
            if vec in tally:
                tally[vec] += 1
        result.append([tally[vec] for vec in unit.vectors])
    return result
