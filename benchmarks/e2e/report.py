"""End-to-end output: `results.json`, a self-contained `latest.md` and a bound-pods plot per scenario.

Written under `benchmarks/results/e2e-<label>/` (label: `quick`, `full` or the scenario names), next to the
placement suites' folders. With several runs per scenario the table has one row per run and a median row, since
numbers on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.e2e.analysis import KUBE_SCHEDULER_TAS_PODS_PER_S
from benchmarks.e2e.scenarios import TAS

__all__ = ["markdown", "median_row", "table", "write"]

Result = Mapping[str, Any]
COLUMNS: tuple[tuple[str, Callable[[Result], float | None]], ...] = (
    ("pods_per_s", lambda r: r["numbers"]["pods_per_s"]),
    ("offered_pods_per_s", lambda r: r["numbers"].get("offered_pods_per_s")),
    ("writes_per_pod", lambda r: (r["numbers"].get("writes_per_bound_pod") or {}).get("scheduler_part")),
    ("writes_all_per_pod", lambda r: (r["numbers"].get("writes_per_bound_pod") or {}).get("all")),
    ("cpu_ms_per_pod", lambda r: _cpu_total(r)),
    ("burst_s", lambda r: r["numbers"]["burst_s"]),
    ("gang_p50_ms", lambda r: r["numbers"]["gang_latency_ms"]["p50"]),
    ("gang_p99_ms", lambda r: r["numbers"]["gang_latency_ms"]["p99"]),
    ("create_p50_ms", lambda r: r["numbers"]["create_to_bound_ms"]["p50"]),
    ("create_p99_ms", lambda r: r["numbers"]["create_to_bound_ms"]["p99"]),
    ("ready_p50_ms", lambda r: r["numbers"]["create_to_ready_ms"]["p50"]),
    ("solve_share", lambda r: r["numbers"]["scheduler"]["solve_share"]),
    ("solve_ms_mean", lambda r: r["numbers"]["scheduler"]["solve_ms_mean"]),
    ("sched_gang_p50_ms", lambda r: r["numbers"]["scheduler"]["gang_latency_ms_p50"]),
    ("scheduler_peak_mib", lambda r: r["numbers"]["memory_mib"]["scheduler"]["peak"]),
    ("operator_peak_mib", lambda r: r["numbers"]["memory_mib"]["operator"]["peak"]),
    ("sim_peak_mib", lambda r: r["numbers"]["memory_mib"]["sim"]["peak"]),
)


def _cpu_total(result: Result) -> float | None:
    """CPU milliseconds per bound pod over grove-sim, the operator and the scheduler."""
    per = result["numbers"].get("cpu_ms_per_bound_pod") or {}
    parts = [per.get(name) for name in ("sim", "operator", "scheduler")]
    return None if any(p is None for p in parts) else round(sum(p for p in parts if p is not None), 2)


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def median_row(results: Sequence[Result]) -> dict[str, float | None]:
    """The median of every table column over the runs of one scenario."""
    return {name: _median([get(r) for r in results]) for name, get in COLUMNS}


def _row(results: Sequence[Result], label: str) -> dict[str, float | None]:
    return median_row(results) if label == "median" else {name: get(results[0]) for name, get in COLUMNS}


def _f(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table(by_scenario: Mapping[str, Sequence[Result]]) -> str:
    """One Markdown row per run (and a median row per scenario with several runs)."""
    low, high = KUBE_SCHEDULER_TAS_PODS_PER_S
    lines = [
        "| scenario | run | pods bound | burst s | pods/s | offered pods/s | vs kube-scheduler TAS "
        f"({low:.0f}-{high:.0f} pods/s) | gang latency p50 / p99 ms | create→bound p50 / p99 ms "
        "| create→ready p50 ms | solve share "
        "| mean solve ms | scheduler's gang p50 ms | API writes per bound pod: scheduler's part / all "
        "| CPU ms per bound pod (3 programs) | RSS peak MiB sched / operator / sim | verified |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, results in by_scenario.items():
        labels = [str(i + 1) for i in range(len(results))] + (["median"] if len(results) > 1 else [])
        for label in labels:
            picked = results if label == "median" else [results[int(label) - 1]]
            row = _row(picked, label)
            first = picked[0]
            rate = row["pods_per_s"]
            comparable = first["scenario"]["kind"] == TAS  # the published figure is for TAS gangs only
            ratio = "-" if rate is None or not comparable else f"{rate / high:.2f}-{rate / low:.2f}x"
            ok = all(r["verify"]["ok"] for r in picked)
            pods = f"{first['numbers']['pods_bound']}/{first['scenario']['expected_pods']}" if label != "median" else ""
            lines.append(
                f"| {name} | {label} | {pods} | {_f(row['burst_s'], 1)} | **{_f(rate, 1)}**{_kind(picked)} "
                f"| {_f(row['offered_pods_per_s'], 1)} | {ratio} "
                f"| {_f(row['gang_p50_ms'])} / {_f(row['gang_p99_ms'])} "
                f"| {_f(row['create_p50_ms'])} / {_f(row['create_p99_ms'])} | {_f(row['ready_p50_ms'])} "
                f"| {_f(None if row['solve_share'] is None else 100 * row['solve_share'], 1)}% "
                f"| {_f(row['solve_ms_mean'], 1)} | {_f(row['sched_gang_p50_ms'])} "
                f"| {_f(row['writes_per_pod'], 2)} / {_f(row['writes_all_per_pod'], 2)} "
                f"| {_f(row['cpu_ms_per_pod'], 2)} "
                f"| {_f(row['scheduler_peak_mib'])} / {_f(row['operator_peak_mib'])} / {_f(row['sim_peak_mib'])} "
                f"| {'yes' if ok else 'NO'} |"
            )
    return "\n".join(lines)


def _kind(results: Sequence[Result]) -> str:
    """ " (capacity)" when the offered load exceeded what the pipeline took in every run, " (arrival)" when the
    arrival rate bounded the figure."""
    flags = [r["numbers"].get("capacity") for r in results]
    if all(flags):
        return " (capacity)"
    return " (arrival)" if not any(flags) else ""


def _findings(by_scenario: Mapping[str, Sequence[Result]]) -> list[str]:
    low, high = KUBE_SCHEDULER_TAS_PODS_PER_S
    out = []
    for name, results in by_scenario.items():
        row = median_row(results)
        scenario = results[0]["scenario"]
        rate = row["pods_per_s"]
        if scenario["kind"] == TAS and rate is not None:
            comparable = scenario["nodes"] == 5000 and scenario["pods_per_gang"] == 4
            note = "" if comparable else " (not the 5,000-node shape, so only indicative)"
            out.append(
                f"{name}: {rate:.1f} pods/s end to end vs kube-scheduler's published {low:.0f}-{high:.0f} pods/s "
                f"for 4-pod required-rack gangs at 5,000 nodes: {rate / high:.2f}-{rate / low:.2f}x{note}."
            )
        first = results[0]["numbers"]
        cpu = first.get("cpu_s") or {}
        if cpu:
            spent = ", ".join(f"{name} {value:.1f} s" for name, value in cpu.items())
            out.append(
                f"{name} (run 1): CPU used during the {first['cpu_wall_s']:.0f} s run: {spent} "
                f"({os.cpu_count()} CPUs available)."
            )
        per_pod = first.get("cpu_ms_per_bound_pod") or {}
        if per_pod:
            shown = ", ".join(f"{who} {ms:.2f}" for who, ms in per_pod.items() if ms is not None)
            out.append(f"{name} (run 1): CPU ms per bound pod: {shown}.")
        writes = first.get("writes") or {}
        if writes:
            bound = max(first["pods_bound"], 1)
            shown = ", ".join(f"{what} {n} ({n / bound:.2f}/pod)" for what, n in writes.items())
            out.append(f"{name} (run 1): API writes seen by watches, by what and writer: {shown}.")
        tail = first.get("pods_per_s_after_last_ungate")
        if tail is not None:
            out.append(f"{name} (run 1): {tail:.1f} pods/s after the operator had lifted every gate (scheduler alone).")
        attempts = first["scheduler"].get("attempts") or {}
        if any(result != "scheduled" and count for result, count in attempts.items()):
            shown = ", ".join(f"{result} {count}" for result, count in sorted(attempts.items()) if count)
            out.append(f"{name} (run 1): scheduler attempts by result: {shown}.")
        for r in results:
            if not r["verify"]["ok"]:
                out.append(f"{name}: VERIFICATION FAILED: {'; '.join(r['verify']['problems'][:5])}")
    return out


DEFINITIONS = (
    "Pods/s: workload pods bound / (last bind - first bind), as scheduler_perf's SchedulingThroughput; the "
    "per-second timeline is in results.json. It is the pipeline's capacity, marked (capacity), when the offered "
    "load (PodCliqueSets created per second x pods each, over the create phase) was at least 1.5 times it; "
    "otherwise (arrival) the creation rate bounded it. API writes per bound pod: every write that changed an "
    "object in the benchmark namespace, seen by one watch per resource and classified by diff "
    "(`benchmarks/e2e/writes.py`); the scheduler's part is binds + kubelet status writes + the scheduler's "
    "Events and PodGang status writes (the floor is 2: a bind and a status write). CPU ms per bound pod: CPU "
    "seconds of grove-sim, operator and scheduler during the run / pods bound. "
    "Everything runs as separate processes (grove-sim, grove-operator, "
    "grove-scheduler, and this benchmark creating PodCliqueSets and watching pods) on the same machine, so this is "
    "the pipeline's throughput (operator pod creation and gate removal included), not the scheduler's alone. "
    "Gang latency: per PodGang, from the moment every PodGroup had `minReplicas` pods without the "
    "`grove.io/podgang-pending-creation` gate to the moment every PodGroup had `minReplicas` pods bound (both seen "
    "by this process's pod watch). Create→bound: from this process's PCS create request to the same last required "
    "bind; create→ready: to the gang's ready moment (the operator's part). Solve share: scheduler solve seconds "
    "(`grove_scheduler_solve_duration_seconds_sum` increase) / burst seconds. Scheduler's gang p50: the "
    "scheduler's own `gang_scheduling_duration_seconds` histogram (its clock starts when it first finds the gang "
    "ready, so it excludes time the gang waited in its queue before that). RSS peak: VmHWM at the end of the run. "
    "Verified: every gang's required pods bound, every required topology constraint holds by node labels, no node "
    "over-committed, no pod Failed."
)


def markdown(by_scenario: Mapping[str, Sequence[Result]], label: str, command: str) -> str:
    """The self-contained `latest.md`."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    scenarios = "\n".join(f"- `{name}`: {results[0]['scenario']['summary']}" for name, results in by_scenario.items())
    found = "\n".join(f"- {line}" for line in _findings(by_scenario)) or "- (nothing to compare)"
    return (
        f"# End-to-end benchmark: `e2e {label}`\n\n"
        f"Command: `{command}` ({when}, {os.cpu_count()} CPUs, Python {platform.python_version()}).\n\n"
        f"{scenarios}\n\n{table(by_scenario)}\n\n## Findings\n\n{found}\n\n{DEFINITIONS}\n"
    )


def _plot(results: Sequence[Result], path: Path) -> None:
    """Cumulative pods ungated and bound over time, binds per second behind them (first run of a scenario)."""
    result = results[0]
    timeline = result["timeline"]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for key, label in (
        ("pods_created", "pods created (operator)"),
        ("pods_ungated", "pods ungated (operator)"),
        ("pods_bound", "pods bound (scheduler)"),
    ):
        times = timeline[key]
        ax.step(times, range(1, len(times) + 1), where="post", label=label)
    per_pcs = result["scenario"]["expected_pods"] / max(result["scenario"]["pcs"], 1)
    created = timeline["pcs_created"]
    requested = [per_pcs * (i + 1) for i in range(len(created))]
    ax.step(created, requested, where="post", label="pods requested (PCS created)", linestyle=":")
    ax.set_xlabel("seconds since the first PodCliqueSet was created")
    ax.set_ylabel("pods")
    numbers = result["numbers"]
    per_second = numbers["per_second_timeline"]
    if per_second:
        twin = ax.twinx()
        offset = numbers["first_bind_s"]
        twin.bar([offset + i + 0.5 for i in range(len(per_second))], per_second, width=1.0, alpha=0.15, color="C1")
        twin.set_ylabel("pods bound per second")
    rate = numbers["pods_per_s"]
    ax.set_title(f"{result['scenario']['name']}: {'-' if rate is None else f'{rate:.0f}'} pods/s during the burst")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _without_timeline(result: Result) -> dict[str, Any]:
    """A run for results.json: the raw event moments stay out (the per-second timeline is in `numbers`)."""
    return {key: value for key, value in result.items() if key != "timeline"}


def write(by_scenario: Mapping[str, Sequence[Result]], label: str, out: Path, command: str, plots: bool = True) -> Path:
    """Write results.json, latest.md and one plot per scenario into `out/e2e-<label>/`; returns the folder."""
    folder = out / f"e2e-{label}"
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "suite": f"e2e {label}",
        "command": command,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "scenarios": {
            name: {"runs": [_without_timeline(r) for r in results], "median": median_row(results)}
            for name, results in by_scenario.items()
        },
        "findings": _findings(by_scenario),
    }
    (folder / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    (folder / "latest.md").write_text(markdown(by_scenario, label, command))
    if plots:
        for name, results in by_scenario.items():
            if results and results[0]["timeline"]["pods_bound"]:
                _plot(results, folder / f"bound-{name}.png")
    return folder
