"""`place`: the pure, deterministic gang placement function tying the stages together.

Stage 1 filters nodes per group, stage 2 enumerates candidate domains at the deciding level, stage 3 runs
greedy in each to rank them (skipping domains whose lower bound already ranks them behind the K best plans),
stage 4 solves CP-SAT over the best K (hinted with greedy), unless greedy's plan meets a lower bound valid for
every placement. How far CP-SAT may overrule greedy is `PlacementOptions.refine`: "structure" only on preferred
violations / empty racks (greedy found none, or CP-SAT's plan has fewer; skipped when greedy sits on those
floors); "all" whenever CP-SAT's plan is cheaper (exact per gang); "auto" (default) is exact inside greedy's
best domain for gangs that are one domain with nothing inside to arrange, and structural for gangs with
sub-scopes or preferences. Measured on
arriving gang sequences (docs/placement-score.md), exactness lost GPUs on the disaggregated gangs (per-role racks)
and gained them on the openb trace gangs (one rack or one pod). No I/O, no clock, no globals: equal inputs give
equal outputs."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from grove_sched.model import (
    BoundPod,
    Code,
    GangRequest,
    ObjectiveBreakdown,
    Placement,
    PlacementOptions,
    SolverStats,
    Status,
    Unschedulable,
)
from grove_sched.placement._cpsat import SolveResult, solve
from grove_sched.placement._domains import (
    Candidates,
    Level,
    beyond_allocatable,
    candidates,
    deciding_level,
    node_reasons,
    whole_cluster,
)
from grove_sched.placement._greedy import MAX_SUBDOMAIN_TRIES, greedy
from grove_sched.placement._objective import TIERS, Weights, domain_room, evaluate, lower_bounds, weights
from grove_sched.placement._problem import InvalidGang, Problem, build_problem
from grove_sched.placement._score import placement_score, score_floors, tier_scales, tier_values
from grove_sched.placement._selectors import SelectorError
from grove_sched.placement._snapshot import BoolArray, CodeArray, IntArray, Snapshot
from grove_sched.placement._units import UnitSet, class_units, node_units


def place(snapshot: Snapshot, gang: GangRequest, options: PlacementOptions | None = None) -> Placement | Unschedulable:
    """Place the minimum of every group (plus as many extras as fit) or explain why that is impossible."""
    opts = options or PlacementOptions()
    try:
        problem = build_problem(snapshot, gang, opts)
    except (InvalidGang, SelectorError) as err:
        return Unschedulable(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(err),)))
    # A scope whose groups need no pod can stay empty; only a needed scope makes a missing key fatal.
    needed = [s for s in problem.required if int(problem.internal_min[list(s.groups)].sum()) > 0]
    unknown = sorted({s.key for s in needed if not (s.domains >= 0).any()})
    if unknown:
        missing = tuple(f"topology key {key} is carried by no node" for key in unknown)
        return Unschedulable(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, missing))
    blocked = node_reasons(problem)
    if blocked:
        # Preemption frees at most a node's allocatable: if even that cannot hold a minimum, nothing can help.
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if beyond_allocatable(problem) else Code.UNSCHEDULABLE
        return Unschedulable(Status(code, blocked))
    try:
        w = weights(problem)
    except OverflowError as err:
        return Unschedulable(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(err),)))
    level = deciding_level(problem, opts.rack_key)
    cands = candidates(problem, level)
    bounds = prune_bounds(problem, cands, w)
    structural, top_k = _refinement(problem, level, opts)
    plans = greedy_plans(problem, cands, w, top_k, opts.max_greedy_domains, bounds)
    if not plans and not level.hard and level.key is not None:
        level = whole_cluster(problem)
        cands = candidates(problem, level)
        bounds = prune_bounds(problem, cands, w)
        plans = greedy_plans(problem, cands, w, top_k, opts.max_greedy_domains, bounds)
    if not plans and cands.ids:  # greedy's second pass, see `MAX_SUBDOMAIN_TRIES`
        plans = greedy_plans(problem, cands, w, top_k, opts.max_greedy_domains, bounds, MAX_SUBDOMAIN_TRIES)
    if not cands.ids:
        return Unschedulable(Status(Code.UNSCHEDULABLE, cands.reasons))
    modelled = _modelled(plans, cands, top_k)
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
    zero = bool(plans) and plans[0][0] == 0  # cost 0 is a lower bound: nothing to improve
    # Greedy's plan at a lower bound valid for every placement is optimal, so there is nothing to solve (the
    # common case for big single-rack gangs and for one-pod gangs).
    at_bound = bool(plans) and plans[0][0] <= _cost_floor(problem, level, cands, bounds, w)
    perfect = zero or at_bound
    floors_ = score_floors(problem, level, cands)
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
            status=result.status
            if result
            else "ZERO_COST"
            if zero
            else "AT_BOUND"
            if at_bound
            else "GREEDY"
            if best is not None
            else "NONE",
            deterministic_time=result.deterministic_time if result else 0.0,
            num_classes=num_units,
            num_variables=result.num_variables if result else 0,
            num_patterns=num_patterns,
            domains_candidate=len(cands.ids),
            domains_modelled=len(modelled),
            model=kind,
        )

    greedy_cost = plans[0][0] if plans else None
    proven = (complete and result is not None and result.status == "OPTIMAL") or at_bound
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
    reasons = _failure_reasons(problem, level, cands, result, opts)
    return Unschedulable(Status(Code.UNSCHEDULABLE, reasons), stats("none"))


def _refinement(problem: Problem, level: Level, opts: PlacementOptions) -> tuple[bool, int]:
    """(whether CP-SAT may only improve the structural tiers, how many domains it models); see
    `PlacementOptions.refine`. "auto" treats a gang that is one domain at the deciding level with nothing inside
    to arrange (no required sub-scope, no preferred scope) exactly, but inside greedy's best domain only: best fit
    picks the domain, which served arriving sequences well, and CP-SAT packs it. Other gangs are structural."""
    if opts.refine != "auto":
        return opts.refine == "structure", opts.top_k_domains
    inner = [scope for scope in problem.required if not (level.hard and scope.key == level.key)]
    if inner or problem.preferred:
        return True, opts.top_k_domains
    return False, 1


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


def greedy_plans(
    problem: Problem, cands: Candidates, w: Weights, top_k: int, max_domains: int, bounds: IntArray, tries: int = 1
) -> list[tuple[int, int, IntArray]]:
    """Greedy in the tightest candidate domains (stopping at a zero-cost plan), ranked by cost then domain name;
    `tries` sub-domains per required scope (`greedy`).

    Only the first `top_k` plans are ever used (the answer and CP-SAT's modelled domains), so a domain
    whose lower bound already ranks it behind that many plans is skipped: the result is the same as running
    greedy everywhere, without the cost of it (a 1,000-pod gang on 16 identical racks ran greedy 16 times)."""
    plans: list[tuple[int, int, IntArray]] = []
    usable = problem.maxpods.max(axis=0) > 0
    names = cands.level.names
    for d in cands.ids[:max_domains]:
        if len(plans) >= top_k:
            key = (int(bounds[d]), names[d])
            if sum((cost, names[dom]) < key for cost, dom, _ in plans) >= top_k:
                continue  # greedy here costs at least the bound, so its plan would rank behind K better ones
        nodes = np.flatnonzero((cands.level.domains == d) & usable)
        local = greedy(problem, nodes, tries)
        if local is not None and local.any():
            counts = np.zeros_like(problem.maxpods)
            counts[:, nodes] = local
            cost = evaluate(problem, local, w, nodes).weighted
            plans.append((cost, d, counts))
            if cost == 0:
                break  # provably optimal; candidates are ordered tightest first, so this keeps the tightest
    plans.sort(key=lambda plan: (plan[0], names[plan[1]]))
    return plans


def prune_bounds(problem: Problem, cands: Candidates, w: Weights) -> IntArray:
    """Per deciding-level domain, a lower bound on the cost of any plan confined to it: the cheap tier floors,
    plus the room tier of every required scope at the deciding level whose groups need pods (such a scope is
    charged exactly its domain's room)."""
    level = cands.level
    bounds = lower_bounds(problem, level.domains, w)
    extra = _stranded_floor(problem, level.domains) * w.of("stranded")
    if not level.hard:
        return np.where(bounds == np.iinfo(np.int64).max, bounds, bounds + extra)
    for s, scope in enumerate(problem.required):
        if scope.key == level.key and int(problem.internal_min[list(scope.groups)].sum()) > 0:
            room = w.rooms[s] if len(w.rooms) == len(problem.required) else domain_room(problem, scope.domains)
            size = min(room.size, extra.size)
            extra[:size] += room[:size] * w.of("room")
    result: IntArray = np.where(bounds == np.iinfo(np.int64).max, bounds, bounds + extra)
    return result


def _cost_floor(problem: Problem, level: Level, cands: Candidates, bounds: IntArray, w: Weights) -> int:
    """A lower bound on the cost of every placement of the gang: with a required deciding level every placement
    lies in one candidate domain, so the least per-domain bound; otherwise the whole cluster's bound."""
    if level.hard:
        return int(bounds[list(cands.ids)].min()) if cands.ids else 0
    whole = np.zeros(problem.snapshot.num_nodes, dtype=np.int32)
    floor = int(lower_bounds(problem, whole, w)[0])
    if floor == np.iinfo(np.int64).max:
        return floor
    return floor + int(_stranded_floor(problem, whole)[0]) * w.of("stranded")


def _stranded_floor(problem: Problem, domains: CodeArray) -> IntArray:
    """Per domain, a floor on stranded GPUs: a group's minimum needs at least ceil(min / most pods one node takes)
    nodes, each leaving at least the domain's least free GPUs, less every GPU the gang could use. Domains where
    a usable node has negative free GPUs get 0 (the tier can be negative there)."""
    count = max(int(domains.max(initial=-1)) + 1, 1)
    result = np.zeros(count, dtype=np.int64)
    if problem.gpu is None:
        return result
    usable = (problem.maxpods.max(axis=0) > 0) & (domains >= 0)
    dom = domains[usable]
    least = np.full(count, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(least, dom, problem.snapshot.free[usable, problem.gpu])
    needed = np.zeros(count, dtype=np.int64)
    for g in range(problem.num_groups):
        if len(problem.parent_of(problem.parent_names[problem.parent[g]])) > 1:
            continue  # a split group's minimum is shared between sub-groups; no per-group claim
        most = np.zeros(count, dtype=np.int64)
        np.maximum.at(most, dom, problem.maxpods[g, usable])
        needed = np.maximum(needed, -(-int(problem.internal_min[g]) // np.maximum(most, 1)))
    used = int((problem.replicas * problem.req[:, problem.gpu]).sum())
    valid = (least >= 0) & (least < np.iinfo(np.int64).max)
    result[valid] = np.maximum(needed[valid] * least[valid] - used, 0)
    return result


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
