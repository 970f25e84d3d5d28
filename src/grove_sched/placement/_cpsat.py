"""Stage 4: the CP-SAT model over decision units, solved deterministically.

Hard constraints: every PodGroup's minimum, per-group replica caps, one domain per required scope, in-gang
anti-affinity, node capacity (by construction of patterns, or explicit in the per-node model). The objective is
`_objective`'s weighted tiers, written straight into the proto (building it via expressions is ~20x slower).
The solver runs single-threaded with a fixed seed and a deterministic time limit, so answers are reproducible.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from grove_sched.model import CPU, MEMORY, PlacementOptions
from grove_sched.placement._objective import Weights, domain_room, node_gpus
from grove_sched.placement._problem import Problem
from grove_sched.placement._snapshot import CodeArray, IntArray
from grove_sched.placement._units import UnitSet, decode, hint_values

_INT64_SAFE = 2**62


@dataclass(frozen=True, slots=True)
class SolveResult:
    """Outcome of one CP-SAT run: counts when a solution was found, the proven bound and statistics."""

    counts: IntArray | None
    status: str
    bound: float
    deterministic_time: float
    num_variables: int


class _Builder:
    """Accumulates the model; one instance per solve."""

    def __init__(self, problem: Problem, units: UnitSet, w: Weights) -> None:
        self.problem = problem
        self.units = units
        self.w = w
        self.model = cp_model.CpModel()
        self.obj_vars: list[int] = []
        self.obj_coeffs: list[int] = []
        self.offset = 0
        self.vars: list[list[cp_model.IntVar]] = [
            [self.model.new_int_var(0, upper, "") for upper in unit.uppers] for unit in units.units
        ]

    def cost(self, var: cp_model.IntVar, coeff: int) -> None:
        if coeff:
            self.obj_vars.append(var.index)
            self.obj_coeffs.append(coeff)

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
    problem: Problem, units: UnitSet, w: Weights, hint: IntArray | None, options: PlacementOptions, floor: int = 0
) -> SolveResult:
    """Build and solve; `counts` is None when no solution was found within the limit.

    `floor` is a known lower bound on the cost of any solution of this model; stating it as the objective's
    domain lets CP-SAT stop as soon as it reaches it instead of proving it the hard way.
    """
    b = _Builder(problem, units, w)
    model = b.model
    for p in range(len(problem.parent_names)):
        subs = [g for g in range(problem.num_groups) if problem.parent[g] == p]
        model.add(sum((b.group_count(g) for g in subs), cp_model.LinearExpr.constant(0)) >= problem.parent_min[p])
    for g in range(problem.num_groups):
        model.add(b.group_count(g) <= int(problem.replicas[g]))
    w_room = w.of("room")
    for s, scope in enumerate(problem.required):
        flags = b.domain_flags(scope.domains, frozenset(scope.groups))
        if len(flags) > 1:
            model.add_at_most_one(flags.values())
        if w_room:
            room = w.rooms[s] if len(w.rooms) == len(problem.required) else domain_room(problem, scope.domains)
            for d, flag in flags.items():
                if d >= 0:
                    b.cost(flag, w_room * int(room[d]))
    for scope in problem.preferred:
        flags = b.domain_flags(scope.domains, frozenset(scope.groups))
        for flag in flags.values():
            b.cost(flag, w.of("violations"))
        if int(problem.internal_min[list(scope.groups)].sum()) > 0:
            b.offset -= w.of("violations")
    _anti_affinity(b)
    _racks(b)
    _unit_costs(b)
    for u, unit in enumerate(units.units):
        if units.kind == "class" and len(unit.vectors) > 1:
            model.add(cp_model.LinearExpr.sum(b.vars[u]) <= unit.limit)
    b.offset += w.of("missing") * int(problem.replicas.sum())
    model.proto.objective.vars.extend(b.obj_vars)
    model.proto.objective.coeffs.extend(b.obj_coeffs)
    model.proto.objective.offset = float(b.offset)
    ceiling = sum(
        abs(c) * int(model.proto.variables[v].domain[-1]) for v, c in zip(b.obj_vars, b.obj_coeffs, strict=True)
    )
    ceiling = min(ceiling, _INT64_SAFE)
    model.proto.objective.domain.extend([max(min(floor - b.offset, ceiling), -_INT64_SAFE), ceiling])
    if hint is not None:
        for vars_u, hinted in zip(b.vars, hint_values(problem, units, hint), strict=True):
            for var, value in zip(vars_u, hinted, strict=True):
                model.add_hint(var, value)
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = 1
    params.cp_model_probing_level = 0
    # Presolve cost more than it saved on these small class models: off, the mixed 3/5/2-GPU gang solves in ~60%
    # of the time to the same optima (placement_speed), and the benchmark sequences placed more GPUs (openb
    # 6,193.7 -> 6,200.7; disaggregated 3,374.7 -> 3,381.7 and 13,773.3 -> 13,795.3).
    params.cp_model_presolve = False
    params.random_seed = options.random_seed
    params.max_deterministic_time = options.max_deterministic_time
    status = solver.solve(model)
    name = solver.status_name(status)
    num_vars = len(model.proto.variables)
    det = float(solver.response_proto.deterministic_time)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return SolveResult(None, name, 0.0, det, num_vars)
    values = [[int(solver.value(var)) for var in vars_u] for vars_u in b.vars]
    return SolveResult(decode(problem, units, values), name, float(solver.best_objective_bound), det, num_vars)


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


def _racks(b: _Builder) -> None:
    """Opening an empty rack costs tier 3."""
    racks = b.problem.racks
    if racks is None:
        return
    flags: dict[int, cp_model.IntVar] = {}
    for u, unit in enumerate(b.units.units):
        r = int(racks[unit.rep])
        if r < 0 or not b.problem.empty_racks[r]:
            continue
        if r not in flags:
            flags[r] = b.model.new_bool_var("")
            b.cost(flags[r], b.w.of("racks"))
        b.link(u, None, flags[r])


def _unit_costs(b: _Builder) -> None:
    """Per-variable costs: extra pods (tier 1), fragmented GPUs (5), empty nodes (6), stranded GPUs (7), missed
    preferences (8). A class pattern's fragmentation is a constant of the pattern; the per-node model prices it
    with one usable-GPU variable per node (`_node_fragmentation`)."""
    problem, w = b.problem, b.w
    w_missing, w_empty, w_stranded, w_missed = w.of("missing"), w.of("empty"), w.of("stranded"), w.of("missed")
    w_fragmented = w.of("fragmented") if problem.fragile is not None else 0
    gpus = node_gpus(problem)
    gpu_req = problem.req[:, problem.gpu] if problem.gpu is not None else np.zeros(problem.num_groups, np.int64)
    for u, unit in enumerate(b.units.units):
        rep = unit.rep
        empty = int(problem.snapshot.empty[rep])
        pref = problem.pref_cost[:, rep]
        touch_cost = w_empty * empty + w_stranded * int(gpus[rep])
        if b.units.kind == "class":
            patterns = np.asarray(unit.vectors, dtype=np.int64)
            fragmented = np.zeros(len(unit.vectors), dtype=np.int64)
            if w_fragmented:
                fragmented = problem.unusable(problem.snapshot.free[rep] - patterns @ problem.req)
            for var, q, frag in zip(b.vars[u], patterns, fragmented.tolist(), strict=True):
                per_var = -w_stranded * int(q @ gpu_req) + w_missed * int(q @ pref) - w_missing * int(q.sum())
                b.cost(var, touch_cost + w_fragmented * frag + per_var)
            continue
        touched = b.model.new_bool_var("")
        b.link(u, None, touched)
        b.cost(touched, touch_cost)
        _node_capacity(b, u, touched)
        if w_fragmented and problem.fragile is not None and problem.fragile[rep]:
            _node_fragmentation(b, u, touched, w_fragmented)
        for var, vec in zip(b.vars[u], unit.vectors, strict=True):
            g = vec.index(1)
            b.cost(var, -w_stranded * int(gpu_req[g]) + w_missed * int(pref[g]) - w_missing)


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


def _node_fragmentation(b: _Builder, u: int, touched: cp_model.IntVar, weight: int) -> None:
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
    b.cost(touched, weight * free_gpu)
    for var, g in zip(b.vars[u], groups, strict=True):
        b.cost(var, -weight * int(problem.req[g, problem.gpu]))
    b.cost(usable, -weight)
