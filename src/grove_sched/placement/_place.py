"""`place`: the pure, deterministic gang placement function tying the stages together.

Stage 1 filters nodes per group, stage 2 enumerates candidate domains at the deciding level, stage 3 runs
greedy in each to rank them (skipping domains whose lower bound already ranks them behind the K best plans),
stage 4 solves CP-SAT over the best K (hinted with greedy), unless greedy's plan meets a lower bound valid for
every placement. How far CP-SAT may overrule greedy is `PlacementOptions.refine`: "structure" only on
preferred violations / empty racks (greedy found none, or CP-SAT's plan has fewer and chooses required domains
with no more room: a structural gain bought with emptier racks placed fewer GPUs on arriving sequences; skipped
when greedy sits on those floors); "all" whenever CP-SAT's plan is cheaper (exact per gang); "auto" (default) is
exact inside greedy's best domain for gangs that are one domain with nothing inside to arrange, and structural
for gangs with sub-scopes or preferences. Measured on arriving gang sequences (docs/placement-score.md),
exactness lost GPUs on the disaggregated gangs (per-role racks) and gained them on the openb trace gangs (one
rack or one pod). No I/O, no clock, no globals: equal inputs give equal outputs."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from grove_sched.model import (
    BoundPod,
    Code,
    GangRequest,
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
    broader_level,
    candidates,
    deciding_level,
    node_reasons,
)
from grove_sched.placement._greedy import MAX_SUBDOMAIN_TRIES, greedy
from grove_sched.placement._objective import Key, Layout, bound_rows, evaluate, layout, least_row
from grove_sched.placement._problem import InvalidGang, Problem, build_problem
from grove_sched.placement._score import banded_score, score_floors, tier_scales
from grove_sched.placement._selectors import SelectorError
from grove_sched.placement._snapshot import BoolArray, IntArray, Snapshot
from grove_sched.placement._units import UnitSet, class_units, node_units

ALTERNATIVES = 3
"""Other placements `place` hands a look-ahead: greedy's plans in the next best candidate domains."""


def place(
    snapshot: Snapshot,
    gang: GangRequest,
    options: PlacementOptions | None = None,
    alternatives: list[Placement] | None = None,
) -> Placement | Unschedulable:
    """Place the minimum of every group (plus as many extras as fit) or explain why that is impossible.

    A list passed as `alternatives` receives the other good placements found on the way, best first (greedy's
    plans in up to `ALTERNATIVES` other candidate domains, and greedy's plan when CP-SAT's is the answer): what
    a look-ahead over the queue chooses among (`_lookahead`)."""
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
    level = deciding_level(problem)
    structural, top_k = _refinement(problem, level, opts)
    wanted = top_k if alternatives is None else max(top_k, ALTERNATIVES + 1)
    cands = candidates(problem, level)
    bounds = prune_bounds(problem, cands)
    plans = greedy_plans(problem, cands, wanted, opts.max_greedy_domains, bounds)
    while not plans and not level.hard:  # a preferred level falls back to broader domains, then the cluster
        broader = broader_level(problem, level)
        if broader is None:
            break
        level = broader
        cands = candidates(problem, level)
        bounds = prune_bounds(problem, cands)
        plans = greedy_plans(problem, cands, wanted, opts.max_greedy_domains, bounds)
    if not plans and cands.ids:  # greedy's second pass, see `MAX_SUBDOMAIN_TRIES`
        plans = greedy_plans(problem, cands, wanted, opts.max_greedy_domains, bounds, MAX_SUBDOMAIN_TRIES)
    if not cands.ids:
        return Unschedulable(Status(Code.UNSCHEDULABLE, cands.reasons))
    modelled = _modelled(plans, cands, top_k)
    usable = problem.usable
    if not level.hard and len(modelled) == len(cands.ids):
        in_model = usable  # every soft candidate fits the budget: let the model spread over the whole cluster
    else:
        in_model = usable & np.isin(level.domains, modelled)
    scope = np.isin(level.domains, cands.ids) if level.hard else np.ones_like(usable)
    complete = not (usable & scope & ~in_model).any()
    best = plans[0].counts(problem) if plans else None
    result: SolveResult | None = None
    kind, num_units, num_patterns = "none", 0, 0
    greedy_cost = plans[0].cost if plans else None
    zero = greedy_cost is not None and not any(greedy_cost)  # every tier at 0: nothing to improve
    # Greedy's plan at a lower bound valid for every placement is optimal, so there is nothing to solve (the
    # common case for big single-rack gangs and for one-pod gangs).
    floor = _cost_floor(problem, level, cands, bounds)
    at_bound = greedy_cost is not None and greedy_cost <= floor
    perfect = zero or at_bound
    floors_ = score_floors(problem, level, cands)
    lay = layout(problem)
    # In "structure" mode CP-SAT may only beat greedy on the structural tiers; when greedy already sits on their
    # floors there is nothing it is allowed to improve, so the solve is skipped.
    settled = structural and greedy_cost is not None and _structure(greedy_cost, lay) <= _structure(floors_, lay)
    # Greedy's plan at a lower bound of every placement on the modelled nodes is what CP-SAT would prove optimal
    # there, so its solve can only confirm it (6 CPU-bound pods in a rack: 50 ms of CPU per gang for nothing).
    model_floor: Key | None = None
    if opts.use_cpsat and not perfect and not settled and in_model.any():
        model_floor = _model_floor(problem, level, modelled, in_model)
    at_model_bound = model_floor is not None and greedy_cost is not None and greedy_cost <= model_floor
    if model_floor is not None and not at_model_bound:
        units, restricted = _units(problem, in_model, best, opts)
        complete = complete and not restricted
        kind, num_units, num_patterns = units.kind, len(units.units), units.num_patterns
        result = solve(problem, units, best, opts, model_floor)

    def stats(path: str) -> SolverStats:
        return SolverStats(
            path=path,
            status=result.status
            if result
            else "ZERO_COST"
            if zero
            else "AT_BOUND"
            if at_bound
            else "AT_MODEL_BOUND"
            if at_model_bound
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
            stages=result.stages if result else 0,
        )

    solved = (result is not None and result.optimal) or at_model_bound
    rest = _rest_floor(problem, level, cands, modelled, bounds)
    if result is not None and result.counts is not None and result.counts.any():
        cp = evaluate(problem, result.counts).key
        better = greedy_cost is None or cp < greedy_cost
        if better and structural and greedy_cost is not None:
            room = lay.start("room")  # a structural gain may not cost rack-level best fit (module docstring)
            better = _structure(cp, lay) < _structure(greedy_cost, lay) and cp[room] <= greedy_cost[room]
        if better:
            proven = solved and (complete or rest >= cp)
            if alternatives is not None:
                alternatives += _others(problem, plans, None, stats("greedy"), floors_)
            return _placement(problem, result.counts, stats("cpsat"), proven, floors_)
        # CP-SAT's proof covers greedy's plan only if greedy's plan is no costlier than the proven optimum
        solved = solved and greedy_cost is not None and greedy_cost <= cp
    if best is not None and greedy_cost is not None:
        proven = at_bound or zero or (solved and (complete or rest >= greedy_cost))
        if alternatives is not None:
            alternatives += _others(problem, plans, plans[0], stats("greedy"), floors_)
        return _placement(problem, best, stats("greedy"), proven, floors_)
    reasons = _failure_reasons(problem, level, cands, result, opts)
    return Unschedulable(Status(Code.UNSCHEDULABLE, reasons), stats("none"))


def _others(
    problem: Problem, plans: list[Plan], answer: Plan | None, stats: SolverStats, floors_: Key
) -> list[Placement]:
    """Greedy's plans other than the `answer`, best first, at most `ALTERNATIVES` (none is claimed optimal)."""
    rest = [plan for plan in plans if plan is not answer][:ALTERNATIVES]
    return [_placement(problem, plan.counts(problem), stats, False, floors_) for plan in rest]


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


def _structure(key: Key, lay: Layout) -> Key:
    """The structural tiers CP-SAT may improve on in "structure" mode: preferred domains, empty domains."""
    start = lay.start("violations")
    return key[start : lay.start("room")]


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
    """Nodes sharing a required-scope domain (or, without required scopes, a narrowest grouping domain) with the
    plan's nodes."""
    touched = counts.sum(axis=0) > 0
    near = np.zeros(problem.snapshot.num_nodes, dtype=np.bool_)
    for scope in problem.required:
        used = counts[list(scope.groups)].sum(axis=0) > 0
        near |= np.isin(scope.domains, np.unique(scope.domains[used])) & (scope.domains >= 0)
    levels = problem.levels
    if not problem.required and levels.grouping:
        dom = levels.domains[levels.grouping[-1]]
        near |= np.isin(dom, np.unique(dom[touched])) & (dom >= 0)
    result: BoolArray = near | touched
    return result


def _model_floor(problem: Problem, level: Level, modelled: list[int], in_model: BoolArray) -> Key:
    """A cheap lower bound on the cost of any placement on the modelled nodes."""
    if level.hard:
        return least_row(bound_rows(problem, level.domains, level.index)[modelled])
    return least_row(bound_rows(problem, np.where(in_model, 0, -1).astype(np.int32)))


def _rest_floor(problem: Problem, level: Level, cands: Candidates, modelled: list[int], bounds: IntArray) -> Key:
    """A lower bound on the cost of every placement outside the modelled domains (a required deciding level) or
    anywhere (a soft one): what a plan must beat for CP-SAT's proof over the modelled nodes to cover it."""
    if level.hard:
        rest = [d for d in cands.ids if d not in modelled]
        return least_row(bounds[rest]) if rest else (np.iinfo(np.int64).max,)
    return least_row(bound_rows(problem, problem.whole))


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


def _modelled(plans: list[Plan], cands: Candidates, k: int) -> list[int]:
    """The K domains for CP-SAT: greedy's best first, then untried candidates (greedy may miss a packing)."""
    chosen = [plan.domain for plan in plans[:k]]
    if not plans:
        return list(cands.ids)
    for d in cands.ids:
        if len(chosen) >= k:
            break
        if d not in chosen:
            chosen.append(d)
    return chosen


class Plan(NamedTuple):
    """Greedy's plan in one candidate domain: its cost, the domain, and pods per (internal group, node of `nodes`).

    Kept on the domain's own nodes: a cluster-wide counts array per plan (groups x 50,000 nodes zeroed for each of
    16 candidate blocks) was an eighth of a many-block gang's placement time; only the answer needs one."""

    cost: Key
    domain: int
    nodes: IntArray
    local: IntArray

    def counts(self, problem: Problem) -> IntArray:
        """Pods per (internal group, node) over the whole cluster."""
        counts = np.zeros_like(problem.maxpods)
        counts[:, self.nodes] = self.local
        return counts


def greedy_plans(
    problem: Problem, cands: Candidates, top_k: int, max_domains: int, bounds: IntArray, tries: int = 1
) -> list[Plan]:
    """Greedy in the tightest candidate domains (stopping at a zero-cost plan), ranked by cost key then domain
    name; `tries` sub-domains per required scope (`greedy`).

    Only the first `top_k` plans are ever used (the answer and CP-SAT's modelled domains), so a domain
    whose lower bound already ranks it behind that many plans is skipped: the result is the same as running
    greedy everywhere, without the cost of it (a 1,000-pod gang on 16 identical racks ran greedy 16 times)."""
    plans: list[Plan] = []
    usable = problem.usable
    names = cands.level.names
    for d in cands.ids[:max_domains]:
        if len(plans) >= top_k:
            key = (tuple(int(x) for x in bounds[d]), names[d], d)
            if sum((plan.cost, names[plan.domain], plan.domain) < key for plan in plans) >= top_k:
                continue  # greedy here costs at least the bound, so its plan would rank behind K better ones
        nodes = np.flatnonzero((cands.level.domains == d) & usable)
        local = greedy(problem, nodes, tries)
        if local is not None and local.any():
            cost = evaluate(problem, local, nodes).key
            plans.append(Plan(cost, d, nodes, local))
            if not any(cost):
                break  # provably optimal; candidates are ordered tightest first, so this keeps the tightest
    plans.sort(key=lambda plan: (plan.cost, names[plan.domain], plan.domain))
    return plans


def prune_bounds(problem: Problem, cands: Candidates) -> IntArray:
    """Per deciding-level domain, a row of lower bounds on every tier value of any plan confined to it (see
    `bound_rows`; a required deciding level's scopes are charged their domain's room exactly)."""
    level = cands.level
    return bound_rows(problem, level.domains, level.index if level.hard else None)


def _cost_floor(problem: Problem, level: Level, cands: Candidates, bounds: IntArray) -> Key:
    """A lower bound on the cost of every placement of the gang: with a required deciding level every placement
    lies in one candidate domain, so the least per-domain bound; otherwise the whole cluster's bound."""
    if level.hard:
        return least_row(bounds[list(cands.ids)]) if cands.ids else ()
    return least_row(bound_rows(problem, problem.whole))


def _placement(problem: Problem, counts: IntArray, stats: SolverStats, proven: bool, tier_floors: Key) -> Placement:
    """Hand concrete pods (name order) to nodes (name order) and compute the score."""
    assignments: dict[str, str] = {}
    names = problem.snapshot.node_names
    for g in range(problem.num_groups):
        pods = iter(problem.pods[g])
        for node in np.flatnonzero(counts[g]):
            for _ in range(int(counts[g, node])):
                assignments[next(pods)] = names[int(node)]
    objective = evaluate(problem, counts)
    key = objective.key
    score = banded_score(key, tier_floors, tier_scales(problem), layout(problem), proven or not any(key))
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
        names = problem.levels.names[scope.level]
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
        names = problem.levels.names[scope.level]
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
