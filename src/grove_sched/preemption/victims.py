"""Victim selection: which lower-priority whole gangs to evict so that a preemptor gang fits with its topology.

Pure and deterministic (a snapshot, the preemptor's request and the candidate victims in; a `Selection` or None
out). The real placement function `place` is the oracle of "fits": a victim set is acceptable only when `place`
finds the preemptor a placement on the snapshot without the victims' pods, so every constraint placement honours
(filters, affinity, required and preferred topology) is honoured here too.

Victims are whole gangs: every bound pod of a chosen gang is evicted, never part of one. The one exception keeps
gangs whole too: a gang running pods above its minimum offers those extras as a candidate of their own
(`whole=False`; they are best effort, so taking them leaves the gang at its minimum), which counts towards the
priority and GPU tiers but not the number of victim gangs, so extras go before whole gangs of the same priority.
Only gangs of strictly lower priority are candidates. Among acceptable sets the choice minimises,
lexicographically (`Cost`):

1. the highest victim priority: the lowest priority threshold whose gangs, all evicted, let the preemptor fit;
2. the number of victim gangs, then 3. the GPUs evicted: per candidate domain of the preemptor's required
   topology key (the whole cluster without one), a CP-SAT model chooses victims jointly with how many pods of each
   group go on each node of the domain (node capacity = free + what the chosen victims free there; the per-node
   pod limits come from the same `build_problem` filters placement uses, and every required scope, nested ones
   included, picks one domain). What it does not model (anti-affinity among the gang's pods, placement's
   heuristics) makes it a relaxation: its answer is checked by `place`, and when the check fails, or the time
   budget ends without a solution, the greedy fallback takes over: the shortest prefix of the candidates (the
   model's answer first, then cheapest first) that fits, found by bisection since evicting more never hurts, then
   give back ("reprieve") victims while `place` still fits, as kube-scheduler's DefaultPreemption does pod by pod;
4. the preferred-domain misses of the preemptor's resulting placement (between domains of equal cost).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from grove_sched.gangs import GangKey
from grove_sched.model import GPU, BoundPod, GangRequest, Placement, PlacementOptions, PodGroup
from grove_sched.placement import InvalidGang, SelectorError, Snapshot, build_problem, place

__all__ = ["Cost", "PreemptionOptions", "Selection", "VictimGang", "fits", "select_victims"]


@dataclass(frozen=True, slots=True)
class VictimGang:
    """A candidate victim: a gang of strictly lower priority with its bound pods (in the snapshot)."""

    key: GangKey
    priority: int
    pods: tuple[BoundPod, ...]
    whole: bool = True
    """False: only the gang's pods above its minimum, taken without breaking the gang."""
    reclaim: bool = False
    """A gang of another queue above its fair share that a starved queue may reclaim whatever its priority
    (`grove_sched.tenancy`); such candidates count as below the preemptor."""

    @property
    def gpus(self) -> int:
        """GPUs its pods request (what evicting it costs)."""
        return sum(int(pod.requests.get(GPU, 0)) for pod in self.pods)

    @property
    def pod_keys(self) -> tuple[str, ...]:
        """`namespace/name` of each pod (what `Snapshot.without` takes)."""
        return tuple(f"{pod.namespace}/{pod.name}" for pod in self.pods)


@dataclass(frozen=True, slots=True, order=True)
class Cost:
    """The lexicographic cost of a victim set (lower is better, field by field)."""

    max_priority: int
    gangs: int
    gpus: int
    preferred_misses: int


@dataclass(frozen=True, slots=True)
class Selection:
    """The chosen victims, the preemptor's placement once they are gone (its nomination), and how it was found."""

    victims: tuple[VictimGang, ...]
    placement: Placement
    cost: Cost
    path: str
    """"cpsat" (the model's answer, checked by placement) or "greedy" (the reprieve fallback)."""
    domain: str
    """The required-topology domain the victims were chosen for ("cluster" without a required key)."""


@dataclass(frozen=True, slots=True)
class PreemptionOptions:
    """Knobs of the victim search; the limits keep one search bounded on large clusters."""

    placement: PlacementOptions = field(default_factory=PlacementOptions)
    max_domains: int = 8
    """Candidate domains of the required key that are modelled (those needing the fewest GPUs freed first)."""
    max_deterministic_time: float = 0.5
    """CP-SAT budget per domain in deterministic seconds (a wall-clock limit would make answers load-dependent)."""
    use_cpsat: bool = True
    """False: the greedy reprieve only (the baseline)."""
    bisect_above: int = 16
    """Above this many candidates in a domain the fallback starts from the shortest fitting prefix instead of all
    (a bounded number of placement calls; below it the reprieve starts from every candidate)."""
    victim_timeout: float = 300.0
    """Seconds a preemptor waits for its victims to go before it is evaluated afresh."""


def fits(
    snapshot: Snapshot, request: GangRequest, victims: Iterable[VictimGang], opts: PlacementOptions
) -> Placement | None:
    """The preemptor's placement on the snapshot without the victims' pods, or None when it still does not fit."""
    freed = snapshot.without(key for victim in victims for key in victim.pod_keys)
    result = place(freed, request, opts)
    return result if isinstance(result, Placement) and result.assignments else None


def select_victims(
    snapshot: Snapshot, request: GangRequest, candidates: Sequence[VictimGang], options: PreemptionOptions | None = None
) -> Selection | None:
    """The best victim set under `Cost`, or None when evicting every lower-priority gang would not help."""
    opts = options or PreemptionOptions()
    lower = sorted((c for c in candidates if (c.priority < request.priority or c.reclaim) and c.pods), key=_order)
    allowed: list[VictimGang] = []
    for threshold in sorted({c.priority for c in lower}):
        allowed = [c for c in lower if c.priority <= threshold]
        if fits(snapshot, request, allowed, opts.placement) is not None:
            break
    else:
        return None
    best: Selection | None = None
    for name, nodes in _domains(snapshot, request, allowed, opts):
        inside = [c for c in allowed if any(pod.node in nodes for pod in c.pods)]
        found = _search(snapshot, request, inside, nodes, opts, name)
        if found is not None and (best is None or found.cost < best.cost):
            best = found
    return best


def _order(victim: VictimGang) -> tuple[int, bool, int, GangKey]:
    """Cheapest to evict first: lower priority, extras before whole gangs, fewer GPUs, then by key (determinism)."""
    return victim.priority, victim.whole, victim.gpus, victim.key


def _cost(victims: Sequence[VictimGang], placement: Placement) -> Cost:
    return Cost(
        max(v.priority for v in victims),
        sum(1 for v in victims if v.whole),
        sum(v.gpus for v in victims),
        placement.objective.preferred_domain_violations,
    )


def _domains(
    snapshot: Snapshot, request: GangRequest, allowed: Sequence[VictimGang], opts: PreemptionOptions
) -> list[tuple[str, frozenset[str]]]:
    """Node sets to search in: the domains of the gang's required key where freeing every allowed victim would
    leave enough GPUs (fewest GPUs to free first, at most `max_domains`), else the whole cluster."""
    key = request.topology.required_key
    if not key:
        return [("cluster", frozenset(snapshot.node_names))]
    column = snapshot.domains(key)
    names = snapshot.domain_names(key)
    gpu = snapshot.resource_index(GPU)
    need = sum(group.min_replicas * _smallest_gpus(group) for group in request.groups)
    ranked: list[tuple[int, str, frozenset[str]]] = []
    for d, name in enumerate(names):
        rows = np.flatnonzero(column == d)
        nodes = frozenset(snapshot.node_names[i] for i in rows)
        free = int(np.maximum(snapshot.free[rows, gpu], 0).sum()) if gpu is not None else 0
        freeable = sum(int(p.requests.get(GPU, 0)) for v in allowed if v.whole for p in v.pods if p.node in nodes)
        if free + freeable >= need:
            ranked.append((max(need - free, 0), name, nodes))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [(name, nodes) for _, name, nodes in ranked[: opts.max_domains]]


def _smallest_gpus(group: PodGroup) -> int:
    """The fewest GPUs one pod of the group asks (pods may override the group's requests)."""
    sizes = [int((pod.requests if pod.requests is not None else group.requests).get(GPU, 0)) for pod in group.pods]
    return min(sizes, default=0)


def _search(
    snapshot: Snapshot,
    request: GangRequest,
    inside: Sequence[VictimGang],
    nodes: frozenset[str],
    opts: PreemptionOptions,
    name: str,
) -> Selection | None:
    """The best victims among `inside` for a placement on `nodes`: the model's answer if placement accepts it,
    else the greedy reprieve."""
    if not inside:
        return None
    chosen = _model(snapshot, request, inside, nodes, opts) if opts.use_cpsat else None
    if chosen is not None:
        placement = fits(snapshot, request, chosen, opts.placement)
        if placement is not None:
            return Selection(tuple(chosen), placement, _cost(chosen, placement), "cpsat", name)
    return _reprieve(snapshot, request, inside, opts, name, chosen or ())


def _reprieve(
    snapshot: Snapshot,
    request: GangRequest,
    inside: Sequence[VictimGang],
    opts: PreemptionOptions,
    name: str,
    hint: Sequence[VictimGang] = (),
) -> Selection | None:
    """Start with every candidate evicted (above `bisect_above` candidates: the shortest fitting prefix of `hint`,
    then the rest cheapest first); give back victims while the preemptor still fits: higher priority first (as
    kube-scheduler), and within a priority whole gangs before extras (fewer victim gangs is the next tier), the
    smaller first."""
    first = [v for v in inside if any(v is c for c in hint)]
    ordered = first + sorted((v for v in inside if not any(v is c for c in first)), key=_order)
    if fits(snapshot, request, ordered, opts.placement) is None:
        return None
    low, high = (1, len(ordered)) if len(ordered) > opts.bisect_above else (len(ordered), len(ordered))
    while low < high:  # the shortest prefix that fits (evicting more never makes it fit less)
        middle = (low + high) // 2
        if fits(snapshot, request, ordered[:middle], opts.placement) is None:
            low = middle + 1
        else:
            high = middle
    chosen = ordered[:low]
    placement = fits(snapshot, request, chosen, opts.placement)
    if placement is None:
        return None
    for victim in sorted(inside, key=lambda v: (-v.priority, not v.whole, v.gpus, v.key)):
        rest = [c for c in chosen if c is not victim]
        if not rest:
            break
        trial = fits(snapshot, request, rest, opts.placement)
        if trial is not None:
            chosen, placement = rest, trial
    return Selection(tuple(sorted(chosen, key=_order)), placement, _cost(chosen, placement), "greedy", name)


def _model(
    snapshot: Snapshot,
    request: GangRequest,
    inside: Sequence[VictimGang],
    nodes: frozenset[str],
    opts: PreemptionOptions,
) -> list[VictimGang] | None:
    """CP-SAT: choose victims and per-node pod counts on `nodes`; minimise victim gangs, then GPUs evicted."""
    freed = snapshot.without(key for victim in inside for key in victim.pod_keys)
    try:
        problem = build_problem(freed, request, opts.placement)
    except (InvalidGang, SelectorError):
        return None
    rows = [snapshot.node_index[n] for n in sorted(nodes)]
    rows = [i for i in rows if int(problem.maxpods[:, i].max()) > 0]
    if not rows:
        return None
    res_index = {r: k for k, r in enumerate(snapshot.resources)}
    model = cp_model.CpModel()
    chosen = [model.new_bool_var(f"v{k}") for k in range(len(inside))]
    count = {
        (g, i): model.new_int_var(0, int(problem.maxpods[g, i]), "")
        for g in range(problem.num_groups)
        for i in rows
        if problem.maxpods[g, i] > 0
    }
    for g in range(problem.num_groups):
        model.add(sum(count[g, i] for i in rows if (g, i) in count) >= int(problem.internal_min[g]))
    for scope in problem.required:  # one domain per required scope (the gang's, a group config's, a group's)
        picks = {int(d): model.new_bool_var("") for d in {int(scope.domains[i]) for i in rows} if d >= 0}
        needed = int(problem.internal_min[list(scope.groups)].sum()) > 0
        (model.add_exactly_one if needed else model.add_at_most_one)(list(picks.values()))
        for (g, i), var in count.items():
            if g in scope.groups:
                d = int(scope.domains[i])
                model.add(var <= int(problem.maxpods[g, i]) * picks[d] if d >= 0 else var == 0)
    freeing: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for k, victim in enumerate(inside):
        for pod in victim.pods:
            row = snapshot.node_index.get(pod.node)
            if row is None:
                continue
            amounts = {**{r: int(a) for r, a in pod.requests.items()}, "pods": 1}
            for r, amount in amounts.items():
                if amount > 0 and r in res_index:
                    freeing.setdefault((row, res_index[r]), []).append((k, amount))
    asked = [int(r) for r in np.flatnonzero(problem.req.max(axis=0) > 0)]
    for i in rows:
        for col in asked:
            used = [count[g, i] * int(problem.req[g, col]) for g in range(problem.num_groups) if (g, i) in count]
            if not used:
                continue
            gain = [chosen[k] * amount for k, amount in freeing.get((i, col), [])]
            model.add(sum(used) <= max(int(snapshot.free[i, col]), 0) + sum(gain))
    for key in {v.key for v in inside}:
        same = [chosen[k] for k, v in enumerate(inside) if v.key == key]
        if len(same) > 1:
            model.add(sum(same) <= 1)  # the whole gang includes its extras
    total = sum(v.gpus for v in inside) + 1
    model.minimize(sum(chosen[k] * (total * victim.whole + victim.gpus) for k, victim in enumerate(inside)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = opts.placement.random_seed
    solver.parameters.max_deterministic_time = opts.max_deterministic_time
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    picked = [victim for k, victim in enumerate(inside) if solver.value(chosen[k])]
    return sorted(picked, key=_order) or None
