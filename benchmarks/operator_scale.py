"""grove-operator at upstream's weekly scale-test shape: a 500-replica PodCliqueSet (1,000 pods) on 100 nodes.

grove-sim and grove-operator run as separate processes; this process is the "scheduler": a trivial binder that
watches the namespace's pods and binds every ungated, unbound pod round-robin over the nodes. Per run it measures

* create: seconds from creating the PCS until all 1,000 pods exist, and until `availableReplicas` = 500;
* scale-down 500 → 0 (`spec.replicas` via the scale subresource): seconds until no pod is left;
* scale-up 0 → 500 (after the status shows 0 available): seconds until 1,000 pods exist and until
  `availableReplicas` = 500 again;
* the operator's peak resident memory (VmHWM).

and prints the medians over the runs. Usage: ``python -m benchmarks.operator_scale [--runs 3] [--replicas 500]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.sim_throughput_proc import SimProcess
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import NAMESPACES, NODES, PODS, ResourceType

PCS = ResourceType("grove.io", "v1alpha1", "podcliquesets", "PodCliqueSet")
CRDS = Path(__file__).resolve().parent.parent / "crds"
NAMESPACE = "scale"
PHASE_LIMIT = 300.0
LOG_DIR = Path(tempfile.gettempdir())


def workload(replicas: int) -> dict[str, Any]:
    """Upstream's scale fixture shape: one standalone clique of 2 pods (minAvailable 2) per replica."""
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "scale", "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "template": {
                "cliques": [
                    {
                        "name": "worker",
                        "spec": {
                            "roleName": "worker",
                            "replicas": 2,
                            "minAvailable": 2,
                            "podSpec": {
                                "containers": [
                                    {"name": "w", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}
                                ]
                            },
                        },
                    }
                ]
            },
        },
    }


def peak_rss_mib(pid: int) -> float:
    """Peak resident set size (VmHWM) of a process in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Binder:
    """Watches pods and binds each ungated, unbound one round-robin; also counts live pods."""

    def __init__(self, client: KubeClient, nodes: list[str]) -> None:
        self.client = client
        self.nodes = nodes
        self.live: set[str] = set()
        self.bound: set[str] = set()
        self._next = 0
        self._sem = asyncio.Semaphore(64)
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Watch forever (re-watching from a fresh list after any failure)."""
        while True:
            try:
                listing = await self.client.list(PODS, NAMESPACE)
                self.live = set()
                for pod in listing["items"]:
                    self._observe("ADDED", pod)
                rv = listing["metadata"]["resourceVersion"]
                async with self.client.watch(PODS, NAMESPACE, resource_version=rv, timeout_seconds=3600) as events:
                    async for event in events:
                        self._observe(str(event.get("type")), event.get("object") or {})
            except (errors.ApiError, KeyError):
                await asyncio.sleep(0.2)

    def _observe(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        name = str(meta.get("name") or "")
        if kind == "DELETED" or meta.get("deletionTimestamp"):
            self.live.discard(name)
            self.bound.discard(name)
            return
        if kind not in ("ADDED", "MODIFIED"):
            return
        self.live.add(name)
        spec = pod.get("spec") or {}
        if spec.get("nodeName") or spec.get("schedulingGates") or name in self.bound:
            return
        self.bound.add(name)
        node = self.nodes[self._next % len(self.nodes)]
        self._next += 1
        task = asyncio.get_running_loop().create_task(self._bind(name, node))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _bind(self, name: str, node: str) -> None:
        async with self._sem:
            try:
                await self.client.bind(NAMESPACE, name, node)
            except errors.Conflict:
                pass
            except errors.NotFound:
                self.bound.discard(name)


async def until(predicate: Any, poll: float = 0.05) -> float:
    """Seconds until `predicate()` (sync or async) is true; raises after PHASE_LIMIT."""
    start = time.perf_counter()
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return time.perf_counter() - start
        if time.perf_counter() - start > PHASE_LIMIT:
            raise TimeoutError("phase did not finish")
        await asyncio.sleep(poll)


async def available(client: KubeClient, want: int) -> bool:
    """Whether the PCS reports `want` available replicas."""
    pcs = await client.get(PCS, "scale", NAMESPACE)
    return bool((pcs.get("status") or {}).get("availableReplicas") == want)


async def one_run(replicas: int, nodes: int) -> dict[str, float]:
    """Fresh sim + operator processes; the four timings and the operator's peak RSS."""
    with SimProcess(nodes) as sim:
        kubectl = await asyncio.create_subprocess_exec(
            "kubectl", "apply", "-f", str(CRDS),
            stdout=asyncio.subprocess.DEVNULL,
            env={"KUBECONFIG": str(sim.kubeconfig), "PATH": "/usr/bin:/bin", "NO_PROXY": "127.0.0.1,localhost"},
        )  # fmt: skip
        if await kubectl.wait() != 0:
            raise RuntimeError("kubectl apply of the CRDs failed")
        log = LOG_DIR / f"operator-{int(time.time())}.log"
        with log.open("wb") as sink:
            operator = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "grove_operator.cli", "--kubeconfig", str(sim.kubeconfig), "--no-leader-elect",
                "--health-port", "0", "--metrics-port", "0", "--log-level", "WARNING",
                stdout=asyncio.subprocess.DEVNULL, stderr=sink,
            )  # fmt: skip
        client = await KubeClient.from_kubeconfig(str(sim.kubeconfig))
        binder_task: asyncio.Task[None] | None = None
        try:
            with contextlib.suppress(errors.AlreadyExists):
                await client.create(
                    NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
                )
            node_names = sorted(n["metadata"]["name"] for n in (await client.list(NODES))["items"])
            binder = Binder(client, node_names)
            binder_task = asyncio.get_running_loop().create_task(binder.run())
            await asyncio.sleep(2.0)  # let the operator's caches sync before the clock starts
            start = time.perf_counter()
            await client.create(PCS, workload(replicas), NAMESPACE)
            await until(lambda: len(binder.live) >= 2 * replicas)
            created = time.perf_counter() - start
            await until(lambda: available(client, replicas), poll=0.1)
            avail = time.perf_counter() - start
            await client.scale(PCS, "scale", NAMESPACE, 0)
            down = await until(lambda: not binder.live)
            await until(lambda: available(client, 0), poll=0.1)  # status caught up, so scale-up starts from 0
            await client.scale(PCS, "scale", NAMESPACE, replicas)
            start = time.perf_counter()
            await until(lambda: len(binder.live) >= 2 * replicas)
            up_pods = time.perf_counter() - start
            await until(lambda: available(client, replicas), poll=0.1)
            up = time.perf_counter() - start
            return {
                "pods_created_s": created,
                "available_s": avail,
                "scale_down_s": down,
                "scale_up_pods_s": up_pods,
                "scale_up_s": up,
                "operator_peak_rss_mib": peak_rss_mib(operator.pid),
            }
        finally:
            if binder_task is not None:
                binder_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await binder_task
            await client.close()
            if operator.returncode is None:
                operator.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(operator.wait(), 30)
                except TimeoutError:
                    operator.kill()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print per-run numbers and medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--nodes", type=int, default=100)
    args = parser.parse_args(argv)
    results = []
    for i in range(args.runs):
        result = asyncio.run(one_run(args.replicas, args.nodes))
        results.append(result)
        print(f"run {i + 1}: " + ", ".join(f"{k}={v:.2f}" for k, v in result.items()), flush=True)
    print("median: " + ", ".join(f"{k}={statistics.median(r[k] for r in results):.2f}" for k in results[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
