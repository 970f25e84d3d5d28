"""Summaries of the grove-sim throughput benchmark: medians over repetitions and the Markdown tables to paste.

Kept apart from the measuring code so the README figures and the JSON summary come from one definition.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

__all__ = ["PHASE_LABELS", "markdown", "summarize"]

PHASE_LABELS: dict[str, str] = {
    "create": "pod creates (aiohttp, raw JSON)",
    "bind": "pods/binding (aiohttp, raw JSON)",
    "status_patch": "pods/status strategic merge patch (aiohttp)",
    "status_patch_k8s_asyncio": "pods/status strategic merge patch (kubernetes-asyncio)",
}


def _median(values: Sequence[float]) -> float:
    clean = [v for v in values if v == v]
    return statistics.median(clean) if clean else float("nan")


def summarize(repetitions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Medians over repetitions of every rate, latency and memory figure; worst case of every delivery check."""
    if not repetitions:
        return {}
    phases: dict[str, Any] = {}
    for name in repetitions[0]["phases"]:
        rows = [rep["phases"][name] for rep in repetitions]
        phases[name] = {
            "requests": rows[0]["requests"],
            "rate_per_s": round(_median([r["rate_per_s"] for r in rows]), 1),
            "rates_per_s": [r["rate_per_s"] for r in rows],
            "p50_ms": round(_median([r["p50_ms"] for r in rows]), 2),
            "p99_ms": round(_median([r["p99_ms"] for r in rows]), 2),
            "server_cpu_ms_per_req": round(_median([r.get("server_cpu_ms_per_req", float("nan")) for r in rows]), 3),
            "client_cpu_ms_per_req": round(_median([r.get("client_cpu_ms_per_req", float("nan")) for r in rows]), 3),
            "errors": sum(r["errors"] for r in rows),
        }
    watchers = [w for rep in repetitions for w in rep["watch"]["watchers"]]
    verify = [rep["verify"] for rep in repetitions]
    return {
        "phases": phases,
        "rss_idle_mib": round(_median([rep["rss_mib"]["idle"] for rep in repetitions]), 1),
        "rss_loaded_mib": round(_median([rep["rss_mib"]["loaded"] for rep in repetitions]), 1),
        "rss_per_pod_kib": round(_median([rep["rss_mib"]["per_pod_kib"] for rep in repetitions]), 2),
        "watch_events_per_watcher": min(w["events"] for w in watchers) if watchers else 0,
        "watch_missed_events": max((w["missed_events"] for w in watchers), default=0),
        "watch_stale_pods": max((w["stale_pods"] for w in watchers), default=0),
        "watch_all_caught_up": all(w["caught_up"] for w in watchers),
        "watch_catch_up_s": round(_median([rep["watch"]["catch_up_s"] for rep in repetitions]), 3),
        "pods_missing": max(v["missing"] for v in verify),
        "pods_wrong_node": max(v["wrong_node"] for v in verify),
        "pods_failed": max(v["phases"].get("Failed", 0) for v in verify),
    }


def markdown(result: dict[str, Any]) -> str:
    """The phase table and the memory/watch table, as printed and as pasted into the README."""
    config, summary = result["config"], result["summary"]
    reps = len(result["repetitions"])
    head = (
        f"grove-sim with {config['nodes']:,} nodes, {config['pods']:,} pods, {config['watchers']} cluster-wide "
        f"watchers, concurrency {config['concurrency']}; median of {reps} run(s)\n\n"
    )
    lines = [
        "| phase | requests | req/s | p50 ms | p99 ms | server CPU ms/req | client CPU ms/req | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in summary["phases"].items():
        lines.append(
            f"| {PHASE_LABELS.get(name, name)} | {row['requests']:,} | {row['rate_per_s']:,.0f} | "
            f"{row['p50_ms']:.1f} | {row['p99_ms']:.1f} | {row.get('server_cpu_ms_per_req', float('nan')):.3f} | "
            f"{row.get('client_cpu_ms_per_req', float('nan')):.3f} | {row['errors']} |"
        )
    lines += [
        "",
        "| measure | value |",
        "|---|---:|",
        f"| server RSS, idle with {config['nodes']:,} nodes | {summary['rss_idle_mib']:,.0f} MiB |",
        f"| server RSS, {config['pods']:,} pods resident | {summary['rss_loaded_mib']:,.0f} MiB |",
        f"| RSS per resident pod | {summary['rss_per_pod_kib']:.1f} KiB |",
        f"| watch events received per watcher (min) | {summary['watch_events_per_watcher']:,} |",
        f"| watch events missed / stale pods (max over watchers) | "
        f"{summary['watch_missed_events']} / {summary['watch_stale_pods']} |",
        f"| watchers caught up after the last write | {summary['watch_catch_up_s']:.2f} s |",
        f"| pods missing / on the wrong node / Failed | {summary['pods_missing']} / {summary['pods_wrong_node']} / "
        f"{summary['pods_failed']} |",
    ]
    return head + "\n".join(lines)
