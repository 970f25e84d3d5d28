"""A lexicographic CP-SAT solve: the objective is a vector of tier values, most important first.

CP-SAT needs one integer objective within int64. Weighing every tier so that each weight exceeds the largest total
of every tier below it multiplies the tiers' ranges, which overflowed from about 10,000 nodes when the ranges were
taken over the whole cluster. Here the weights come from the problem's own bounds where they fit (the weights the
benchmark results were measured with: CP-SAT's search under a time limit depends on them), else from the ranges
of the model's own terms (a few domains: small), grouped into stages that each fit int64. The stages are solved
in order, each one's optimum (or best value found within the time left) fixed as a constraint before the next,
with the solution so far as the hint. Every stage shares the deterministic time limit, so answers stay
reproducible.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from grove_sched.model import PlacementOptions
from grove_sched.placement._objective import IMPOSSIBLE, TIERS, Key, Layout

STAGE_LIMIT = 2**62
"""A stage's weighted objective stays below this magnitude (CP-SAT rejects models that could overflow int64)."""

Stage = list[tuple[int, int, int, int]]
"""(key position, weight, lowest, highest) per tier value of a stage; lowest/highest bound the value's terms."""


@dataclass(frozen=True, slots=True)
class Solved:
    """Variable values of the last solution (None: none found), the status, whether every stage was proven
    optimal, the deterministic time spent and the number of stages."""

    values: list[int] | None
    status: str
    optimal: bool
    deterministic_time: float
    stages: int


def solve_lexicographically(
    model: cp_model.CpModel,
    terms: Sequence[Mapping[int, int]],
    offsets: Sequence[int],
    lay: Layout,
    weights: list[int] | None,
    floor: Key,
    options: PlacementOptions,
) -> Solved:
    """Minimise the tier vector whose value at key position p is `sum(c * var[v] for v, c in terms[p]) +
    offsets[p]`: in one solve with `weights` (problem-wide, see the module docstring) when given, else in the
    model's own stages. `floor` bounds every value from below."""
    uppers = _upper_bounds(model)
    if weights is not None and _magnitude(terms, weights, uppers) < STAGE_LIMIT:
        single = [(pos, weights[pos], 0, 0) for pos in range(lay.width) if terms[pos]]
        return _run(model, terms, offsets, lay, floor, [single], weights, options)
    return _run(model, terms, offsets, lay, floor, stages(model, terms), None, options)


def _upper_bounds(model: cp_model.CpModel) -> list[int]:
    """Each variable's upper bound (every variable of these models is bounded below by 0)."""
    uppers = []
    for variable in model.proto.variables:
        domain = variable.domain
        uppers.append(int(domain[len(domain) - 1]))  # the proto's lists return 0 for a negative index
    return uppers


def _magnitude(terms: Sequence[Mapping[int, int]], weights: Sequence[int], uppers: Sequence[int]) -> int:
    """What CP-SAT's overflow check sums for the weighted objective: every term's |coefficient| times its
    variable's bound. The problem-wide weights bound each tier's value, not this sum (a tier whose terms cancel,
    such as GPUs stranded = free GPUs on the nodes used less those requested, has a larger absolute sum), so a
    model whose weights fit can still be refused as a possible overflow (MODEL_INVALID); it is then solved in
    its own stages."""
    total: dict[int, int] = defaultdict(int)
    for position, value_terms in enumerate(terms):
        for v, c in value_terms.items():
            total[v] += weights[position] * c
    return sum(abs(c) * uppers[v] for v, c in total.items())


def stages(model: cp_model.CpModel, terms: Sequence[Mapping[int, int]]) -> list[Stage]:
    """Tier values grouped into stages, most important first, each weight exceeding the weighted range of every
    later value of its stage and each stage's weighted range staying within `STAGE_LIMIT`. Values no variable
    moves are left out (they are constants)."""
    uppers = _upper_bounds(model)
    ranges = []
    for position, value_terms in enumerate(terms):
        lowest = sum(c * uppers[v] for v, c in value_terms.items() if c < 0)
        highest = sum(c * uppers[v] for v, c in value_terms.items() if c > 0)
        if highest > lowest:
            ranges.append((position, lowest, highest))
    grouped: list[list[tuple[int, int, int]]] = []
    product = STAGE_LIMIT
    for position, lowest, highest in ranges:
        spread = highest - lowest
        if product * (spread + 1) >= STAGE_LIMIT:
            grouped.append([])
            product = 1
        grouped[-1].append((position, lowest, highest))
        product *= spread + 1
    out = []
    for group in grouped:
        weight = 1
        weighted = []
        for position, lowest, highest in reversed(group):
            weighted.append((position, weight, lowest, highest))
            weight *= highest - lowest + 1
        out.append(list(reversed(weighted)))
    return out


def _run(
    model: cp_model.CpModel,
    terms: Sequence[Mapping[int, int]],
    offsets: Sequence[int],
    lay: Layout,
    floor: Key,
    plan: list[Stage],
    weights: list[int] | None,
    options: PlacementOptions,
) -> Solved:
    plan = plan or [[]]  # nothing to optimise: one feasibility solve
    spent = 0.0
    optimal = True
    solver = cp_model.CpSolver()
    values: list[int] | None = None
    name = "UNKNOWN"
    for k, stage in enumerate(plan):
        coeffs: dict[int, int] = defaultdict(int)
        for position, weight, _, _ in stage:
            for v, c in terms[position].items():
                coeffs[v] += weight * c
        objective = model.proto.objective
        objective.vars.clear()
        objective.coeffs.clear()
        objective.domain.clear()
        objective.vars.extend(v for v, c in coeffs.items() if c)
        objective.coeffs.extend(c for c in coeffs.values() if c)
        offset, domain = _domain(offsets, lay, stage, floor, weights)
        objective.offset = float(offset)
        objective.domain.extend(domain)
        params = solver.parameters
        params.num_workers = 1
        params.cp_model_probing_level = 0
        # Presolve cost more than it saved on these small class models: off, the mixed 3/5/2-GPU gang solves in
        # ~60% of the time to the same optima (placement_speed), and the benchmark sequences placed more GPUs
        # (openb 6,193.7 -> 6,200.7; disaggregated 3,374.7 -> 3,381.7 and 13,773.3 -> 13,795.3).
        params.cp_model_presolve = False
        params.random_seed = options.random_seed
        params.max_deterministic_time = max((options.max_deterministic_time - spent) / (len(plan) - k), 1e-4)
        status = solver.solve(model)
        spent += float(solver.response_proto.deterministic_time)
        name = solver.status_name(status)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            if values is None:
                return Solved(None, name, False, spent, len(plan))
            optimal = False
            break
        values = [int(x) for x in solver.response_proto.solution]
        optimal = optimal and status == cp_model.OPTIMAL
        if k + 1 < len(plan):  # fix this stage at what it reached; hint the next with the whole solution
            reached = sum(c * values[v] for v, c in coeffs.items())
            stage_vars = [model.get_int_var_from_proto_index(v) for v in coeffs]
            model.add(cp_model.LinearExpr.weighted_sum(stage_vars, list(coeffs.values())) <= reached)
            model.clear_hints()  # type: ignore[no-untyped-call]
            for v, value in enumerate(values):
                model.add_hint(model.get_int_var_from_proto_index(v), value)
    status_name = "OPTIMAL" if optimal else ("FEASIBLE" if name in ("OPTIMAL", "FEASIBLE") else name)
    return Solved(values, status_name, optimal, spent, len(plan))


def _domain(
    offsets: Sequence[int], lay: Layout, stage: Stage, floor: Key, weights: list[int] | None
) -> tuple[int, list[int]]:
    """A stage objective's offset and domain. The domain starts at the floor (each value's terms reach at least
    its floor less its offset), so CP-SAT stops once a solution gets there. With the problem-wide weights the top
    is 0 (no plan costs more than placing nothing: one more pod outweighs every lower tier) and the floor counts
    the missing-pod and opening tiers, as measured; a stage of the model's own weights spans its exact range."""
    usable = bool(floor) and max(floor) < IMPOSSIBLE
    if weights is not None:
        offset = sum(w * off for w, off in zip(weights, offsets, strict=True))
        low = 0
        if usable:
            for name in ("missing", "domains", "empty"):
                start = lay.start(name)
                for position in range(start, start + lay.sizes[TIERS.index(name)]):
                    low += weights[position] * floor[position]
        return offset, [max(min(low - offset, 0), -STAGE_LIMIT), 0]
    if not stage:
        return 0, []
    lowest = sum(weight * low_t for _, weight, low_t, _ in stage)
    highest = sum(weight * high_t for _, weight, _, high_t in stage)
    least = lowest
    if usable:
        least = sum(weight * max(floor[pos] - offsets[pos], low_t) for pos, weight, low_t, _ in stage)
    return 0, [max(lowest, min(least, highest)), highest]
