"""Rolling update of a 100-replica PodCliqueSet at upstream's scale-test shape (one clique of 2 pods, minAvailable 2).

grove-sim and grove-operator run as separate processes and a trivial binder stands in for the scheduler, exactly as
in `benchmarks/operator_scale.py`. Once every replica is available the pod template's image changes, and the run
measures:

* seconds from the template change until the update has ended (`updateProgress.updateEndedAt`) with every pod
  Ready on the new image and `updatedReplicas` = replicas;
* the fewest available replicas seen during the roll, from the pods themselves (a replica is available while both
  its pods are Ready; counted at every pod event of one list + watch) and from the PodCliqueSet's status
  (`availableReplicas`, sampled every 50 ms);
* pods replaced, and the operator's CPU seconds during the roll.

One replica at a time and one pod at a time inside it (the clique has no room, `minAvailable == replicas`): the
floor is `replicas - 1` available replicas.

Usage: ``python -m benchmarks.rolling_update [--replicas 100] [--runs 1] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.operator_scale import (
    NAMESPACE,
    PCS,
    RESULTS,
    available,
    cluster,
    cpu_seconds,
    report_header,
    until,
    workload,
)
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS

NEW_IMAGE = "busybox:1.37"
PHASE_LIMIT = 900.0


class ReadyPods:
    """Ready pods per PodCliqueSet replica and image, from one list + watch; the fewest available replicas seen."""

    def __init__(self, client: KubeClient, replicas: int, pods_per_replica: int) -> None:
        self.client = client
        self.replicas = replicas
        self.pods_per_replica = pods_per_replica
        self.pods: dict[str, dict[str, Any]] = {}
        self.minimum = replicas
        self.watching = False
        self.deleted = 0

    def available(self) -> int:
        """Replicas whose pods are all Ready now."""
        ready: dict[str, int] = defaultdict(int)
        for pod in self.pods.values():
            if pod["ready"]:
                ready[pod["replica"]] += 1
        return sum(1 for count in ready.values() if count >= self.pods_per_replica)

    def new_ready(self) -> int:
        """Ready pods running the new image."""
        return sum(1 for p in self.pods.values() if p["ready"] and p["image"] == NEW_IMAGE)

    def _observe(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        name = str(meta.get("name"))
        if kind == "DELETED" or meta.get("deletionTimestamp"):
            if self.pods.pop(name, None) is not None:
                self.deleted += 1
        else:
            conditions = (pod.get("status") or {}).get("conditions") or ()
            self.pods[name] = {
                "replica": (meta.get("labels") or {}).get("grove.io/podcliqueset-replica-index"),
                "image": pod["spec"]["containers"][0]["image"],
                "ready": any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
            }
        if self.watching:
            self.minimum = min(self.minimum, self.available())

    async def run(self) -> None:
        """List, then watch until cancelled."""
        listing = await self.client.list(PODS, NAMESPACE)
        for pod in listing["items"]:
            self._observe("ADDED", pod)
        version = listing["metadata"]["resourceVersion"]
        while True:
            with contextlib.suppress(errors.ApiError):
                async with self.client.watch(PODS, NAMESPACE, resource_version=version) as events:
                    async for event in events:
                        obj = event.get("object") or {}
                        version = (obj.get("metadata") or {}).get("resourceVersion") or version
                        self._observe(str(event.get("type")), obj)


async def one_run(replicas: int, nodes: int) -> dict[str, float]:
    """Create, wait for every replica available, change the image, time the roll and watch availability."""
    async with cluster(nodes, None, None) as c:
        client, pid = c.client, c.operator_pid
        await client.create(PCS, workload(replicas), NAMESPACE)
        await until(lambda: available(client, replicas), poll=0.1, limit=PHASE_LIMIT)
        pods = ReadyPods(client, replicas, 2)
        watcher = asyncio.get_running_loop().create_task(pods.run())
        status_minimum = replicas

        async def sample() -> None:
            nonlocal status_minimum
            while True:
                pcs = await client.get(PCS, "scale", NAMESPACE)
                status_minimum = min(status_minimum, int((pcs.get("status") or {}).get("availableReplicas", 0)))
                await asyncio.sleep(0.05)

        try:
            await until(lambda: pods.available() == replicas, limit=60)
            pods.watching = True
            sampler = asyncio.get_running_loop().create_task(sample())
            cpu0 = cpu_seconds(pid)
            start = time.perf_counter()
            template = workload(replicas)["spec"]["template"]
            template["cliques"][0]["spec"]["podSpec"]["containers"][0]["image"] = NEW_IMAGE
            await client.patch(PCS, "scale", {"spec": {"template": {"cliques": template["cliques"]}}}, NAMESPACE)

            async def done() -> bool:
                pcs = await client.get(PCS, "scale", NAMESPACE)
                status = pcs.get("status") or {}
                progress = status.get("updateProgress") or {}
                return bool(
                    progress.get("updateEndedAt")
                    and status.get("updatedReplicas") == replicas
                    and pods.new_ready() == 2 * replicas
                )

            await until(done, poll=0.1, limit=PHASE_LIMIT)
            elapsed = time.perf_counter() - start
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
            return {
                "roll_s": elapsed,
                "min_available_pods": float(pods.minimum),
                "min_available_status": float(status_minimum),
                "pods_replaced": float(pods.deleted),
                "operator_cpu_s": cpu_seconds(pid) - cpu0,
            }
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


def write_reports(report: dict[str, Any], json_path: Path) -> None:
    """`report` as JSON and as a Markdown summary next to it."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    median = report["median"]
    lines = [
        "# grove-operator rolling update",
        "",
        f"Command: `{report['command']}` ({report['date']}, {report['cpus']} CPUs, Python {report['python']}); "
        f"{report['replicas']}-replica PodCliqueSet ({2 * report['replicas']} pods, one clique of 2 pods with "
        f"minAvailable 2) on {report['nodes']} nodes, a trivial binder as scheduler; medians of {report['runs']} "
        "run(s).",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| seconds from the template change to every pod Ready on the new image | {median['roll_s']:.1f} |",
        f"| fewest available replicas during the roll (pods, every event) | {median['min_available_pods']:.0f} |",
        f"| fewest available replicas during the roll (status, 50 ms samples) | {median['min_available_status']:.0f} |",
        f"| pods replaced | {median['pods_replaced']:.0f} |",
        f"| operator CPU seconds during the roll | {median['operator_cpu_s']:.1f} |",
    ]
    json_path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Run, print, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", default=str(RESULTS / "rolling_update.json"), help="result file ('' skips)")
    args = parser.parse_args(argv)
    runs = []
    for i in range(args.runs):
        result = asyncio.run(one_run(args.replicas, args.nodes))
        runs.append(result)
        print(f"run {i + 1}: " + ", ".join(f"{k}={v:.2f}" for k, v in result.items()), flush=True)
    median = {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}
    report = {
        **report_header("benchmarks.rolling_update", argv),
        "replicas": args.replicas,
        "nodes": args.nodes,
        "runs": args.runs,
        "median": median,
        "per_run": runs,
    }
    print("median: " + ", ".join(f"{k}={v:.2f}" for k, v in median.items()), flush=True)
    if args.json:
        write_reports(report, Path(args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
