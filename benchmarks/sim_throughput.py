"""Can grove-sim carry benchmark load? Write throughput, latency, watch fan-out and memory, from another process.

Issue 2 §3 asks the simulated API server to hold 5,000 nodes and 50,000 pods, every pod watched by several
clients, at ≥ 1,000 writes/s. This benchmark starts ``grove-sim up`` as a child process and, from this process,
with aiohttp and raw JSON, measures creates, bindings (``pods/{name}/binding``, a trivial capacity-respecting
binder) and kubelet-style strategic-merge status patches, plus one phase through kubernetes-asyncio as a real
client would send it, while W cluster-wide watchers drain every event. It then checks delivery (no watcher missed
an event or a pod's final state), correctness (every pod exists, every bound pod is on its node and Running) and
the server's RSS idle and with every pod resident. Each phase also reports the server's CPU milliseconds per
request (from ``/proc``), which, unlike wall-clock rates, does not move with other load on a shared machine, and
the load generator's own (this process, watchers included): when the two share too few cores, the rate is bounded
by their sum, not by the server alone. Run::

    .venv/bin/python -m benchmarks.sim_throughput --pods 50000 --nodes 5000 --watchers 3 --concurrency 64
    .venv/bin/python -m benchmarks.sim_throughput --quick          # < 60 s, medians over 3 fresh servers
    .venv/bin/python -m benchmarks.sim_throughput --webhooks       # PodCliqueSet creates without/with webhooks
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import signal
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.sim_throughput_client import kubernetes_asyncio_patch_phase
from benchmarks.sim_throughput_phases import (
    Binder,
    PhaseResult,
    list_all,
    pod_body,
    pod_requests,
    request_json,
    run_phase,
)
from benchmarks.sim_throughput_proc import SimProcess, profile_hotspots
from benchmarks.sim_throughput_report import markdown, summarize
from benchmarks.sim_throughput_watch import PodWatcher
from benchmarks.sim_throughput_webhooks import markdown_webhooks, run_webhooks

__all__ = ["BenchConfig", "main", "measure", "run"]

RESULTS = Path(__file__).resolve().parent / "results"
SMP = "application/strategic-merge-patch+json"


@dataclass
class BenchConfig:
    """What to measure; the defaults are the issue's benchmark load."""

    pods: int = 50_000
    nodes: int = 5_000
    watchers: int = 3
    concurrency: int = 64
    client_pods: int = 5_000
    repeat: int = 1
    gpus_per_node: int = 8
    topology: str = "block=10,rack=5"
    namespace: str = "default"
    progress: bool = True
    catch_up_timeout: float = 300.0


def _condition(type_: str, index: int) -> dict[str, Any]:
    return {
        "status": {
            "conditions": [
                {
                    "type": type_,
                    "status": "True",
                    "reason": "BenchmarkProbe",
                    "message": f"probe {index}",
                    "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            ]
        }
    }


async def measure(
    url: str,
    config: BenchConfig,
    *,
    kubeconfig: Path,
    token: str | None = None,
    rss: Callable[[], float] | None = None,
    cpu: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """One repetition against a running, empty grove-sim at ``url``; returns the repetition's JSON-ready result.

    ``cpu`` reads the server's CPU seconds; each phase then also reports server CPU milliseconds per request.
    """
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    connector = aiohttp.TCPConnector(limit=config.concurrency + config.watchers + 8)
    pods_url = f"{url}/api/v1/namespaces/{config.namespace}/pods"
    known_rvs: set[int] = set()
    async with aiohttp.ClientSession(base_url=None, connector=connector, headers=auth) as session:
        rss_idle = rss() if rss is not None else float("nan")
        nodes, _ = await list_all(session, f"{url}/api/v1/nodes", limit=1000)
        _, start_rv = await list_all(session, f"{url}/api/v1/pods", limit=1)
        watchers = [PodWatcher(url, {}, start_rv) for _ in range(config.watchers)]
        tasks = [asyncio.create_task(w.run(session)) for w in watchers]
        try:
            async with asyncio.timeout(30.0):
                for watcher in watchers:
                    await watcher.connected()

            async def create(i: int) -> None:
                pod = await request_json(session, "POST", pods_url, pod_body(i, config.namespace), expect=201)
                known_rvs.add(int(pod["metadata"]["resourceVersion"]))

            phases: dict[str, PhaseResult] = {}
            server_cpu: dict[str, float] = {}
            client_cpu: dict[str, float] = {}

            async def timed(name: str, phase: Awaitable[PhaseResult]) -> None:
                before, client_before = (cpu() if cpu is not None else float("nan")), time.process_time()
                phases[name] = await phase
                server_cpu[name] = (cpu() if cpu is not None else float("nan")) - before
                client_cpu[name] = time.process_time() - client_before

            await timed(
                "create", run_phase("creates", config.pods, config.concurrency, create, progress=config.progress)
            )
            binder = Binder(nodes)
            placed = [(i, binder.place(pod_requests(i))) for i in range(config.pods)]
            bound = [(i, node) for i, node in placed if node is not None]

            async def bind(k: int) -> None:
                i, node = bound[k]
                body = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": f"bench-{i:06d}"},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                }
                await request_json(session, "POST", f"{pods_url}/bench-{i:06d}/binding", body, expect=201)

            async def patch(k: int) -> None:
                i = bound[k][0]
                body = _condition("grove.io/BenchProbe", i)
                pod = await request_json(
                    session, "PATCH", f"{pods_url}/bench-{i:06d}/status", body, content_type=SMP, expect=200
                )
                known_rvs.add(int(pod["metadata"]["resourceVersion"]))

            await timed("bind", run_phase("binds", len(bound), config.concurrency, bind, progress=config.progress))
            await timed(
                "status_patch",
                run_phase("status patches", len(bound), config.concurrency, patch, progress=config.progress),
            )
            client_names = [f"bench-{i:06d}" for i, _ in bound[: config.client_pods]]
            await timed(
                "status_patch_k8s_asyncio",
                kubernetes_asyncio_patch_phase(
                    kubeconfig, config.namespace, client_names, config.concurrency, known_rvs, progress=config.progress
                ),
            )
            sentinel_name = f"bench-{bound[0][0]:06d}" if bound else "bench-000000"
            sentinel = await request_json(
                session,
                "PATCH",
                f"{pods_url}/{sentinel_name}/status",
                _condition("grove.io/BenchSentinel", 0),
                content_type=SMP,
                expect=200,
            )
            sentinel_rv = int(sentinel["metadata"]["resourceVersion"])
            known_rvs.add(sentinel_rv)
            began = time.perf_counter()
            caught_up = [await w.wait_for_rv(sentinel_rv, config.catch_up_timeout) for w in watchers]
            catch_up = time.perf_counter() - began
            rss_loaded = rss() if rss is not None else float("nan")
            pods, _ = await list_all(session, pods_url, limit=5000)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    final_rvs = {p["metadata"]["name"]: int(p["metadata"]["resourceVersion"]) for p in pods}
    for watcher in watchers:
        known_rvs |= watcher.seen_rvs
    known_rvs |= set(final_rvs.values())
    expected_nodes = {f"bench-{i:06d}": node for i, node in bound}
    by_name = {p["metadata"]["name"]: p for p in pods}
    wrong_node = sum(
        1 for n, node in expected_nodes.items() if (by_name.get(n, {}).get("spec") or {}).get("nodeName") != node
    )
    phase_counts = Counter(str((p.get("status") or {}).get("phase")) for p in pods)
    return {
        "phases": {
            name: {
                **result.as_dict(),
                "server_cpu_ms_per_req": round(server_cpu[name] * 1000 / max(1, result.requests), 3),
                "client_cpu_ms_per_req": round(client_cpu[name] * 1000 / max(1, result.requests), 3),
            }
            for name, result in phases.items()
        },
        "rss_mib": {
            "idle": round(rss_idle, 1),
            "loaded": round(rss_loaded, 1),
            "per_pod_kib": round((rss_loaded - rss_idle) * 1024 / max(1, len(pods)), 2),
        },
        "watch": {
            "watchers": [
                {
                    **w.stats.as_dict(),
                    "caught_up": ok,
                    "missed_events": w.missed(known_rvs, sentinel_rv),
                    "stale_pods": w.stale_pods(final_rvs, sentinel_rv),
                }
                for w, ok in zip(watchers, caught_up, strict=True)
            ],
            "known_events": sum(1 for rv in known_rvs if start_rv < rv <= sentinel_rv),
            "catch_up_s": round(catch_up, 3),
        },
        "verify": {
            "created": config.pods,
            "pods_listed": len(pods),
            "missing": sum(1 for i in range(config.pods) if f"bench-{i:06d}" not in by_name),
            "bound": len(bound),
            "unplaced": config.pods - len(bound),
            "wrong_node": wrong_node,
            "phases": dict(sorted(phase_counts.items())),
            "written_after_sentinel": sum(1 for rv in final_rvs.values() if rv > sentinel_rv),
        },
    }


def run(config: BenchConfig, *, profile_out: Path | None = None) -> dict[str, Any]:
    """Every repetition on a fresh grove-sim child process (always stopped), then the summary."""
    repetitions: list[dict[str, Any]] = []
    command = ""
    for rep in range(config.repeat):
        profile = profile_out if rep == 0 else None
        with SimProcess(
            config.nodes, gpus_per_node=config.gpus_per_node, topology=config.topology, profile_out=profile
        ) as sim:
            command = shlex.join(sim.command())
            time.sleep(0.5)
            repetitions.append(
                asyncio.run(
                    measure(
                        sim.url,
                        config,
                        kubeconfig=sim.kubeconfig,
                        token=sim.token,
                        rss=sim.rss_mib,
                        cpu=sim.cpu_seconds,
                    )
                )
            )
    result: dict[str, Any] = {
        "config": asdict(config),
        "server_command": command,
        "benchmark_command": shlex.join([Path(sys.executable).name, "-m", "benchmarks.sim_throughput", *sys.argv[1:]]),
        "repetitions": repetitions,
        "summary": summarize(repetitions),
    }
    if profile_out is not None and profile_out.exists():
        result["server_hotspots"] = profile_hotspots(profile_out)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.sim_throughput",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    defaults = BenchConfig()
    parser.add_argument("--pods", type=int, default=defaults.pods, help="pods to create (all stay resident)")
    parser.add_argument("--nodes", type=int, default=defaults.nodes, help="simulated nodes")
    parser.add_argument("--watchers", type=int, default=defaults.watchers, help="cluster-wide pod watch streams")
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency, help="requests in flight")
    parser.add_argument(
        "--client-pods", type=int, default=defaults.client_pods, help="pods patched via kubernetes-asyncio"
    )
    parser.add_argument("--repeat", type=int, default=None, help="repetitions on fresh servers (default 1, quick 3)")
    parser.add_argument("--quick", action="store_true", help="2,000 pods, 3 repetitions: finishes in < 60 s")
    parser.add_argument(
        "--json", type=Path, default=None, help="result file (default benchmarks/results/sim_throughput[_quick].json)"
    )
    parser.add_argument(
        "--profile", type=Path, default=None, help="run the first server under cProfile, write stats here"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--webhooks",
        action="store_true",
        help="instead: PodCliqueSet creates without and with grove-operator's admission webhooks (cost per create)",
    )
    return parser


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so the grove-sim child is stopped by its context manager."""
    raise KeyboardInterrupt


def _webhooks_main(args: argparse.Namespace) -> int:
    """``--webhooks``: 2,000 creates (500 with --quick) per phase, 3 repetitions, 100 nodes unless told otherwise."""
    count = 500 if args.quick else min(args.pods, 2_000)
    nodes = 100 if args.nodes == BenchConfig().nodes else args.nodes
    out: Path = args.json or RESULTS / "sim_throughput_webhooks.json"
    try:
        result = run_webhooks(count, min(args.concurrency, 32), args.repeat or 3, nodes)
    except KeyboardInterrupt:
        print("interrupted; grove-sim stopped", file=sys.stderr)
        return 130
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown_webhooks(result))
    print(f"\nJSON: {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: run, print the Markdown tables, write the JSON."""
    args = _parser().parse_args(argv)
    config = BenchConfig(
        pods=args.pods,
        nodes=args.nodes,
        watchers=args.watchers,
        concurrency=args.concurrency,
        client_pods=args.client_pods,
        repeat=args.repeat or 1,
        progress=not args.no_progress and sys.stderr.isatty(),
    )
    if args.quick:
        config.pods, config.client_pods, config.repeat = (
            min(args.pods, 2_000),
            min(args.client_pods, 500),
            args.repeat or 3,
        )
    signal.signal(signal.SIGTERM, _terminate)
    if args.webhooks:
        return _webhooks_main(args)
    out: Path = args.json or RESULTS / ("sim_throughput_quick.json" if args.quick else "sim_throughput.json")
    try:
        result = run(config, profile_out=args.profile.resolve() if args.profile else None)
    except KeyboardInterrupt:
        print("interrupted; grove-sim stopped", file=sys.stderr)
        return 130
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    print(f"\nJSON: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
