"""Load benchmark for grove-sim: write throughput (creates, binds, status patches) and memory with many pods.

Run from the repository root::

    .venv/bin/python benchmarks/sim_load.py --nodes 5000 --pods 50000 --concurrency 64 --watchers 3

It starts ``grove-sim up`` as a separate process (so the client's work does not share its CPU time slice), then
from this process, with an aiohttp client and N concurrent requests, measures requests/s for three phases in
repeated batches (the median over batches is printed): pod creates, pod bindings (``pods/{name}/binding``), and
pod status patches (strategic merge patch of a condition, as a kubelet or operator sends). ``--watchers`` raw
watch streams on all pods are kept open and drained during the run, so every write fans out to them. At the end
it prints the server's RSS with every pod resident.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import yaml


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _drain_watch(session: aiohttp.ClientSession, url: str, counter: list[int]) -> None:
    async with session.get(f"{url}/api/v1/pods?watch=true&resourceVersion=0&timeoutSeconds=3600") as resp:
        async for _line in resp.content:
            counter[0] += 1


async def _run_batches(
    label: str, total: int, batch: int, concurrency: int, op: Callable[[int], Awaitable[None]]
) -> tuple[float, list[float]]:
    rates = []
    semaphore = asyncio.Semaphore(concurrency)

    async def guarded(i: int) -> None:
        async with semaphore:
            await op(i)

    for start in range(0, total, batch):
        end = min(total, start + batch)
        began = time.perf_counter()
        await asyncio.gather(*(guarded(i) for i in range(start, end)))
        rates.append((end - start) / (time.perf_counter() - began))
    median = statistics.median(rates)
    print(f"{label:>14}: median {median:8.0f} req/s over {len(rates)} batches of {batch}", flush=True)
    return median, rates


async def _bench(url: str, args: argparse.Namespace, server_pid: int) -> None:
    connector = aiohttp.TCPConnector(limit=args.concurrency + args.watchers + 4)
    async with aiohttp.ClientSession(connector=connector) as session:
        events = [0]
        watchers = [asyncio.create_task(_drain_watch(session, url, events)) for _ in range(args.watchers)]
        await asyncio.sleep(0.5)
        pods_url = f"{url}/api/v1/namespaces/default/pods"
        json_headers = {"Content-Type": "application/json"}

        async def create(i: int) -> None:
            body = {
                "metadata": {"name": f"pod-{i}", "labels": {"app": "bench", "gang": str(i // 8)}},
                "spec": {
                    "schedulerName": "bench",
                    "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": "1m"}}}],
                },
            }
            async with session.post(pods_url, data=json.dumps(body), headers=json_headers) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"create pod-{i}: {resp.status} {await resp.text()}")

        async def bind(i: int) -> None:
            body = {"metadata": {"name": f"pod-{i}"}, "target": {"kind": "Node", "name": f"node-{i % args.nodes:04d}"}}
            async with session.post(f"{pods_url}/pod-{i}/binding", data=json.dumps(body), headers=json_headers) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"bind pod-{i}: {resp.status} {await resp.text()}")

        async def patch_status(i: int) -> None:
            body = {"status": {"conditions": [{"type": "BenchProbe", "status": "True", "reason": str(i)}]}}
            headers = {"Content-Type": "application/strategic-merge-patch+json"}
            async with session.patch(f"{pods_url}/pod-{i}/status", data=json.dumps(body), headers=headers) as resp:
                if resp.status != 200:
                    raise RuntimeError(f"patch pod-{i}: {resp.status} {await resp.text()}")

        bound = min(args.pods, args.bind)
        await _run_batches("creates", args.pods, args.batch, args.concurrency, create)
        await _run_batches("binds", bound, args.batch, args.concurrency, bind)
        await _run_batches("status patches", bound, args.batch, args.concurrency, patch_status)
        print(f"{'watch events':>14}: {events[0]} delivered to {args.watchers} watchers", flush=True)
        print(f"{'server RSS':>14}: {_rss_mib(server_pid):.0f} MiB with {args.pods} pods and {args.nodes} nodes")
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)


def main() -> int:
    """Start grove-sim, run the phases, print medians."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--bind", type=int, default=20000, help="how many of the pods to bind and patch")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--watchers", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        cmd = [sys.executable, "-m", "grove_sim.cli", "up", "--kubeconfig", str(kubeconfig), "--nodes", str(args.nodes)]
        cmd += ["--log-level", "WARNING"]
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        try:
            for _ in range(600):
                if kubeconfig.exists():
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("grove-sim did not start")
            url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
            print(f"grove-sim at {url} with {args.nodes} nodes; server RSS {_rss_mib(server.pid):.0f} MiB", flush=True)
            asyncio.run(_bench(url, args, server.pid))
        finally:
            server.terminate()
            server.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
