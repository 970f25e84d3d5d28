"""Sequential-arrival runner: every strategy places the same gangs, one at a time, on its own evolving snapshot.

All strategies run in one process on one base snapshot (immutable, so sharing it is safe), with the same
workload and seeds. Each decision is checked against the hard constraints (`validate.violations`) before it
is committed with `Snapshot.with_assumed`; an invalid decision aborts the run, because numbers built on it would
be meaningless. Gangs that do not fit when they arrive are not retried (there are no departures), except in the
knavigator wave replay, where every gang runs for exactly one wave and the pending ones are retried, in
submission order, on the emptied cluster of the next wave.

A workload with several seeds (`Workload.seeds`) is run once per seed; its summaries are the per-seed means
(latency percentiles over the pooled calls) with the standard deviation of GPUs and gangs placed, and the
per-seed summaries are kept for the findings ("ahead on 2 of 3 seeds") and results.json.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from tqdm import tqdm

from benchmarks.harness.baselines import baselines
from benchmarks.harness.clusters import BLOCK, RACK
from benchmarks.harness.metrics import (
    allocated_gpus,
    domains_spanned,
    lp_bound,
    optimality_gap,
    percentile,
    preferred_hits,
    stranded_gpus,
)
from benchmarks.harness.strategies import Decision, GroveStrategy, Strategy
from benchmarks.harness.validate import violations
from benchmarks.harness.workloads import Workload, gang_gpus
from grove_sched.model import GPU, LOOKAHEAD_PATH, BoundPod, GangRequest, PlacementOptions
from grove_sched.placement import Snapshot


class InvalidDecision(RuntimeError):
    """A strategy returned a placement that breaks a hard constraint."""


@dataclass(frozen=True, slots=True)
class GangRecord:
    """What happened to one gang under one strategy."""

    gang: str
    placed: bool
    gpus: int
    pods: int
    seconds: float
    racks: int = 0
    blocks: int = 0
    preferred_hits: int = 0
    preferred_total: int = 0
    score: float | None = None
    path: str = ""


LIMIT_STATUSES = frozenset({"FEASIBLE", "UNKNOWN"})
"""CP-SAT statuses meaning the solve stopped at its deterministic time limit before proving its answer."""
SOLVED_STATUSES = LIMIT_STATUSES | {"OPTIMAL", "INFEASIBLE", "MODEL_INVALID"}
"""CP-SAT statuses meaning the solver ran (the others say greedy's plan was final without a solve)."""


@dataclass(slots=True)
class StrategyRun:
    """One strategy's pass over a workload: per-gang records, allocation after each gang, final snapshot; per
    placement call its wall time and, for ours, the solver status (failed attempts included)."""

    strategy: str
    records: list[GangRecord] = field(default_factory=list)
    allocated_after: list[int] = field(default_factory=list)
    call_seconds: list[float] = field(default_factory=list)
    call_status: list[str] = field(default_factory=list)
    wave_used: list[int] = field(default_factory=list)
    final: Snapshot | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """The per-(workload, strategy) numbers the report prints; over several seeds, the counts are means and
    `gpus_sd` / `gangs_sd` their sample standard deviations (0 for one seed)."""

    workload: str
    strategy: str
    gangs: float
    gangs_placed: float
    pods_placed: float
    gpus_placed: float
    gpus_total: int
    allocated_pct: float
    checkpoints_pct: dict[str, float]
    stranded_gpus: float
    racks_per_gang: float
    blocks_per_gang: float
    preferred_hit_rate: float | None
    median_ms: float
    p99_ms: float
    bound_gpus: float
    gap: float
    mean_score: float | None
    waves: int | None = None
    ideal_waves: int | None = None
    occupancy_pct: float | None = None
    seeds: int = 1
    gpus_sd: float = 0.0
    gangs_sd: float = 0.0
    calls: int = 0
    """Placement calls timed (failed attempts and wave retries included): the sample behind median and p99."""
    cpsat_used: float = 0.0
    """Gangs placed with CP-SAT's plan (path "cpsat")."""
    greedy_used: float = 0.0
    """Gangs placed with our greedy pass's plan (path "greedy": no solve, or CP-SAT did not beat it)."""
    lookahead_used: float = 0.0
    """Gangs placed with one of `place`'s other plans because it left more room for the queue (path "lookahead")."""
    solves: float = 0.0
    """Placement calls in which CP-SAT ran."""
    limit_hits: float = 0.0
    """CP-SAT runs that stopped at the deterministic time limit (status FEASIBLE or UNKNOWN)."""


AHEAD = "cpsat-ahead"
LOOKAHEAD_WINDOW = 40
"""Queued gangs `cpsat-ahead` rolls out behind each candidate placement, chosen on the disaggregated sequences'
seeds 0-7 with greedy rollouts (GPUs vs greedy alone: 16 gangs +22 +21 +23 -2 0 -22 -20 +22, mean +5.5; 40 gangs
-21 +22 +44 +18 0 +22 0 +22, mean +13.4; 8 gangs on seeds 0-2: +22 0 +22); then with no rollout while the cluster
is far from full (`ROOMY`), 40 gangs: 0 +43 0 +18 0 0 +43 +1, mean +13.1, about 2.5x less time."""

DEFAULT_STRATEGIES = ("first-fit", "best-fit", "kai-greedy", "grove-greedy", "cpsat")
"""The three baselines, our greedy pass alone and our full path (greedy, then CP-SAT): every table shows what the
solver adds over our own greedy, not only over the baselines."""


def default_strategies(names: Sequence[str] | None = None) -> list[Strategy]:
    """`DEFAULT_STRATEGIES`, or the named ones; on request also `cpsat-exact` (CP-SAT's plan whenever it is
    cheaper under the whole objective, `refine="all"`)."""
    available: dict[str, Strategy] = {b.name: b for b in baselines()}
    available["cpsat"] = GroveStrategy()
    available["cpsat-exact"] = GroveStrategy("cpsat-exact", PlacementOptions(refine="all"))
    available["grove-greedy"] = GroveStrategy("grove-greedy", PlacementOptions(use_cpsat=False))
    available[AHEAD] = GroveStrategy(AHEAD, PlacementOptions(), lookahead=LOOKAHEAD_WINDOW)
    chosen = list(names) if names else list(DEFAULT_STRATEGIES)
    unknown = [name for name in chosen if name not in available]
    if unknown:
        raise ValueError(f"unknown strategies {unknown}; choose from {sorted(available)}")
    return [available[name] for name in chosen]


def bound_pods(gang: GangRequest, assignments: dict[str, str] | Decision) -> list[BoundPod]:
    """The placed pods of `gang` as BoundPods, for committing a decision to a snapshot."""
    chosen = assignments.assignments if isinstance(assignments, Decision) else assignments
    pods: list[BoundPod] = []
    for grp in gang.groups:
        for pod in grp.pods:
            node = chosen.get(pod.name)
            if node is not None:
                requests = pod.requests if pod.requests is not None else grp.requests
                pods.append(BoundPod(pod.name, gang.namespace, node, grp.labels, requests, grp.pod_anti_affinity))
    return pods


def _attempt(
    strategy: Strategy, snapshot: Snapshot, gang: GangRequest, queue: Sequence[GangRequest] = ()
) -> tuple[Decision | None, float, Snapshot]:
    """Time one decision, validate it and commit it; returns (decision, seconds, next snapshot). `queue` (the
    gangs still to come, in order) reaches only a strategy that looks ahead."""
    start = time.perf_counter()
    if isinstance(strategy, GroveStrategy) and strategy.lookahead > 0:
        decision = strategy(snapshot, gang, queue)
    else:
        decision = strategy(snapshot, gang)
    seconds = time.perf_counter() - start
    if decision is None or not decision.placed:
        return decision, seconds, snapshot
    broken = violations(snapshot, gang, decision.assignments)
    if broken:
        raise InvalidDecision(f"{strategy.name} on {gang.name}: " + "; ".join(broken[:5]))
    return decision, seconds, snapshot.with_assumed(bound_pods(gang, decision))


def _record(snapshot: Snapshot, gang: GangRequest, decision: Decision | None, seconds: float) -> GangRecord:
    if decision is None or not decision.placed:
        return GangRecord(gang.name, False, 0, 0, seconds)
    nodes = list(decision.assignments.values())
    hits, total = preferred_hits(snapshot, gang, decision.assignments)
    placed = decision.assignments
    gpus = sum(
        (pod.requests if pod.requests is not None else grp.requests).get(GPU, 0)
        for grp in gang.groups
        for pod in grp.pods
        if pod.name in placed
    )
    return GangRecord(
        gang=gang.name,
        placed=True,
        gpus=gpus,
        pods=len(nodes),
        seconds=seconds,
        racks=domains_spanned(snapshot, nodes, RACK),
        blocks=domains_spanned(snapshot, nodes, BLOCK),
        preferred_hits=hits,
        preferred_total=total,
        score=decision.score,
        path=decision.path,
    )


def run_sequential(workload: Workload, strategy: Strategy, base: Snapshot, progress: bool = True) -> StrategyRun:
    """Place the workload's gangs in arrival order against the strategy's own evolving snapshot."""
    run = StrategyRun(strategy.name)
    snapshot = base
    label = f"{workload.name} {strategy.name}"
    gangs = workload.gangs
    for k, gang in enumerate(tqdm(gangs, desc=label, unit="gang", disable=not progress, leave=False)):
        decision, seconds, snapshot = _attempt(strategy, snapshot, gang, gangs[k + 1 :])
        run.records.append(_record(snapshot, gang, decision, seconds))
        run.call_seconds.append(seconds)
        run.call_status.append(decision.status if decision is not None else "")
        run.allocated_after.append(allocated_gpus(snapshot)[0])
    run.final = snapshot
    return run


def run_waves(workload: Workload, strategy: Strategy, base: Snapshot, progress: bool = True) -> StrategyRun:
    """knavigator replay: each wave starts from `base`; pending gangs are tried in submission order."""
    run = StrategyRun(strategy.name)
    pending = list(workload.gangs)
    bar = tqdm(
        total=len(pending), desc=f"{workload.name} {strategy.name}", unit="gang", disable=not progress, leave=False
    )
    while pending:
        snapshot = base
        left: list[GangRequest] = []
        for gang in pending:
            decision, seconds, snapshot = _attempt(strategy, snapshot, gang)
            run.call_seconds.append(seconds)
            run.call_status.append(decision.status if decision is not None else "")
            if decision is None or not decision.placed:
                left.append(gang)
            else:
                run.records.append(_record(snapshot, gang, decision, seconds))
                bar.update(1)
        if len(left) == len(pending):  # nothing fits even an empty cluster: these gangs never run
            run.records.extend(GangRecord(gang.name, False, 0, 0, 0.0) for gang in left)
            break
        run.wave_used.append(allocated_gpus(snapshot)[0] - allocated_gpus(base)[0])
        run.allocated_after.append(allocated_gpus(snapshot)[0])
        run.final = snapshot
        pending = left
    bar.close()
    return run


def summarise(workload: Workload, run: StrategyRun, base: Snapshot, bound: float) -> Summary:
    """Turn one strategy's run into the report's numbers."""
    final = run.final if run.final is not None else base
    placed = [r for r in run.records if r.placed]
    multi = [r for r in placed if r.pods > 1]
    total_gpus = allocated_gpus(base)[1]
    pending = [gang for gang, r in zip(workload.gangs, run.records, strict=False) if not r.placed]
    if workload.waves:
        pending = []
    hits = sum(r.preferred_hits for r in placed)
    scopes = sum(r.preferred_total for r in placed)
    scores = [r.score for r in placed if r.score is not None]
    checkpoints = {
        label: 100.0 * run.allocated_after[count - 1] / max(total_gpus, 1)
        for label, count in workload.checkpoints.items()
        if 0 < count <= len(run.allocated_after)
    }
    gpus_placed = sum(r.gpus for r in placed)
    waves = len(run.wave_used) if workload.waves else None
    ideal = -(-int(bound) // max(total_gpus - allocated_gpus(base)[0], 1)) if workload.waves else None
    occupancy = (
        100.0 * sum(run.wave_used) / (len(run.wave_used) * max(total_gpus, 1))
        if workload.waves and run.wave_used
        else None
    )
    ms = [1000.0 * s for s in run.call_seconds]
    return Summary(
        workload=workload.name,
        strategy=run.strategy,
        gangs=len(workload.gangs),
        gangs_placed=len(placed),
        pods_placed=sum(r.pods for r in placed),
        gpus_placed=gpus_placed,
        gpus_total=total_gpus,
        allocated_pct=100.0 * allocated_gpus(final)[0] / max(total_gpus, 1),
        checkpoints_pct=checkpoints,
        stranded_gpus=stranded_gpus(final, pending),
        racks_per_gang=statistics.fmean(r.racks for r in multi) if multi else 0.0,
        blocks_per_gang=statistics.fmean(r.blocks for r in multi) if multi else 0.0,
        preferred_hit_rate=hits / scopes if scopes else None,
        median_ms=statistics.median(ms) if ms else 0.0,
        p99_ms=percentile(ms, 0.99),
        bound_gpus=bound,
        gap=optimality_gap(bound, gpus_placed),
        mean_score=statistics.fmean(scores) if scores else None,
        waves=waves,
        ideal_waves=ideal,
        occupancy_pct=occupancy,
        calls=len(ms),
        cpsat_used=sum(r.path == "cpsat" for r in placed),
        greedy_used=sum(r.path == "greedy" for r in placed),
        lookahead_used=sum(r.path == LOOKAHEAD_PATH for r in placed),
        solves=sum(status in SOLVED_STATUSES for status in run.call_status),
        limit_hits=sum(status in LIMIT_STATUSES for status in run.call_status),
    )


def with_exact(workload: Workload, strategies: Sequence[Strategy]) -> list[Strategy]:
    """`strategies`, plus `cpsat-exact` after `cpsat` when the workload asks to compare the two modes, and the
    look-ahead (`cpsat-ahead`) last where the workload asks for it."""
    chosen = list(strategies)
    names = [s.name for s in chosen]
    if workload.compare_exact and "cpsat" in names and "cpsat-exact" not in names:
        chosen.insert(names.index("cpsat") + 1, default_strategies(["cpsat-exact"])[0])
    if workload.compare_lookahead and "cpsat" in names and AHEAD not in names:
        chosen.append(default_strategies([AHEAD])[0])
    return chosen


def mean_summary(per_seed: Sequence[Summary], pooled_ms: Sequence[float]) -> Summary:
    """One summary for a strategy over several seeds: means of the per-seed numbers, the spread of GPUs and gangs
    placed, and latency percentiles over every call of every seed."""
    first = per_seed[0]
    if len(per_seed) == 1:
        return first

    def mean(values: Sequence[float]) -> float:
        return statistics.fmean(values)

    def optional(values: Sequence[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.fmean(known) if known else None

    labels = [label for label in first.checkpoints_pct if all(label in s.checkpoints_pct for s in per_seed)]
    return replace(
        first,
        gangs=mean([s.gangs for s in per_seed]),
        gangs_placed=mean([s.gangs_placed for s in per_seed]),
        pods_placed=mean([s.pods_placed for s in per_seed]),
        gpus_placed=mean([s.gpus_placed for s in per_seed]),
        gpus_total=round(mean([s.gpus_total for s in per_seed])),
        allocated_pct=mean([s.allocated_pct for s in per_seed]),
        checkpoints_pct={label: mean([s.checkpoints_pct[label] for s in per_seed]) for label in labels},
        stranded_gpus=mean([s.stranded_gpus for s in per_seed]),
        racks_per_gang=mean([s.racks_per_gang for s in per_seed]),
        blocks_per_gang=mean([s.blocks_per_gang for s in per_seed]),
        preferred_hit_rate=optional([s.preferred_hit_rate for s in per_seed]),
        median_ms=statistics.median(pooled_ms) if pooled_ms else 0.0,
        p99_ms=percentile(pooled_ms, 0.99),
        bound_gpus=mean([s.bound_gpus for s in per_seed]),
        gap=mean([s.gap for s in per_seed]),
        mean_score=optional([s.mean_score for s in per_seed]),
        waves=None,
        ideal_waves=None,
        occupancy_pct=optional([s.occupancy_pct for s in per_seed]),
        seeds=len(per_seed),
        gpus_sd=statistics.stdev([s.gpus_placed for s in per_seed]),
        gangs_sd=statistics.stdev([s.gangs_placed for s in per_seed]),
        calls=len(pooled_ms),
        cpsat_used=mean([s.cpsat_used for s in per_seed]),
        greedy_used=mean([s.greedy_used for s in per_seed]),
        lookahead_used=mean([s.lookahead_used for s in per_seed]),
        solves=mean([s.solves for s in per_seed]),
        limit_hits=mean([s.limit_hits for s in per_seed]),
    )


_NO_SEEDS: Mapping[int, list[Summary]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class WorkloadResult:
    """Every strategy's summary (and allocation curve) on one workload. Over several seeds `summaries` are the
    means, `per_seed` maps each seed to its own summaries, and curves/demand/bound are those of the first seed."""

    workload: Workload
    summaries: list[Summary]
    curves: dict[str, list[int]]
    demand: list[int]
    bound_gpus: float
    seconds: float
    per_seed: Mapping[int, list[Summary]] = field(default_factory=lambda: _NO_SEEDS)


def run_workload(workload: Workload, strategies: Sequence[Strategy], progress: bool = True) -> WorkloadResult:
    """Run every strategy on `workload` (same base snapshot, same gangs) on each of its seeds and summarise.

    On a workload marked `compare_exact`, `cpsat-exact` runs right after `cpsat` (unless already chosen), so the
    exact per-gang mode stays visible where the refine choice decides the verdict."""
    strategies = with_exact(workload, strategies)
    variants = workload.variants()
    if len(variants) == 1:
        return _run_once(workload, strategies, progress)[0]
    start = time.perf_counter()
    runs = [(seed, *_run_once(variant, strategies, progress)) for seed, variant in variants]
    summaries = [
        mean_summary([result.summaries[k] for _, result, _ in runs], [ms for _, _, pooled in runs for ms in pooled[k]])
        for k in range(len(strategies))
    ]
    first = runs[0][1]
    per_seed = {int(seed if seed is not None else k): result.summaries for k, (seed, result, _) in enumerate(runs)}
    return WorkloadResult(
        workload,
        summaries,
        first.curves,
        first.demand,
        first.bound_gpus,
        time.perf_counter() - start,
        MappingProxyType(per_seed),
    )


def _run_once(
    workload: Workload, strategies: Sequence[Strategy], progress: bool
) -> tuple[WorkloadResult, list[list[float]]]:
    """One seed: every strategy on the workload, plus each strategy's call times in ms (pooled across seeds)."""
    start = time.perf_counter()
    base = Snapshot.build(workload.cluster.nodes, workload.cluster.background)
    # in the wave replay every gang eventually runs, so the bound is the demand; waves are compared separately
    bound = float(sum(gang_gpus(g) for g in workload.gangs)) if workload.waves else lp_bound(base, workload.gangs)
    summaries: list[Summary] = []
    curves: dict[str, list[int]] = {}
    calls: list[list[float]] = []
    for strategy in strategies:
        runner = run_waves if workload.waves else run_sequential
        run = runner(workload, strategy, base, progress)
        summaries.append(summarise(workload, run, base, bound))
        curves[strategy.name] = run.allocated_after
        calls.append([1000.0 * s for s in run.call_seconds])
    cumulative, asked = [], 0
    for gang in workload.gangs:
        asked += gang_gpus(gang)
        cumulative.append(asked)
    return WorkloadResult(workload, summaries, curves, cumulative, bound, time.perf_counter() - start), calls
