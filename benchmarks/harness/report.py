"""Benchmark output: JSON results, a Markdown table with findings, and PNG plots under `benchmarks/results/<suite>/`.

`latest.md` (in the suite folder and copied to `benchmarks/results/latest.md`) is self-contained: the command
that produced it, the machine, the table and the findings (where CP-SAT is ahead of, level with or behind the
best greedy baseline), so the README can include it as is. On multi-seed workloads the table shows means ± the
standard deviation across seeds, the findings compare means and count the seeds won against each seed's best
baseline, and results.json keeps every seed's summaries.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.harness import per_seed
from benchmarks.harness.per_seed import AHEAD, BASELINES, GREEDY, OURS, label
from benchmarks.harness.runner import Summary, WorkloadResult

EXACT = "cpsat-exact"
P99_SAMPLES = 100
"""Below this many calls a nearest-rank p99 is just the maximum, and the report says so."""
SPEED_TARGET_NODES = 5000
MEDIAN_TARGET_MS = 20.0
P99_TARGET_MS = 100.0


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _n(value: float) -> str:
    """A count: as an integer when it is one (a single seed), else a mean to one decimal."""
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _spread(value: float, sd: float, seeds: int) -> str:
    return _n(value) if seeds < 2 else f"{value:.1f} ± {sd:.1f}"


def _signed(value: float) -> str:
    return f"+{_n(value)}" if value >= 0 else f"-{_n(-value)}"


@dataclass(frozen=True, slots=True)
class HeldOut:
    """The master seed of a run and the held-out seeds drawn from it (`suites.held_out_seeds`)."""

    master: int
    seeds: tuple[int, ...]


def _p99(s: Summary) -> str:
    """The p99 with its sample count, or 'max of N' when there are too few samples for a p99."""
    if s.calls >= P99_SAMPLES:
        return f"{s.p99_ms:.1f} (n={s.calls:,})"
    return f"max of {s.calls}: {s.p99_ms:.1f}"


def _solver(s: Summary) -> str:
    """'CP-SAT answers / greedy answers (/ look-ahead's other plans), solves, limit hits', totals over the seeds,
    for our strategies only."""
    if s.strategy not in (OURS, EXACT, GREEDY, AHEAD):
        return "- | -"
    k = s.seeds
    ahead = f" / {_n(s.lookahead_used * k)} look-ahead" if s.strategy == AHEAD else ""
    return f"{_n(s.cpsat_used * k)} / {_n(s.greedy_used * k)}{ahead} | {_n(s.solves * k)} / {_n(s.limit_hits * k)}"


def table(results: Sequence[WorkloadResult]) -> str:
    """One Markdown row per (workload, strategy)."""
    lines = [
        "| workload | strategy | gangs placed | GPUs placed | GPUs allocated | at checkpoints | stranded GPUs "
        "| racks/gang | blocks/gang | preferred hit | answer used: CP-SAT / greedy | CP-SAT runs / time-limit hits "
        "| median ms | p99 ms | LP bound | gap | score |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        for s in result.summaries:
            checkpoints = ", ".join(f"{label}: {value:.1f}%" for label, value in s.checkpoints_pct.items()) or "-"
            if s.waves is not None:
                checkpoints = f"{s.waves} waves (ideal {s.ideal_waves}), occupancy {s.occupancy_pct or 0:.1f}%"
            lines.append(
                f"| {s.workload} | {label(s.strategy)} | {_spread(s.gangs_placed, s.gangs_sd, s.seeds)}/{_n(s.gangs)} "
                f"| {_spread(s.gpus_placed, s.gpus_sd, s.seeds)} "
                f"| {s.allocated_pct:.2f}% | {checkpoints} | {_n(round(s.stranded_gpus, 1))} | {s.racks_per_gang:.2f} "
                f"| {s.blocks_per_gang:.2f} | {_pct(s.preferred_hit_rate)} | {_solver(s)} | {s.median_ms:.2f} "
                f"| {_p99(s)} | {s.bound_gpus:.0f} | {100 * s.gap:.2f}% | {_score(s.mean_score)} |"
            )
    return "\n".join(lines)


def _placed(summary: Summary, unit: str) -> float:
    return summary.gpus_placed if unit == "GPUs" else summary.pods_placed


def _best(summaries: Sequence[Summary]) -> Summary | None:
    rivals = [s for s in summaries if s.strategy in BASELINES]
    return max(rivals, key=lambda s: (s.gpus_placed, s.pods_placed)) if rivals else None


def _per_seed(result: WorkloadResult, ours: str, unit: str) -> str:
    """' ahead of the best baseline on 2 of 3 seeds (+6, -12, +7)', or '' for a single seed."""
    diffs: list[float] = []
    for summaries in result.per_seed.values():
        mine = next((s for s in summaries if s.strategy == ours), None)
        best = _best(summaries)
        if mine is not None and best is not None:
            diffs.append(_placed(mine, unit) - _placed(best, unit))
    if len(diffs) < 2:
        return ""
    wins = sum(d > 0 for d in diffs)
    ties = sum(d == 0 for d in diffs)
    seeds = ", ".join(str(seed) for seed in result.per_seed)
    detail = ", ".join(_signed(d) for d in diffs)
    return (
        f"; per seed vs that seed's best baseline: ahead on {wins} of {len(diffs)} seeds, level on {ties} "
        f"(seeds {seeds}: {detail} {unit})"
    )


def findings(results: Sequence[WorkloadResult]) -> list[str]:
    """Plain statements: CP-SAT (and its exact mode, when run) vs the best baseline on every workload, compared
    on means over the workload's seeds with per-seed wins, and the 5,000-node speed targets."""
    out: list[str] = []
    for result in results:
        by_name = {s.strategy: s for s in result.summaries}
        best = _best(result.summaries)
        if OURS not in by_name or best is None:
            continue
        name = result.workload.name
        for ours in (by_name[n] for n in (OURS, EXACT, AHEAD) if n in by_name):
            # GPU workloads compare GPUs placed; CPU-only ones (the 1,000-pod TAS gangs) compare pods placed
            unit = "GPUs" if best.gpus_placed or ours.gpus_placed else "pods"
            mine, theirs = _placed(ours, unit), _placed(best, unit)
            mean = "on average " if ours.seeds > 1 else ""
            seeds = _per_seed(result, ours.strategy, unit)
            if mine < theirs:
                out.append(
                    f"BEHIND on {name}: {ours.strategy} placed {mean}{_n(mine)} {unit} ({_n(ours.gangs_placed)} "
                    f"gangs), {best.strategy} placed {_n(theirs)} {unit} ({_n(best.gangs_placed)} gangs){seeds}."
                )
            elif mine == theirs:
                out.append(
                    f"level on {name}: {ours.strategy} and {best.strategy} both placed {mean}{_n(mine)} {unit}{seeds}."
                )
            else:
                out.append(
                    f"ahead on {name}: {ours.strategy} placed {mean}{_n(mine)} {unit} vs {best.strategy} "
                    f"{_n(theirs)} ({_signed(mine - theirs)}){seeds}."
                )
        ours = by_name[OURS]
        if GREEDY in by_name and not result.per_seed:
            diff = _placed(ours, "GPUs") - _placed(by_name[GREEDY], "GPUs")
            out.append(f"grove CP-SAT vs grove greedy on {name}: {_signed(diff)} GPUs.")
        for strategy in (OURS, AHEAD):
            every = per_seed.verdict(result, strategy)
            if every is not None:
                out.append(every)
        if len(result.workload.cluster.nodes) >= SPEED_TARGET_NODES and ours.waves is None:
            verdict = "meets" if ours.median_ms <= MEDIAN_TARGET_MS and ours.p99_ms <= P99_TARGET_MS else "MISSES"
            out.append(
                f"{verdict} the 5,000-node speed target on {name}: median {ours.median_ms:.1f} ms "
                f"(target {MEDIAN_TARGET_MS:.0f}), p99 {ours.p99_ms:.1f} ms (target {P99_TARGET_MS:.0f})."
            )
    return out


def _plot_allocation(results: Sequence[WorkloadResult], path: Path) -> None:
    names = [r.workload.name for r in results]
    strategies = list(dict.fromkeys(s.strategy for r in results for s in r.summaries))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(names) + 2), 4.5))
    width = 0.8 / max(len(strategies), 1)
    for k, strategy in enumerate(strategies):
        values = [next((s.allocated_pct for s in r.summaries if s.strategy == strategy), 0.0) for r in results]
        ax.bar([i + k * width for i in range(len(names))], values, width, label=strategy)
    ax.set_xticks([i + width * (len(strategies) - 1) / 2 for i in range(len(names))], names, rotation=20, ha="right")
    ax.set_ylabel("GPUs allocated (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_curves(result: WorkloadResult, path: Path) -> None:
    total = max(result.summaries[0].gpus_total, 1) if result.summaries else 1
    demand = [100.0 * d / total for d in result.demand]
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for strategy, curve in result.curves.items():
        ax.plot(demand[: len(curve)], [100.0 * v / total for v in curve], label=strategy, linewidth=1.2)
    ax.set_xlabel("arrived GPU demand (% of cluster GPUs)")
    ax.set_ylabel("GPUs allocated (%)")
    ax.set_title(result.workload.name)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_latency(results: Sequence[WorkloadResult], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(results) + 2), 4.5))
    strategies = list(dict.fromkeys(s.strategy for r in results for s in r.summaries))
    width = 0.8 / max(len(strategies), 1)
    for k, strategy in enumerate(strategies):
        found = [next((s for s in r.summaries if s.strategy == strategy), None) for r in results]
        medians = [s.median_ms if s else 0.0 for s in found]
        p99 = [s.p99_ms if s else 0.0 for s in found]
        xs = [i + k * width for i in range(len(results))]
        ax.bar(xs, p99, width, alpha=0.35, color=f"C{k}")
        ax.bar(xs, medians, width, label=f"{strategy} (median; light: p99)", color=f"C{k}")
    ax.set_yscale("log")
    ax.set_ylabel("time per gang (ms)")
    ax.set_xticks(
        [i + width * (len(strategies) - 1) / 2 for i in range(len(results))],
        [r.workload.name for r in results],
        rotation=20,
        ha="right",
    )
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _json(results: Sequence[WorkloadResult], suite: str, command: str, held_out: HeldOut | None) -> dict[str, Any]:
    return {
        "suite": suite,
        "command": command,
        "tuning_seeds": sorted({seed for r in results if not r.workload.held_out for seed in r.per_seed}),
        "master_seed": held_out.master if held_out else None,
        "held_out_seeds": list(held_out.seeds) if held_out else [],
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "workloads": [
            {
                "name": r.workload.name,
                "held_out": r.workload.held_out,
                "description": r.workload.description,
                "cluster": r.workload.cluster.description,
                "gangs": len(r.workload.gangs),
                "lp_bound_gpus": r.bound_gpus,
                "seconds": round(r.seconds, 2),
                "seeds": list(r.per_seed) or r.workload.seeds[:1],
                "summaries": [asdict(s) for s in r.summaries],
                "per_seed": {str(seed): [asdict(s) for s in summaries] for seed, summaries in r.per_seed.items()},
                "curves": r.curves,
                "demand": r.demand,
            }
            for r in results
        ],
        "findings": findings(results),
    }


def _seeds(result: WorkloadResult) -> str:
    seeds = list(result.per_seed)
    return (
        f"seeds {', '.join(map(str, seeds))}, means ± sd (description and cluster of seed {seeds[0]}); "
        if seeds
        else ""
    )


def _section(results: Sequence[WorkloadResult], title: str) -> str:
    """A heading, the workloads, the table, the per-seed tables and the findings of one set of results."""
    if not results:
        return ""
    workloads = "\n".join(
        f"- `{r.workload.name}`: {r.workload.description}; cluster: {r.workload.cluster.description} "
        f"({_seeds(r)}{r.seconds:.0f} s for all strategies)"
        for r in results
    )
    seeds = "\n\n".join(
        f"GPUs placed per seed on `{r.workload.name}` (gap to that seed's LP bound):\n\n{per_seed.table(r)}"
        for r in results
        if r.per_seed
    )
    found = "\n".join(f"- {line}" for line in findings(results)) or "- (no CP-SAT vs baseline comparison)"
    return f"## {title}\n\n{workloads}\n\n{table(results)}\n\n{seeds}\n\n### Findings\n\n{found}\n\n"


def markdown(results: Sequence[WorkloadResult], suite: str, command: str, held_out: HeldOut | None = None) -> str:
    """The self-contained `latest.md` text: tuning seeds and held-out seeds in separate sections."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    tuning = [r for r in results if not r.workload.held_out]
    unseen = [r for r in results if r.workload.held_out]
    drawn = (
        f"Held-out seeds {', '.join(map(str, held_out.seeds))}, drawn from master seed {held_out.master} "
        f"(`--master-seed {held_out.master}` reproduces them). "
        if held_out
        else ""
    )
    heading = "Tuning seeds (the ones CP-SAT's settings were chosen on)" if unseen else "Results"
    return (
        f"# Placement-quality benchmark: `{suite}`\n\n"
        f"Command: `{command}` ({when}, {os.cpu_count()} CPUs, Python {platform.python_version()}). {drawn}\n\n"
        f"{_section(tuning, heading)}{_section(unseen, 'Held-out seeds')}## Notes\n\n"
        "Gap = (LP bound - GPUs placed) / LP bound, where the LP bound (benchmark-anchors §5.3) is an offline "
        "upper bound for the whole gang sequence on the starting cluster. Score = mean `placementScore` of "
        "CP-SAT's placements (its own proven bound per gang). grove CP-SAT (`cpsat`) is `place()` with its default "
        "options: our greedy pass, then CP-SAT where it may improve the plan; grove greedy (`grove-greedy`) is the "
        "same greedy pass with CP-SAT off. 'answer used' counts placed gangs whose plan came from CP-SAT or from "
        "greedy (all seeds); 'CP-SAT runs / time-limit hits' counts calls in which CP-SAT ran and those that stopped "
        "at the deterministic time limit (status FEASIBLE or UNKNOWN), failed attempts included. p99 is a "
        f"nearest-rank p99 over every call of every seed (n), or the maximum where there are fewer than {P99_SAMPLES} "
        "calls. "
        '`cpsat-exact` takes CP-SAT\'s plan whenever it is cheaper under the whole objective (`refine="all"`). '
        "`grove CP-SAT + look-ahead` (`cpsat-ahead`, the disaggregated sequences up to 1,000 nodes) is the full "
        "path with the queue look-ahead (`grove_sched.placement.place_ahead`, the next 40 gangs rolled out with "
        "greedy behind each of the gang's candidate plans); its answer-used cell adds the gangs placed on another "
        "plan than the full path's own answer. "
        "Multi-seed workloads repeat background load and gang sequence per seed; per-seed numbers are in "
        "results.json. Time per gang is the wall time of one placement "
        "call, failed attempts included. Gangs arrive one at a time and are not retried (no departures), except "
        "in the knavigator wave replay. openb GPU-sharing tasks are rounded up to whole GPUs and pods come in "
        "synthesised gangs, so openb allocation is not comparable with FGD's per-pod 92.9-95.4%.\n"
    )


def write(
    results: Sequence[WorkloadResult],
    suite: str,
    out: Path,
    command: str,
    plots: bool = True,
    held_out: HeldOut | None = None,
) -> Path:
    """Write results.json, latest.md and the plots for a suite; returns the suite folder."""
    folder = out / suite
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(_json(results, suite, command, held_out), indent=1) + "\n")
    text = markdown(results, suite, command, held_out)
    (folder / "latest.md").write_text(text)
    shutil.copyfile(folder / "latest.md", out / "latest.md")
    if plots and results:
        sequential = [r for r in results if not r.workload.waves]
        if sequential:
            _plot_allocation(sequential, folder / "allocation.png")
            _plot_latency(sequential, folder / "latency.png")
        for r in results:
            if r.workload.checkpoints:
                _plot_curves(r, folder / f"curve-{_slug(r.workload.name)}.png")
    return folder


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def summaries_of(results: Sequence[WorkloadResult]) -> list[Summary]:
    """All summaries of a run, flattened (for callers that post-process numbers)."""
    return [s for r in results for s in r.summaries]
