"""grove-scheduler alone against grove-sim: pods bound per second with the operator taken out of the loop.

`python -m benchmarks.e2e.sched_only [--nodes 1000] [--gangs 250] [--runs 3] [--profile] [--resident-pods N]`

Why: in the full e2e run the operator creates the pods and lifts their gates, so its pace can hide the
scheduler's. Here the benchmark itself creates every gang the way the operator leaves it (ungated pods for our
scheduler, labelled with their PodGang, then the PodGang referencing them: the e2e tests' `make_gang` shape, TAS
workload: 4 pods x 2 GPUs with a required rack), all *before* grove-scheduler starts. The scheduler then finds a
full queue once its informers sync, and the run measures from its `/readyz` to its own `pods_bound_total` reaching
every pod: pure scheduling + binding throughput. The scheduler's CPU seconds, its solve-time histogram (so the
share of wall time spent outside the solver) and, with `--profile`, the cProfile of its event-loop thread (the
solver runs in a worker thread, so the profile is exactly "everything but `place`") are reported too.

`--resident-pods N` first creates N small CPU pods already bound (`spec.nodeName` set, spread over the nodes, in
namespace `resident`), so the scheduler starts on a full cluster: its resident memory once its caches are synced
and at the end is reported (#17's 50,000 nodes / 500,000 pods goal: at most 2 GB).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.e2e import procs
from benchmarks.e2e.runner import PODGANGS, _install
from benchmarks.e2e.scenarios import SCENARIOS
from benchmarks.sim_throughput_proc import SimProcess, profile_hotspots
from grove_runtime.client import KubeClient
from grove_runtime.resources import NAMESPACES, PODS

__all__ = ["gang_bodies", "main", "run_once"]

NAMESPACE = "bench"
RESIDENT_NAMESPACE = "resident"
SCHEDULER_NAME = "grove-scheduler"
RACK = "topology.kubernetes.io/rack"
CONCURRENCY = 32
BOUND = "grove_scheduler_pods_bound_total"
SOLVE_SUM = "grove_scheduler_solve_duration_seconds_sum"
SOLVE_COUNT = "grove_scheduler_solve_duration_seconds_count"
BIND_SUM = "grove_scheduler_bind_duration_seconds_sum"
BIND_COUNT = "grove_scheduler_bind_duration_seconds_count"


def gang_bodies(index: int, pods_per_gang: int, gpus_per_pod: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The ungated pods and the PodGang of gang number `index` (required rack, every pod in its minimum)."""
    name = f"g{index:05d}"
    pod_names = [f"{name}-w-{i}" for i in range(pods_per_gang)]
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod, "namespace": NAMESPACE, "labels": {"grove.io/podgang": name}},
            "spec": {
                "schedulerName": SCHEDULER_NAME,
                "containers": [
                    {
                        "name": "w",
                        "image": "registry.example.com/worker:1",
                        "resources": {
                            "requests": {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": str(gpus_per_pod)},
                            "limits": {"nvidia.com/gpu": str(gpus_per_pod)},
                        },
                    }
                ],
            },
        }
        for pod in pod_names
    ]
    podgang = {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "podgroups": [
                {
                    "name": "w",
                    "podReferences": [{"namespace": NAMESPACE, "name": pod} for pod in pod_names],
                    "minReplicas": pods_per_gang,
                }
            ],
            "topologyConstraint": {"packConstraint": {"required": RACK}},
        },
    }
    return pods, podgang


async def _create_gangs(client: KubeClient, gangs: int, pods_per_gang: int, gpus_per_pod: int) -> None:
    """Pods first, then their PodGang (a PodGang whose pods are all there is complete, never malformed)."""
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(index: int) -> None:
        pods, podgang = gang_bodies(index, pods_per_gang, gpus_per_pod)
        async with sem:
            for pod in pods:
                await client.create(PODS, pod)
            await client.create(PODGANGS, podgang)

    await asyncio.gather(*(one(index) for index in range(gangs)))


async def _create_resident(client: KubeClient, count: int, nodes: int) -> None:
    """`count` bound 0.1-core pods, round robin over the nodes, as a busy cluster's services would be."""
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": RESIDENT_NAMESPACE}})
    sem = asyncio.Semaphore(CONCURRENCY * 2)
    width = len(str(nodes - 1))  # grove-sim's node names: node-<index zero-padded to the largest index>

    async def one(index: int) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"svc-{index:06d}", "labels": {"app": f"svc-{index % 97}"}},
            "spec": {
                "nodeName": f"node-{index % nodes:0{width}d}",
                "containers": [
                    {"name": "s", "image": "registry.example.com/svc:1", "resources": {"requests": {"cpu": "100m"}}}
                ],
            },
        }
        async with sem:
            await client.create(PODS, body, RESIDENT_NAMESPACE)

    for start in range(0, count, 10_000):
        await asyncio.gather(*(one(index) for index in range(start, min(count, start + 10_000))))


def _wait_bound(scheduler: procs.Child, expected: int, timeout: float) -> tuple[float, dict[str, float]]:
    """Poll the scheduler's metrics until `expected` pods are bound; returns (moment, last scrape)."""
    deadline = time.monotonic() + timeout
    while True:
        if not scheduler.alive():
            raise RuntimeError(f"grove-scheduler died; log: {scheduler.log}")
        try:
            metrics = scheduler.metrics()
        except OSError:  # a scrape that times out while the scheduler is busy (TimeoutError, URLError): ask again
            metrics = {}
        if metrics.get(BOUND, 0.0) >= expected:
            return time.monotonic(), metrics
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {metrics.get(BOUND, 0):.0f}/{expected} pods bound within {timeout:.0f} s")
        time.sleep(0.2)


async def _measure(sim: SimProcess, args: argparse.Namespace, logdir: Path) -> dict[str, Any]:
    client = await KubeClient.from_kubeconfig(str(sim.kubeconfig))
    profile_out = logdir / "scheduler.prof" if args.profile else None
    scheduler = procs.scheduler(sim.kubeconfig, logdir, profile_out)
    expected = args.gangs * args.pods_per_gang
    try:
        await _install(client, SCENARIOS["tas-quick"].with_overrides(topology=args.topology))
        if args.resident_pods:
            await _create_resident(client, args.resident_pods, args.nodes)
        created = time.monotonic()
        await _create_gangs(client, args.gangs, args.pods_per_gang, args.gpus_per_pod)
        create_s = time.monotonic() - created
        started = time.monotonic()
        scheduler.start()
        await asyncio.to_thread(scheduler.wait_ready, args.timeout)  # a full cluster takes a while to list
        ready = time.monotonic()
        rss_synced = scheduler.memory()[0]
        cpu_before = procs.cpu_seconds(scheduler.pid)
        done, metrics = await asyncio.to_thread(_wait_bound, scheduler, expected, args.timeout)
        cpu = procs.cpu_seconds(scheduler.pid) - cpu_before
        rss_end, rss_peak = scheduler.memory()
        pods = (await client.list(PODS, NAMESPACE))["items"]
    finally:
        scheduler.stop()
        await client.close()
    bound = sum(1 for pod in pods if (pod.get("spec") or {}).get("nodeName"))
    wall = done - ready
    solve_n = max(metrics.get(SOLVE_COUNT, 0.0), 1.0)
    bind_n = max(metrics.get(BIND_COUNT, 0.0), 1.0)
    result: dict[str, Any] = {
        "nodes": args.nodes,
        "gangs": args.gangs,
        "pods": expected,
        "pods_bound_in_api": bound,
        "resident_pods": args.resident_pods,
        "scheduler_rss_mib": {"synced": round(rss_synced, 1), "end": round(rss_end, 1), "peak": round(rss_peak, 1)},
        "create_s": round(create_s, 2),
        "ready_s": round(ready - started, 1),
        "wall_s": round(wall, 3),
        "pods_per_s": round(expected / wall, 1),
        "scheduler_cpu_s": round(cpu, 2),
        "solves": int(metrics.get(SOLVE_COUNT, 0.0)),
        "solve_mean_ms": round(1000 * metrics.get(SOLVE_SUM, 0.0) / solve_n, 1),
        "solve_share": round(metrics.get(SOLVE_SUM, 0.0) / wall, 3),
        "bind_mean_ms": round(1000 * metrics.get(BIND_SUM, 0.0) / bind_n, 1),
        "attempts": {
            key.split('"')[1]: int(value)
            for key, value in metrics.items()
            if key.startswith("grove_scheduler_schedule_attempts_total{")
        },
    }
    if profile_out is not None and profile_out.exists():
        result["profile"] = profile_hotspots(profile_out, top=40)
    return result


def run_once(args: argparse.Namespace) -> dict[str, Any]:
    """One run with a fresh grove-sim and scheduler."""
    logdir = Path(tempfile.mkdtemp(prefix="grove-sched-only-"))
    with SimProcess(args.nodes, gpus_per_node=args.gpus_per_node, topology=args.topology) as sim:
        result = asyncio.run(_measure(sim, args, logdir))
    result["logs"] = str(logdir)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.e2e.sched_only", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--topology", default="block=10,rack=5", help="grove-sim topology (default: 50 racks)")
    parser.add_argument("--gangs", type=int, default=250, help="gangs created before the scheduler starts")
    parser.add_argument("--pods-per-gang", type=int, default=4)
    parser.add_argument("--gpus-per-pod", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for every bind")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--resident-pods", type=int, default=0, help="bound CPU pods created before the gangs")
    parser.add_argument("--profile", action="store_true", help="run the scheduler under cProfile (event-loop thread)")
    parser.add_argument("--json", type=Path, help="write the command and every run's numbers to this file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print one line per run and the median; returns the exit status."""
    args = _parser().parse_args(argv)
    results = []
    for run in range(args.runs):
        result = run_once(args)
        results.append(result)
        print(
            f"run {run + 1}/{args.runs}: {args.nodes} nodes, {result['pods']} pods ({result['pods_bound_in_api']} "
            f"bound in the API) in {result['wall_s']} s = {result['pods_per_s']} pods/s; scheduler CPU "
            f"{result['scheduler_cpu_s']} s; {result['solves']} solves, mean {result['solve_mean_ms']} ms, "
            f"share {result['solve_share']}; bind mean {result['bind_mean_ms']} ms; {result['attempts']}; "
            f"scheduler RSS MiB {result['scheduler_rss_mib']} with {result['resident_pods']} resident pods",
            file=sys.stderr,
        )
        for row in result.get("profile", [])[:25]:
            own, cumulative = row["tottime_s"], row["cumtime_s"]
            print(f"    {own:8.2f} s own {cumulative:8.2f} s cum  {row['function']}", file=sys.stderr)
    rates = [r["pods_per_s"] for r in results]
    median = statistics.median(rates)
    print(f"median {median} pods/s over {len(rates)} run(s): {rates}")
    if args.json is not None:
        shown = shlex.join(["python", "-m", "benchmarks.e2e.sched_only", *(sys.argv[1:] if argv is None else argv)])
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        summary = {"command": shown, "created": when, "cpus": os.cpu_count(), "median_pods_per_s": median}
        runs = [{k: v for k, v in r.items() if k != "logs"} for r in results]  # temporary folders of this machine
        args.json.write_text(json.dumps({**summary, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
