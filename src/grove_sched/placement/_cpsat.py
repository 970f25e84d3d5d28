"""Stage 4: the CP-SAT model over decision units, solved deterministically.

Hard constraints: every PodGroup's minimum, per-group replica caps, one domain per required scope, in-gang
anti-affinity, node capacity (by construction of patterns, or explicit in the per-node model). The objective is
`_objective`'s lexicographic tiers. CP-SAT needs one integer objective, so the tiers are weighed, each weight
exceeding the largest total of every tier below it *in this model* (the modelled units are a few domains, so
their bounds are small); when even those products would leave int64 the tiers are solved in stages, most
important first, each stage's optimum fixed as a constraint before the next (a lexicographic solve). Terms go
straight into the proto (building them via expressions is ~20x slower). The solver runs single-threaded with a
fixed seed and a deterministic time limit, so answers are reproducible.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from grove_sched.model import CPU, MEMORY, PlacementOptions
from grove_sched.placement._lexsolve import STAGE_LIMIT, solve_lexicographically
from grove_sched.placement._objective import Key, Layout, layout, node_gpus
from grove_sched.placement._problem import Problem, Scope
from grove_sched.placement._snapshot import CodeArray, IntArray
from grove_sched.placement._units import UnitSet, decode, hint_values


@dataclass(frozen=True, slots=True)
class SolveResult:
    """Outcome of one CP-SAT run: counts when a solution was found, whether every stage was proven optimal, and
    statistics (`stages`: how many lexicographic stages the objective needed)."""

    counts: IntArray | None
    status: str
    optimal: bool
    deterministic_time: float
    num_variables: int
    stages: int = 1


class _Builder:
    """Accumulates the model and, per tier value (key position), its objective terms; one instance per solve."""

    def __init__(self, problem: Problem, units: UnitSet) -> None:
        self.problem = problem
        self.units = units
        self.lay: Layout = layout(problem)
        self.model = cp_model.CpModel()
        self.terms: list[dict[int, int]] = [defaultdict(int) for _ in range(self.lay.width)]
        self.offsets = [0] * self.lay.width
        self.priced: set[int] = set()
        """Hierarchy levels whose preferred-domain values the model prices."""
        self.vars: list[list[cp_model.IntVar]] = [
            [self.model.new_int_var(0, upper, "") for upper in unit.uppers] for unit in units.units
        ]

    def cost(self, tier: str, var: cp_model.IntVar, coeff: int, entry: int = 0) -> None:
        """Add `coeff * var` to value `entry` of a tier."""
        if coeff:
            self.terms[self.lay.start(tier) + entry][var.index] += coeff

    def presence(self, u: int, groups: frozenset[int] | None) -> tuple[list[cp_model.IntVar], int]:
        """Variables of unit u that put pods of `groups` (None = any) on it, and a valid upper bound of their sum."""
        unit = self.units.units[u]
        chosen = [
            (var, upper)
            for var, vec, upper in zip(self.vars[u], unit.vectors, unit.uppers, strict=True)
            if groups is None or any(vec[g] for g in groups)
        ]
        return [v for v, _ in chosen], min(unit.limit, sum(up for _, up in chosen))

    def link(self, u: int, groups: frozenset[int] | None, flag: cp_model.IntVar) -> None:
        """Pods of `groups` on unit u only if `flag` is set."""
        vs, bound = self.presence(u, groups)
        if vs:
            self.model.add(cp_model.LinearExpr.sum(vs) <= bound * flag)

    def domain_flags(self, domains: CodeArray, groups: frozenset[int] | None) -> dict[int, cp_model.IntVar]:
        """One bool per domain a unit of the model lies in, linked to the units' use by `groups`."""
        flags: dict[int, cp_model.IntVar] = {}
        for u, unit in enumerate(self.units.units):
            d = int(domains[unit.rep])
            if d not in flags:
                flags[d] = self.model.new_bool_var("")
            self.link(u, groups, flags[d])
        return flags

    def group_count(self, g: int, units: list[int] | None = None) -> cp_model.LinearExpr:
        vs: list[cp_model.IntVar] = []
        cs: list[int] = []
        for u in units if units is not None else range(len(self.units.units)):
            for var, vec in zip(self.vars[u], self.units.units[u].vectors, strict=True):
                if vec[g]:
                    vs.append(var)
                    cs.append(vec[g])
        return cp_model.LinearExpr.weighted_sum(vs, cs)


def solve(
    problem: Problem,
    units: UnitSet,
    hint: IntArray | None,
    options: PlacementOptions,
    floor: Key = (),
    every_level: bool = False,
) -> SolveResult:
    """Build and solve; `counts` is None when no solution was found within the limit.

    `floor` is a known lower bound on every tier value of any solution of this model; stating it as the
    objective's domain lets CP-SAT stop as soon as it reaches it instead of proving it the hard way. Preferred
    scopes are priced at their broader levels only where that can matter (`_modelled_chain`) unless
    `every_level`; when a solution spreads such a scope anyway, the model is solved again with every level.
    """
    b = _Builder(problem, units)
    model = b.model
    for p in range(len(problem.parent_names)):
        subs = [g for g in range(problem.num_groups) if problem.parent[g] == p]
        model.add(sum((b.group_count(g) for g in subs), cp_model.LinearExpr.constant(0)) >= problem.parent_min[p])
    for g in range(problem.num_groups):
        model.add(b.group_count(g) <= int(problem.replicas[g]))
    levels = problem.levels
    for scope in problem.required:
        flags = b.domain_flags(scope.domains, frozenset(scope.groups))
        if len(flags) > 1:
            model.add_at_most_one(flags.values())
        for d, flag in flags.items():
            if d >= 0:
                b.cost("room", flag, int(levels.room[scope.level][d]))
    unchecked = []
    for scope in problem.preferred:
        chain = list(zip(scope.chain_levels, scope.chain, strict=True))
        if not every_level:
            chain = _modelled_chain(problem, units, scope, chain)
        if len(chain) < len(scope.chain):
            unchecked.append(scope)
        for level, dom in chain:
            b.priced.add(level)
            for flag in b.domain_flags(dom, frozenset(scope.groups)).values():
                b.cost("violations", flag, 1, level)
            if int(problem.internal_min[list(scope.groups)].sum()) > 0:
                b.offsets[b.lay.start("violations") + level] -= 1
    _anti_affinity(b)
    _empty_domains(b)
    _unit_costs(b)
    for u, unit in enumerate(units.units):
        if units.kind == "class" and len(unit.vectors) > 1:
            model.add(cp_model.LinearExpr.sum(b.vars[u]) <= unit.limit)
    b.offsets[b.lay.start("missing")] += int(problem.replicas.sum())
    if hint is not None:  # straight into the proto: `add_hint` per variable cost ~2 ms on a 256-pod gang
        proto_hint = model.proto.solution_hint
        for vars_u, hinted in zip(b.vars, hint_values(problem, units, hint), strict=True):
            proto_hint.vars.extend([var.index for var in vars_u])
            proto_hint.values.extend([int(value) for value in hinted])
    solved = solve_lexicographically(b.model, b.terms, b.offsets, b.lay, _problem_weights(b), floor, options)
    counts = None
    if solved.values is not None:
        counts = decode(problem, units, [[solved.values[var.index] for var in vars_u] for vars_u in b.vars])
    if counts is not None and any(_spans(scope, counts) for scope in unchecked):
        return solve(problem, units, hint, options, floor, every_level=True)  # it spread an unpriced scope
    num_vars = len(model.proto.variables)
    return SolveResult(counts, solved.status, solved.optimal, solved.deterministic_time, num_vars, solved.stages)


def _modelled_chain(
    problem: Problem, units: UnitSet, scope: Scope, chain: list[tuple[int, CodeArray]]
) -> list[tuple[int, CodeArray]]:
    """The levels of a preferred scope the model prices: all of its chain, or only its own level when one of its
    own domains among the modelled nodes has the slots for every pod of the scope. Then the optimum, which places
    all of them if it can, usually touches one domain of the own level and so one of every broader level; leaving
    those levels out keeps the model (and CP-SAT's search) what it is without a hierarchy. When a solution spreads
    anyway, `solve` solves again with every level."""
    groups = np.asarray(scope.groups, dtype=np.int64)
    wanted = int(problem.replicas[groups].sum())
    nodes = np.concatenate([unit.nodes for unit in units.units]) if units.units else np.zeros(0, np.int64)
    dom = scope.domains[nodes]
    slots = problem.maxpods[np.ix_(groups, nodes)].sum(axis=0)
    per_domain = np.bincount(dom[dom >= 0], weights=slots[dom >= 0]) if nodes.size else np.zeros(0)
    if per_domain.size and per_domain.max() >= wanted:
        return chain[-1:]
    return chain


def _spans(scope: Scope, counts: IntArray) -> bool:
    """Whether a plan puts a scope's pods in more than one domain of its own level."""
    used = counts[list(scope.groups)].sum(axis=0) > 0
    return int(np.unique(scope.domains[used]).size) > 1


def _problem_weights(b: _Builder) -> list[int] | None:
    """Lexicographic weights from each tier value's upper bound over the whole problem (every usable node and
    domain), or None when they would leave int64 (from about 10,000 nodes). These are the weights the benchmark
    results were measured with; CP-SAT's search under a time limit depends on them, so they are kept wherever
    they fit, and a value the model does not price (a preferred level left out) is bounded by 0."""
    problem = b.problem
    usable = problem.usable
    total_pods = int(problem.replicas.sum())
    lay = b.lay
    levels = problem.levels
    upper = [0] * lay.width
    upper[lay.start("missing")] = total_pods
    for scope in problem.preferred:
        for level in scope.chain_levels:
            if level in b.priced:
                upper[lay.start("violations") + level] += total_pods
    for i, level in enumerate(levels.grouping):
        upper[lay.start("domains") + i] = int(levels.empty[level].sum())
    upper[lay.start("room")] = sum(int(levels.room[scope.level].max(initial=0)) for scope in problem.required)
    gpus = np.maximum(node_gpus(problem), 0)
    upper[lay.start("fragmented")] = int(gpus[problem.fragile].sum()) if problem.fragile is not None else 0
    upper[lay.start("empty")] = int((problem.snapshot.empty & usable).sum())
    upper[lay.start("stranded")] = int(gpus[usable].sum())
    upper[lay.start("missed")] = int((problem.replicas * problem.pref_cost.max(axis=1, initial=0)).sum())
    weights = []
    scale = 1
    for bound in reversed(upper):
        weights.append(scale)
        scale *= bound + 1
    return list(reversed(weights)) if scale < STAGE_LIMIT else None


def _anti_affinity(b: _Builder) -> None:
    """In-gang required anti-affinity at domain level (per-node rules are already inside class patterns)."""
    problem = b.problem
    for rule in problem.anti:
        if rule.per_node and b.units.kind == "class":
            continue
        by_domain: dict[int, list[int]] = defaultdict(list)
        for u, unit in enumerate(b.units.units):
            d = int(rule.domains[unit.rep])
            if d >= 0:
                by_domain[d].append(u)
        members = list(rule.members)
        big = int(problem.replicas[members].sum()) + int(problem.replicas[rule.group])
        allowed = 1 if rule.group in rule.members else 0
        for units in by_domain.values():
            own = b.group_count(rule.group, units)
            if not any(
                b.units.units[u].vectors and any(v[rule.group] for v in b.units.units[u].vectors) for u in units
            ):
                continue
            active = b.model.new_bool_var("")
            b.model.add(own <= big * active)
            crowd = sum((b.group_count(m, units) for m in members), cp_model.LinearExpr.constant(0))
            b.model.add(crowd <= allowed + big * (1 - active))


def _empty_domains(b: _Builder) -> None:
    """Opening an empty domain of a grouping level costs that level's value of tier 3."""
    levels = b.problem.levels
    for entry, level in enumerate(levels.grouping):
        flags: dict[int, cp_model.IntVar] = {}
        dom = levels.domains[level]
        for u, unit in enumerate(b.units.units):
            d = int(dom[unit.rep])
            if d < 0 or not levels.empty[level][d]:
                continue
            if d not in flags:
                flags[d] = b.model.new_bool_var("")
                b.cost("domains", flags[d], 1, entry)
            b.link(u, None, flags[d])


def _unit_costs(b: _Builder) -> None:
    """Per-variable costs: extra pods (tier 1), fragmented GPUs (5), empty nodes (6), stranded GPUs (7), missed
    preferences (8). A class pattern's fragmentation is a constant of the pattern; the per-node model prices it
    with one usable-GPU variable per node (`_node_fragmentation`)."""
    problem = b.problem
    weigh_fragments = problem.fragile is not None
    gpus = node_gpus(problem)
    gpu_req = problem.req[:, problem.gpu] if problem.gpu is not None else np.zeros(problem.num_groups, np.int64)
    targets = [b.terms[b.lay.start(tier)] for tier in ("empty", "stranded", "fragmented", "missed", "missing")]
    for u, unit in enumerate(b.units.units):
        rep = unit.rep
        empty = int(problem.snapshot.empty[rep])
        pref = problem.pref_cost[:, rep]
        if b.units.kind == "class":
            patterns = np.asarray(unit.vectors, dtype=np.int64)
            fragmented = np.zeros(len(unit.vectors), dtype=np.int64)
            if weigh_fragments:
                fragmented = problem.unusable(problem.snapshot.free[rep] - patterns @ problem.req)
            # Whole columns per pattern, then straight into the tiers' term maps in the order `cost` would fill
            # them (the model, and so CP-SAT's search, stays the same); per-variable calls were a third of the
            # model build of a many-pod gang.
            columns = (
                [empty] * len(unit.vectors),
                (int(gpus[rep]) - patterns @ gpu_req).tolist(),
                fragmented.tolist(),
                (patterns @ pref).tolist(),
                (-patterns.sum(axis=1)).tolist(),
            )
            for i, var in enumerate(b.vars[u]):
                for target, column in zip(targets, columns, strict=True):
                    if column[i]:
                        target[var.index] += column[i]
            continue
        touched = b.model.new_bool_var("")
        b.link(u, None, touched)
        b.cost("empty", touched, empty)
        b.cost("stranded", touched, int(gpus[rep]))
        _node_capacity(b, u, touched)
        if weigh_fragments and problem.fragile is not None and problem.fragile[rep]:
            _node_fragmentation(b, u, touched)
        for var, vec in zip(b.vars[u], unit.vectors, strict=True):
            g = vec.index(1)
            b.cost("stranded", var, -int(gpu_req[g]))
            b.cost("missed", var, int(pref[g]))
            b.cost("missing", var, -1)


def _node_capacity(b: _Builder, u: int, touched: cp_model.IntVar) -> None:
    """Per-node model: resource capacity for every resource that can bind on this node."""
    problem = b.problem
    unit = b.units.units[u]
    node = unit.rep
    free = np.maximum(problem.snapshot.free[node], 0)
    groups = [vec.index(1) for vec in unit.vectors]
    req = problem.req[groups]
    uppers = np.asarray(unit.uppers, dtype=np.int64)
    worst = (req * uppers[:, None]).sum(axis=0)
    for r in np.flatnonzero(worst > free):
        b.model.add(cp_model.LinearExpr.weighted_sum(b.vars[u], [int(x) for x in req[:, r]]) <= int(free[r]) * touched)


def _node_fragmentation(b: _Builder, u: int, touched: cp_model.IntVar) -> None:
    """Per-node model, tier 5: fragmented = GPUs left on a touched node minus `usable`, where `usable` may not
    exceed the GPUs left nor what the CPU and memory left can serve at the profile's per-GPU needs. Minimising
    the cost drives `usable` to that minimum, so the tier is exact."""
    problem = b.problem
    profile = problem.profile
    if problem.gpu is None or profile is None:
        return
    node = b.units.units[u].rep
    free = np.maximum(problem.snapshot.free[node], 0)
    free_gpu = int(free[problem.gpu])
    if free_gpu <= 0:
        return
    groups = [vec.index(1) for vec in b.units.units[u].vectors]
    usable = b.model.new_int_var(0, free_gpu, "")
    b.model.add(usable <= free_gpu * touched)
    snap = problem.snapshot
    limits = [(problem.gpu, 1), (snap.resource_index(CPU), profile.cpu_per_gpu)]
    limits.append((snap.resource_index(MEMORY), profile.memory_per_gpu))
    for column, per_gpu in limits:
        if column is None or per_gpu <= 0:
            continue
        used = cp_model.LinearExpr.weighted_sum(b.vars[u], [int(problem.req[g, column]) for g in groups])
        b.model.add(per_gpu * usable + used <= int(free[column]))
    b.cost("fragmented", touched, free_gpu)
    for var, g in zip(b.vars[u], groups, strict=True):
        b.cost("fragmented", var, -int(problem.req[g, problem.gpu]))
    b.cost("fragmented", usable, -1)
