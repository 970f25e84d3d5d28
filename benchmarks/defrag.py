"""Defragmentation plans on the disaggregated placement benchmark: for how many of the gangs that did not fit a
plan exists, and how large the plans are.

The workload is the `disagg` suite's 1,000-node one (`uniform(1000)`, 50% background load, prefill/decode gangs
up to 110% of the free GPUs; `benchmarks.harness.suites`), on the tuning seeds. The gangs are placed in arrival
order with grove-scheduler's `place` (the `cpsat` strategy of the placement benchmark), as the harness runner
does. For every gang that does not fit when it arrives, `grove_sched.preemption.defrag.plan_defragmentation` is
asked on the snapshot of that moment, with every workload gang placed so far as movable (all of its placed pods
moved whole) and its default bounds, twice: with the background load immovable, and with every background
pod movable too (a gang of one pod). Every workload gang has the same priority, so this measures plans as if
the unplaced gang ranked above the placed ones (the scheduler offers only strictly lower-priority gangs).
Nothing is acted on: the gang stays unplaced, as in the placement benchmark, so every seed's sequence is the
placement benchmark's own.

Reported per seed: gangs, gangs not placed, of those the ones short only by fragmentation (the free capacity
covers their minimum in aggregate: `aggregate_room`), the plans found, their mean size (gangs and GPUs moved),
and the planner's wall time per call (median, p95). Run: `python -m benchmarks.defrag [--seeds 0,1,2]
[--nodes 1000]`; it writes `benchmarks/results/defrag.md`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tqdm import tqdm

from benchmarks.harness import clusters, workloads
from benchmarks.harness.metrics import percentile
from benchmarks.harness.runner import bound_pods
from grove_sched.gangs import GangKey
from grove_sched.model import BoundPod, GangRequest, Placement, PlacementOptions, PodGroup, PodRef
from grove_sched.placement import Snapshot, place
from grove_sched.preemption.defrag import DefragOptions, Movable, aggregate_room, plan_defragmentation

BOUNDS = ("max_candidates", "max_searches", "max_checks", "max_moved", "max_domains", "max_deterministic_time")
RESULTS = Path(__file__).resolve().parent / "results" / "defrag.md"


VARIANTS = ("gangs", "gangs+background")
"""What is movable: the workload gangs placed so far; or those and every background pod (a gang of one pod)."""


@dataclass
class SeedResult:
    """What one seed's sequence gave under one variant."""

    seed: int
    variant: str
    gangs: int = 0
    unplaced: int = 0
    fragmented: int = 0
    plans: list[tuple[int, int]] = field(default_factory=list)
    """(gangs moved, GPUs moved) per plan found."""
    seconds: list[float] = field(default_factory=list)
    """Planner wall time per call (gangs short only by fragmentation)."""


def placed_request(gang: GangRequest, assignments: dict[str, str]) -> GangRequest:
    """The request that places the gang's placed pods again, all of them (each group's minimum = its placed pods)."""
    groups = []
    for group in gang.groups:
        pods = tuple(pod for pod in group.pods if pod.name in assignments)
        if pods:
            groups.append(replace(group, pods=pods, min_replicas=len(pods)))
    kept = {group.name for group in groups}
    configs = tuple(
        replace(c, group_names=tuple(n for n in c.group_names if n in kept))
        for c in gang.group_configs
        if any(n in kept for n in c.group_names)
    )
    return replace(gang, groups=tuple(groups), group_configs=configs)


def background_gang(pod: BoundPod) -> Movable:
    """A background pod as a movable gang of one pod."""
    group = PodGroup(pod.name, (PodRef(pod.name),), 1, dict(pod.requests), dict(pod.labels))
    return Movable(
        GangKey(pod.namespace, pod.name, single=True), (pod,), GangRequest(pod.name, pod.namespace, (group,))
    )


def run_seed(nodes: int, seed: int, options: DefragOptions, progress: bool) -> list[SeedResult]:
    """Place one seed's sequence, asking for a plan under each variant for each gang that does not fit."""
    workload = workloads.disagg(clusters.with_background(clusters.uniform(nodes), 0.5, seed), 1.1, seed)
    snapshot = Snapshot.build(workload.cluster.nodes, workload.cluster.background)
    results = [SeedResult(seed, variant, gangs=len(workload.gangs)) for variant in VARIANTS]
    background = [background_gang(pod) for pod in workload.cluster.background]
    placed: list[Movable] = []
    for gang in tqdm(workload.gangs, desc=f"defrag seed {seed}", unit="gang", disable=not progress, leave=False):
        placement = place(snapshot, gang, options.placement)
        if isinstance(placement, Placement) and placement.assignments:
            assignments = dict(placement.assignments)
            pods = bound_pods(gang, assignments)
            snapshot = snapshot.with_assumed(pods)
            request = placed_request(gang, assignments)
            placed.append(Movable(GangKey(gang.namespace, gang.name), tuple(pods), request))
            continue
        short = aggregate_room(snapshot, gang, options.placement) is None
        for result, movable in zip(results, (placed, [*placed, *background]), strict=True):
            result.unplaced += 1
            if short:
                continue
            result.fragmented += 1
            start = time.perf_counter()
            plan = plan_defragmentation(snapshot, gang, movable, options)
            result.seconds.append(time.perf_counter() - start)
            if plan is not None:
                result.plans.append((len(plan.moved), plan.gpus))
    return results


def _mean(values: Sequence[float]) -> str:
    return f"{statistics.fmean(values):.2f}" if values else "-"


def _row(label: str, results: Sequence[SeedResult]) -> str:
    plans = [p for r in results for p in r.plans]
    seconds = [s for r in results for s in r.seconds]
    gangs, unplaced, fragmented = (sum(getattr(r, f) for r in results) for f in ("gangs", "unplaced", "fragmented"))
    timing = f"{statistics.median(seconds) * 1000:.0f} | {percentile(seconds, 0.95) * 1000:.0f}" if seconds else "- | -"
    share = f"{len(plans) / unplaced:.0%}" if unplaced else "-"
    return (
        f"| {label} | {gangs} | {unplaced} | {fragmented} | {len(plans)} ({share} of unplaced) | "
        f"{_mean([p[0] for p in plans])} | {_mean([p[1] for p in plans])} | {timing} |"
    )


def report(results: Sequence[SeedResult], nodes: int, command: str, seconds: float, options: DefragOptions) -> str:
    """The results page."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Defragmentation plans on the disaggregated placement benchmark",
        "",
        f"Command: `{command}` ({now}, {os.cpu_count()} CPUs, Python {platform.python_version()}; {seconds:.0f} s).",
        "",
        f"Workload: the `disagg` suite's `uniform({nodes})` cluster with 50% background load, prefill/decode",
        "gangs up to 110% of the free GPUs, placed in arrival order with `place` (the `cpsat` strategy). For each gang",
        "that does not fit on arrival, `plan_defragmentation` runs on that moment's snapshot with its default bounds,",
        "twice: with every workload gang placed so far movable (`gangs`: the background load is immovable), and with",
        "the background pods movable too, each a gang of one pod (`gangs+background`). Every workload gang has the",
        "same priority, so this counts plans as if the unplaced gang ranked above the moved ones. Nothing is acted on.",
        "See `benchmarks/defrag.py`. Bounds: " + ", ".join(f"{name}={getattr(options, name)}" for name in BOUNDS) + ".",
        "",
        "| movable | seed | gangs | not placed | short only by fragmentation | plans found "
        "| gangs moved per plan (mean) | GPUs moved per plan (mean) | planner ms (median) | planner ms (p95) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(
            row
            for variant in VARIANTS
            for row in (
                *(_row(f"{variant} | {r.seed}", [r]) for r in results if r.variant == variant),
                _row(f"{variant} | all", [r for r in results if r.variant == variant]),
            )
        ),
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.defrag", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default: the tuning seeds 0,1,2)")
    parser.add_argument("--nodes", type=int, default=1000, help="cluster size (default 1000)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    options = DefragOptions(placement=PlacementOptions())
    start = time.perf_counter()
    results = [r for seed in seeds for r in run_seed(args.nodes, seed, options, not args.no_progress)]
    command = shlex.join(["python", "-m", "benchmarks.defrag", *(argv if argv is not None else sys.argv[1:])])
    text = report(results, args.nodes, command, time.perf_counter() - start, options)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
