"""The chaos results file: every figure as JSON, and a Markdown table the README quotes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.chaos.runner import ChaosConfig

__all__ = ["passed", "write"]


def passed(result: Mapping[str, Any]) -> bool:
    """No violation, every disruption survived, converged, nothing found by fuzzing."""
    fuzz = result.get("fuzz") or {}
    return (
        result.get("observer", {}).get("violations", 1) == 0
        and all(d.get("survived") for d in result.get("disruptions", []))
        and result.get("converge_after_last_fault_s") is not None
        and not fuzz.get("findings")
    )


def _growth(samples: Mapping[str, list[float]]) -> str:
    return ", ".join(
        f"{name} {values[0]} → {values[-1]} (max {max(values)})" for name, values in samples.items() if values
    )


def _lines(result: Mapping[str, Any], config: ChaosConfig, command: str) -> list[str]:
    observer = result.get("observer", {})
    disruptions = result.get("disruptions", [])
    kinds: dict[str, int] = {}
    for entry in disruptions:
        key = f"{entry['action']} {entry['program']}"
        kinds[key] = kinds.get(key, 0) + 1
    survived = sum(1 for d in disruptions if d.get("survived"))
    faults = result.get("faults_injected", {})
    fuzz = result.get("fuzz") or {}
    rows = [
        ("gangs seen / bound (distinct PodGangs)", f"{observer.get('gangs_seen')} / {observer.get('gangs_bound')}"),
        ("PodCliqueSets created; driver actions", f"{result.get('pcs_created')}; {result.get('actions')}"),
        ("simulated nodes; replicas per program", f"{config.nodes}; {config.replicas}"),
        ("faults injected (grove-sim counters)", f"{sum(faults.values())}: {faults}"),
        ("kills and freezes survived", f"{survived} of {len(disruptions)}: {kinds}"),
        ("replica restarts (exits after SIGKILL or lost leadership)", str(result.get("restarts"))),
        ("invariant violations", f"{observer.get('violations')} {observer.get('violations_by_invariant') or ''}"),
        ("converged after the last fault (s)", str(result.get("converge_after_last_fault_s"))),
        (
            "final state vs fault-free replay",
            f"{len(result.get('diverged', []))} PodCliqueSets differ of {result.get('final_pcs')}",
        ),
        ("max Events per object", str(observer.get("max_events_per_object"))),
        ("lifecycle Events seen (gang terminations, preemptions)", str(observer.get("lifecycle_events") or {})),
        ("fuzzed PodCliqueSets; findings", f"{fuzz.get('examples', 0)}; {fuzz.get('findings', 0)}"),
        ("RSS MiB during fuzzing, first → last batch", _growth(fuzz.get("rss_mib_samples") or {})),
        ("peak RSS MiB per program", str(result.get("peak_rss_mib"))),
        ("driving time s; wall time s", f"{result.get('driving_s')}; {result.get('wall_s')}"),
    ]
    out = [
        "# Chaos suite",
        "",
        f"Command: `{command}` (seed {config.seed}, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}). Verdict: "
        f"**{'pass' if passed(result) else 'FAIL'}**.",
        "",
        "| figure | value |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in rows),
        "",
    ]
    if fuzz:
        out += ["Fuzz outcomes: " + ", ".join(f"{k} {v}" for k, v in fuzz.get("outcomes", {}).items()), ""]
    if observer.get("violation_examples"):
        out += ["Violations (first 20):", "", *(f"- {v}" for v in observer["violation_examples"]), ""]
    return out


def write(result: Mapping[str, Any], config: ChaosConfig, command: str, out: Path, name: str) -> Path:
    """`<out>/<name>.json` and `<out>/<name>.md`; returns the Markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    document = {"command": command, "config": dataclasses.asdict(config), "passed": passed(result), **result}
    (out / f"{name}.json").write_text(json.dumps(document, indent=1, sort_keys=True, default=str) + "\n")
    path = out / f"{name}.md"
    path.write_text("\n".join(_lines(result, config, command)))
    return path
