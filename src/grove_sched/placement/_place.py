"""`place`: the pure, deterministic gang placement function tying the stages together.

Stage 1 filters nodes per group, stage 2 enumerates candidate domains at the deciding level, stage 3 runs
greedy in each to rank them, stage 4 solves CP-SAT over the best K (hinted with greedy). By default
(`refine="structure"`) CP-SAT's plan replaces greedy's only when greedy found none or CP-SAT's plan has fewer
preferred-domain violations or opened empty racks; when greedy already sits on those tiers' floors the solve is
skipped. Measured on arriving gang sequences, taking CP-SAT's exact per-gang optimum of the lower tiers placed
fewer GPUs in total than greedy's best fit, so exactness there is opt-in (`refine="all"`). No I/O, no clock,
no globals: equal inputs give equal outputs."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from grove_sched.model import (
    BoundPod,
    GangRequest,
    ObjectiveBreakdown,
    Placement,
    PlacementOptions,
    SolverStats,
    Unschedulable,
)
from grove_sched.placement._cpsat import SolveResult, solve
from grove_sched.placement._domains import Candidates, Level, candidates, deciding_level, node_reasons, whole_cluster
from grove_sched.placement._greedy import greedy
from grove_sched.placement._objective import TIERS, Weights, evaluate, lower_bounds, weights
from grove_sched.placement._problem import InvalidGang, Problem, build_problem
from grove_sched.placement._score import placement_score, score_floors, tier_scales, tier_values
from grove_sched.placement._selectors import SelectorError
from grove_sched.placement._snapshot import BoolArray, IntArray, Snapshot
from grove_sched.placement._units import UnitSet, class_units, node_units


def place(snapshot: Snapshot, gang: GangRequest, options: PlacementOptions | None = None) -> Placement | Unschedulable:
    """Place the minimum of every group (plus as many extras as fit) or explain why that is impossible."""
    opts = options or PlacementOptions()
    try:
        problem = build_problem(snapshot, gang, opts)
    except (InvalidGang, SelectorError) as err:
        return Unschedulable((str(err),))
    # A scope whose groups need no pod can stay empty; only a needed scope makes a missing key fatal.
    needed = [s for s in problem.required if int(problem.internal_min[list(s.groups)].sum()) > 0]
    unknown = sorted({s.key for s in needed if not (s.domains >= 0).any()})
    if unknown:
        return Unschedulable(tuple(f"topology key {key} is carried by no node" for key in unknown))
    blocked = node_reasons(problem)
    if blocked:
        return Unschedulable(blocked)
    try:
        w = weights(problem)
    except OverflowError as err:
        return Unschedulable((str(err),))
    level = deciding_level(problem, opts.rack_key)
    cands = candidates(problem, level)
    plans = _greedy_plans(problem, cands, w, opts)
    if not plans and not level.hard and level.key is not None:
        level = whole_cluster(problem)
        cands = candidates(problem, level)
        plans = _greedy_plans(problem, cands, w, opts)
    if not cands.ids:
        return Unschedulable(cands.reasons)
    modelled = _modelled(plans, cands, opts.top_k_domains)
    usable = problem.maxpods.max(axis=0) > 0
    if not level.hard and len(modelled) == len(cands.ids):
        in_model = usable  # every soft candidate fits the budget: let the model spread over the whole cluster
    else:
        in_model = usable & np.isin(level.domains, modelled)
    scope = np.isin(level.domains, cands.ids) if level.hard else np.ones_like(usable)
    complete = not (usable & scope & ~in_model).any()
    best = plans[0][2] if plans else None
    result: SolveResult | None = None
    kind, num_units, num_patterns = "none", 0, 0
    perfect = bool(plans) and plans[0][0] == 0  # cost 0 is a lower bound: nothing to improve
    floors_ = score_floors(problem, level, cands)
    structural = opts.refine == "structure"
    # In "structure" mode CP-SAT may only beat greedy on the structural tiers; when greedy already sits on their
    # floors there is nothing it is allowed to improve, so the solve is skipped.
    settled = structural and bool(plans) and _structure(evaluate(problem, plans[0][2], w)) <= _structure_floor(floors_)
    if opts.use_cpsat and not perfect and not settled and in_model.any():
        floor = _model_floor(problem, level, modelled, in_model, w)
        units, restricted = _units(problem, in_model, best, opts)
        complete = complete and not restricted
        kind, num_units, num_patterns = units.kind, len(units.units), units.num_patterns
        result = solve(problem, units, w, best, opts, floor)

    def stats(path: str) -> SolverStats:
        return SolverStats(
            path=path,
            status=result.status if result else ("ZERO_COST" if perfect else "GREEDY" if best is not None else "NONE"),
            deterministic_time=result.deterministic_time if result else 0.0,
            num_classes=num_units,
            num_variables=result.num_variables if result else 0,
            num_patterns=num_patterns,
            domains_candidate=len(cands.ids),
            domains_modelled=len(modelled),
            model=kind,
        )

    greedy_cost = plans[0][0] if plans else None
    proven = complete and result is not None and result.status == "OPTIMAL"
    if result is not None and result.counts is not None and result.counts.any():
        cp = evaluate(problem, result.counts, w)
        better = best is None or greedy_cost is None or cp.weighted < greedy_cost
        if better and structural and best is not None:
            better = _structure(cp) < _structure(evaluate(problem, best, w))
        if better:
            bound = _global_bound(problem, level, cands, modelled, in_model, complete, result, w)
            return _placement(problem, result.counts, w, stats("cpsat"), proven, bound, floors_)
        # CP-SAT's proof covers greedy's plan only if greedy's plan is no costlier than the proven optimum
        proven = proven and greedy_cost is not None and greedy_cost <= cp.weighted
    if best is not None:
        bound = _global_bound(problem, level, cands, modelled, in_model, complete, result, w)
        return _placement(problem, best, w, stats("greedy"), proven, bound, floors_)
    return Unschedulable(_failure_reasons(problem, level, cands, result, opts), stats("none"))


def _structure(objective: ObjectiveBreakdown) -> tuple[int, int]:
    """The structural tiers CP-SAT may improve on in "structure" mode: preferred violations, empty racks."""
    return (objective.preferred_domain_violations, objective.empty_racks_opened)


def _structure_floor(tier_floors: tuple[int, ...]) -> tuple[int, int]:
    """The floors of the structural tiers."""
    return (tier_floors[TIERS.index("violations")], tier_floors[TIERS.index("racks")])


def _units(
    problem: Problem, in_model: BoolArray, best: IntArray | None, opts: PlacementOptions
) -> tuple[UnitSet, bool]:
    """Decision units over the modelled nodes; if there are too many classes to solve within budget, only
    around the greedy plan (its domains at every constrained level). The flag says whether that happened."""
    nodes = np.flatnonzero(in_model)
    units = class_units(problem, nodes, opts.max_patterns) or node_units(problem, nodes)
    if len(units.units) <= opts.max_classes or best is None:
        return units, False
    nodes = np.flatnonzero(in_model & _neighbourhood(problem, best))
    return class_units(problem, nodes, opts.max_patterns) or node_units(problem, nodes), True


def _neighbourhood(problem: Problem, counts: IntArray) -> BoolArray:
    """Nodes sharing a required-scope domain (or, without required scopes, a rack) with the plan's nodes."""
    touched = counts.sum(axis=0) > 0
    near = np.zeros(problem.snapshot.num_nodes, dtype=np.bool_)
    for scope in problem.required:
        used = counts[list(scope.groups)].sum(axis=0) > 0
        near |= np.isin(scope.domains, np.unique(scope.domains[used])) & (scope.domains >= 0)
    if not problem.required and problem.racks is not None:
        near |= np.isin(problem.racks, np.unique(problem.racks[touched])) & (problem.racks >= 0)
    result: BoolArray = near | touched
    return result


def _model_floor(problem: Problem, level: Level, modelled: list[int], in_model: BoolArray, w: Weights) -> int:
    """A cheap lower bound on the cost of any placement on the modelled nodes."""
    if level.hard:
        return int(lower_bounds(problem, level.domains, w)[modelled].min())
    return int(lower_bounds(problem, np.where(in_model, 0, -1).astype(np.int32), w)[0])


def _global_bound(
    problem: Problem,
    level: Level,
    cands: Candidates,
    modelled: list[int],
    in_model: BoolArray,
    complete: bool,
    result: SolveResult | None,
    w: Weights,
) -> float:
    """A lower bound on the cost of every feasible placement: CP-SAT's bound (or a cheap one) over the modelled
    nodes, combined with cheap per-domain bounds for whatever was left out."""
    if level.hard:
        per_domain = lower_bounds(problem, level.domains, w)
        cheap_model = float(per_domain[modelled].min())
        rest = [d for d in cands.ids if d not in modelled]
        cheap_rest = float(per_domain[rest].min()) if rest else float("inf")
    else:
        one = np.where(in_model, 0, -1).astype(np.int32)
        cheap_model = float(lower_bounds(problem, one, w)[0])
        everywhere = np.zeros(problem.snapshot.num_nodes, dtype=np.int32)
        cheap_rest = float(lower_bounds(problem, everywhere, w)[0])
    model_bound = cheap_model
    if result is not None and result.counts is not None:
        model_bound = result.bound if complete else min(result.bound, cheap_model)
    return min(max(model_bound, 0.0), float("inf") if complete else cheap_rest)


def assumed_pods(gang: GangRequest, placement: Placement) -> tuple[BoundPod, ...]:
    """The gang's placed pods as BoundPods, for `Snapshot.with_assumed` before the binds complete."""
    pods: list[BoundPod] = []
    for group in gang.groups:
        for pod in group.pods:
            node = placement.assignments.get(pod.name)
            if node is not None:
                requests = pod.requests if pod.requests is not None else group.requests
                anti = group.pod_anti_affinity
                pods.append(BoundPod(pod.name, gang.namespace, node, group.labels, requests, anti))
    return tuple(pods)


def _modelled(plans: list[tuple[int, int, IntArray]], cands: Candidates, k: int) -> list[int]:
    """The K domains for CP-SAT: greedy's best first, then untried candidates (greedy may miss a packing)."""
    chosen = [d for _, d, _ in plans[:k]]
    if not plans:
        return list(cands.ids)
    for d in cands.ids:
        if len(chosen) >= k:
            break
        if d not in chosen:
            chosen.append(d)
    return chosen


def _greedy_plans(
    problem: Problem, cands: Candidates, w: Weights, opts: PlacementOptions
) -> list[tuple[int, int, IntArray]]:
    """Greedy in the tightest candidate domains (stopping at a zero-cost plan), ranked by cost then domain name."""
    plans: list[tuple[int, int, IntArray]] = []
    usable = problem.maxpods.max(axis=0) > 0
    for d in cands.ids[: opts.max_greedy_domains]:
        nodes = np.flatnonzero((cands.level.domains == d) & usable)
        local = greedy(problem, nodes)
        if local is not None and local.any():
            counts = np.zeros_like(problem.maxpods)
            counts[:, nodes] = local
            cost = evaluate(problem, local, w, nodes).weighted
            plans.append((cost, d, counts))
            if cost == 0:
                break  # provably optimal; candidates are ordered tightest first, so this keeps the tightest
    plans.sort(key=lambda plan: (plan[0], cands.level.names[plan[1]]))
    return plans


def _placement(
    problem: Problem,
    counts: IntArray,
    w: Weights,
    stats: SolverStats,
    proven: bool,
    bound: float,
    tier_floors: tuple[int, ...],
) -> Placement:
    """Hand concrete pods (name order) to nodes (name order) and compute the score."""
    assignments: dict[str, str] = {}
    names = problem.snapshot.node_names
    for g in range(problem.num_groups):
        pods = iter(problem.pods[g])
        for node in np.flatnonzero(counts[g]):
            for _ in range(int(counts[g, node])):
                assignments[next(pods)] = names[int(node)]
    objective = evaluate(problem, counts, w)
    cost = objective.weighted
    score = placement_score(
        tier_values(objective), tier_floors, tier_scales(problem), proven or cost <= 0 or bound >= cost
    )
    return Placement(
        assignments=MappingProxyType(dict(sorted(assignments.items()))),
        domains=_domains(problem, counts),
        objective=objective,
        score=score,
        stats=stats,
    )


def _domains(problem: Problem, counts: IntArray) -> Mapping[str, str]:
    """Chosen domain(s) per topology scope, as label values."""
    out: dict[str, str] = {}
    for scope in problem.required + problem.preferred:
        used = counts[list(scope.groups)].sum(axis=0) > 0
        names = problem.snapshot.domain_names(scope.key)
        ids = sorted({int(d) for d in scope.domains[used]})
        out[f"{scope.name} {scope.key}"] = ",".join(names[d] if d < len(names) else "<unlabelled>" for d in ids)
    return MappingProxyType(out)


def _failure_reasons(
    problem: Problem, level: Level, cands: Candidates, result: SolveResult | None, opts: PlacementOptions
) -> tuple[str, ...]:
    """Explain a gang that passed the aggregate check but has no plan."""
    where = f"{len(cands.ids)} candidate {level.key} domain(s)" if level.key else "the cluster"
    reasons = [f"no placement of gang {problem.gang.name} satisfies every required constraint in {where}"]
    for scope in problem.required:
        if scope.key == level.key:
            continue
        dom = scope.domains
        names = problem.snapshot.domain_names(scope.key)
        labelled = dom >= 0
        if not labelled.any():
            reasons.append(f"topology key {scope.key} is carried by no node")
            continue
        for g in scope.groups:
            need = int(problem.internal_min[g])
            slots = np.bincount(dom[labelled], weights=problem.maxpods[g, labelled], minlength=len(names))
            if need and slots.max() < need:
                best = int(np.argmax(slots))
                reasons.append(
                    f"no {scope.key} domain has {need} free slots for pods of group {problem.names[g]} "
                    f"({scope.name}; best: {names[best]} with {int(slots[best])})"
                )
    if result is not None and result.status not in ("INFEASIBLE", "MODEL_INVALID"):
        reasons.append(
            f"the solver found no placement within its deterministic time limit of {opts.max_deterministic_time} "
            f"(status {result.status})"
        )
    return tuple(reasons)
