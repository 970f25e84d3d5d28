"""Numbers of one end-to-end run, from the pod timestamps, the PodGangs and the scheduler's metrics.

Definitions (also printed under the report's table):

* **Throughput** (scheduler_perf's SchedulingThroughput): workload pods bound / (last bind - first bind), plus the
  per-second timeline of binds from the first one.
* **Gang latency**: for each PodGang, *ready* = the moment every PodGroup had at least `minReplicas` pods without
  the `grove.io/podgang-pending-creation` gate (the `minReplicas`-th gate removal in each group, latest over the
  groups: the scheduler's own readiness rule), *bound* = the moment every PodGroup had `minReplicas` pods bound
  (the `minReplicas`-th bind in each group, latest over the groups: the last *required* bind). Latency = bound -
  ready. A scaled gang is ready only after its base gang is scheduled, as the operator lifts its gates then.
* **Creation → bound**: gang *bound* minus the moment this process sent the create request of its PodCliqueSet;
  **creation → ready** likewise for *ready* (the operator's part: pods, PodGang, gate removal).
* **Solve share**: increase of `grove_scheduler_solve_duration_seconds_sum` over the run / burst wall time (first
  to last bind); the scheduler solves in a worker thread, so this is the fraction of the burst spent solving.
* **Pods/s after the last gate removal**: binds after every workload pod was ungated / (last bind - that moment),
  when at least a tenth of the pods (and 100) were bound then: the scheduler's rate once the operator is done.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.e2e.observer import PodTimes

__all__ = ["KUBE_SCHEDULER_TAS_PODS_PER_S", "GangTimes", "gang_times", "histogram_quantile", "summarize"]

KUBE_SCHEDULER_TAS_PODS_PER_S = (492.0, 630.0)  # 5,000 nodes, 4-pod gangs, required rack (benchmark-anchors §2.1)
SOLVE = "grove_scheduler_solve_duration_seconds"
BIND = "grove_scheduler_bind_duration_seconds"
GANG = "grove_scheduler_gang_scheduling_duration_seconds"
ATTEMPTS = "grove_scheduler_schedule_attempts_total"


@dataclass(frozen=True, slots=True)
class GangTimes:
    """One PodGang's ready and bound moments (monotonic s; None when never reached) and its PCS."""

    name: str
    pcs: str
    ready: float | None
    bound: float | None


def _kth(values: Sequence[float | None], k: int) -> float | None:
    """The k-th smallest known value (1-based), None when fewer than k are known."""
    known = sorted(v for v in values if v is not None)
    return known[k - 1] if k >= 1 and len(known) >= k else (0.0 if k == 0 else None)


def gang_times(podgangs: Sequence[Mapping[str, Any]], pods: Mapping[str, PodTimes]) -> list[GangTimes]:
    """Ready and bound moments of each PodGang from its PodGroups' references and `minReplicas`."""
    out = []
    for gang in podgangs:
        meta = gang.get("metadata") or {}
        ready: float | None = -math.inf
        bound: float | None = -math.inf
        for group in (gang.get("spec") or {}).get("podgroups") or []:
            refs = [pods.get(str(ref.get("name"))) for ref in group.get("podReferences") or []]
            need = int(group.get("minReplicas", len(refs)))
            r = _kth([p.ungated if p else None for p in refs], need)
            b = _kth([p.bound if p else None for p in refs], need)
            ready = None if r is None or ready is None else max(ready, r)
            bound = None if b is None or bound is None else max(bound, b)
        out.append(
            GangTimes(
                str(meta.get("name", "")),
                str((meta.get("labels") or {}).get("app.kubernetes.io/part-of", "")),
                None if ready == -math.inf else ready,
                None if bound == -math.inf else bound,
            )
        )
    return out


def _pct(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def _delta(after: Mapping[str, float], before: Mapping[str, float], key: str) -> float:
    return after.get(key, 0.0) - before.get(key, 0.0)


def histogram_quantile(q: float, after: Mapping[str, float], before: Mapping[str, float], name: str) -> float | None:
    """Prometheus-style quantile (linear within a bucket) of a histogram's increase between two scrapes."""
    buckets = []
    for key, value in after.items():
        if key.startswith(f"{name}_bucket{{") and 'le="' in key:
            le = key.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float(le), value - before.get(key, 0.0)))
    buckets.sort()
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if math.isinf(upper):
                return lower
            return lower + (upper - lower) * ((rank - below) / (count - below) if count > below else 0.0)
        lower, below = upper, count
    return lower


def summarize(
    pods: Mapping[str, PodTimes],
    gangs: Sequence[GangTimes],
    created: Mapping[str, float],
    metrics_before: Mapping[str, float],
    metrics_after: Mapping[str, float],
    start: float,
) -> dict[str, Any]:
    """The run's measured numbers (seconds relative to `start`, the first create request)."""
    binds = sorted(p.bound for p in pods.values() if p.bound is not None)
    first, last = (binds[0], binds[-1]) if binds else (start, start)
    burst = last - first
    throughput = (len(binds) / burst) if burst > 0 else None
    timeline = [0] * (int(burst) + 1 if binds else 0)
    for t in binds:
        timeline[int(t - first)] += 1
    latencies = [g.bound - g.ready for g in gangs if g.bound is not None and g.ready is not None]
    to_bound = [g.bound - created[g.pcs] for g in gangs if g.bound is not None and g.pcs in created]
    to_ready = [g.ready - created[g.pcs] for g in gangs if g.ready is not None and g.pcs in created]
    solve_sum = _delta(metrics_after, metrics_before, f"{SOLVE}_sum")
    solve_count = _delta(metrics_after, metrics_before, f"{SOLVE}_count")
    bind_sum = _delta(metrics_after, metrics_before, f"{BIND}_sum")
    bind_count = _delta(metrics_after, metrics_before, f"{BIND}_count")
    gang_count = _delta(metrics_after, metrics_before, f"{GANG}_count")
    gang_sum = _delta(metrics_after, metrics_before, f"{GANG}_sum")
    attempts = {
        key.split('result="', 1)[1].split('"', 1)[0]: int(_delta(metrics_after, metrics_before, key))
        for key in metrics_after
        if key.startswith(f"{ATTEMPTS}{{")
    }
    ungates = [p.ungated for p in pods.values() if p.ungated is not None]
    all_ungated = max(ungates, default=last)
    tail = [t for t in binds if t > all_ungated]
    tail_rate = len(tail) / (last - all_ungated) if len(tail) >= max(100, len(binds) // 10) else None
    low, high = KUBE_SCHEDULER_TAS_PODS_PER_S
    ms = 1000.0
    return {
        "pods_bound": len(binds),
        "gangs_bound": sum(1 for g in gangs if g.bound is not None),
        "first_bind_s": round(first - start, 3),
        "last_bind_s": round(last - start, 3),
        "burst_s": round(burst, 3),
        "pods_per_s": throughput,
        "per_second_timeline": timeline,
        "pods_per_s_after_last_ungate": tail_rate,
        "per_second_p50": _pct([float(v) for v in timeline[:-1]], 50) if len(timeline) > 1 else None,
        "gang_latency_ms": {
            "p50": _scaled(_pct(latencies, 50), ms),
            "p99": _scaled(_pct(latencies, 99), ms),
            "max": _scaled(max(latencies, default=None), ms),
            "min": _scaled(min(latencies, default=None), ms),
            "count": len(latencies),
        },
        "create_to_bound_ms": {
            "p50": _scaled(_pct(to_bound, 50), ms),
            "p99": _scaled(_pct(to_bound, 99), ms),
            "max": _scaled(max(to_bound, default=None), ms),
            "count": len(to_bound),
        },
        "create_to_ready_ms": {
            "p50": _scaled(_pct(to_ready, 50), ms),
            "p99": _scaled(_pct(to_ready, 99), ms),
            "count": len(to_ready),
        },
        "scheduler": {
            "solves": int(solve_count),
            "solve_s_total": round(solve_sum, 3),
            "solve_ms_mean": _scaled(solve_sum / solve_count if solve_count else None, ms),
            "solve_share": (solve_sum / burst) if burst > 0 else None,
            "attempts": attempts,
            "binds": int(bind_count),
            "bind_ms_mean": _scaled(bind_sum / bind_count if bind_count else None, ms),
            "pods_bound_metric": int(_delta(metrics_after, metrics_before, "grove_scheduler_pods_bound_total")),
            "gang_latency_ms_mean": _scaled(gang_sum / gang_count if gang_count else None, ms),
            "gang_latency_ms_p50": _scaled(histogram_quantile(0.5, metrics_after, metrics_before, GANG), ms),
            "gang_latency_ms_p99": _scaled(histogram_quantile(0.99, metrics_after, metrics_before, GANG), ms),
        },
        "vs_kube_scheduler_tas": {
            "published_pods_per_s": [low, high],
            "ratio_low": (throughput / low) if throughput else None,
            "ratio_high": (throughput / high) if throughput else None,
        },
    }


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else round(value * factor, 2)
