"""Startup ordering at scale: what waiting for parent cliques costs, against starting everything at once.

A PodCliqueSet of 100 replicas of a three-level chain (`l1` → `l2` → `l3`, one pod each) is started with
`cliqueStartupType: Explicit` (each `l2` pod is held by its `grove-initc` until its replica's `l1` is Ready, each
`l3` until `l2`) and with AnyOrder (no init container), alternately, in the same grove-sim, grove-operator and
grove-scheduler processes. grove-sim makes a pod Ready one second after it starts (`--ready-delay 1`) and runs the
`grove-initc` image as the installed program, so every waiting pod is a real `grove-initc` process: 200 at once.

Per run: seconds from creating the PodCliqueSet until every pod is Ready; the pods that became Ready before their
parents had their minimum Ready (`grove_operator.initc.verify.order_violations`, must be none); init container
restarts; the most `grove-initc` processes alive at once and their total RSS; the CPU seconds they used (grove-sim's
reaped children) and the operator's and the scheduler's CPU seconds. Ordering costs at least two ready delays (a
level starts only once the previous one is Ready); the rest is the init containers' start-up and reaction time on a
2-core machine that also runs every other program.

Usage: ``python -m benchmarks.startup_order [--replicas 100] [--runs 3] [--ready-delay 1] [--nodes 10]``; writes
`benchmarks/results/startup_order.json` and `.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shlex
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.e2e import procs
from benchmarks.sim_throughput_proc import SimProcess
from grove_api import labels as glabels
from grove_operator.initc.verify import order_violations, ready_since
from grove_runtime.client import KubeClient
from grove_runtime.resources import NAMESPACES, PODS, ResourceType

PCS = ResourceType("grove.io", "v1alpha1", "podcliquesets", "PodCliqueSet")
CRDS = Path(__file__).resolve().parent.parent / "crds"
RESULTS = Path(__file__).resolve().parent / "results"
NAMESPACE = "order"
LEVELS = ("l1", "l2", "l3")
LIMIT = 900.0
"""Seconds one start-up may take before the run is abandoned (a guard, not a measurement)."""
ANY, EXPLICIT = "CliqueStartupTypeAnyOrder", "CliqueStartupTypeExplicit"


def workload(name: str, replicas: int, startup: str) -> dict[str, Any]:
    """`replicas` replicas of l1 → l2 → l3, one tiny pod per clique; the chain only for Explicit."""
    cliques = []
    for position, level in enumerate(LEVELS):
        spec: dict[str, Any] = {
            "roleName": level,
            "replicas": 1,
            "podSpec": {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": "10m"}}}]},
        }
        if startup == EXPLICIT and position:
            spec["startsAfter"] = [LEVELS[position - 1]]
        cliques.append({"name": level, "spec": spec})
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"replicas": replicas, "template": {"cliqueStartupType": startup, "cliques": cliques}},
    }


def initc_processes(parent: int) -> list[int]:
    """Pids of the `grove-initc` processes grove-sim (``parent``) runs right now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == parent and b"grove-initc" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


def reaped_children_cpu(pid: int) -> float:
    """CPU seconds of a process's children that have exited and been waited for (cutime + cstime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Programs:
    """grove-sim, grove-operator and grove-scheduler processes and a client."""

    sim: SimProcess
    operator: procs.Child
    scheduler: procs.Child
    client: KubeClient


@contextlib.asynccontextmanager
async def programs(nodes: int, ready_delay: float, logdir: Path) -> AsyncIterator[Programs]:
    """The three programs, CRDs applied and the namespace created; everything stopped on exit."""
    with SimProcess(nodes, ready_delay=ready_delay) as sim:
        kubectl = await asyncio.create_subprocess_exec(
            "kubectl", "apply", "-f", str(CRDS), stdout=asyncio.subprocess.DEVNULL,
            env={"KUBECONFIG": str(sim.kubeconfig), "PATH": "/usr/bin:/bin", "NO_PROXY": "127.0.0.1,localhost"},
        )  # fmt: skip
        if await kubectl.wait() != 0:
            raise RuntimeError("kubectl apply of the CRDs failed")
        operator = procs.operator(sim.kubeconfig, NAMESPACE, logdir).start()
        scheduler = procs.scheduler(sim.kubeconfig, logdir).start()
        client = await KubeClient.from_kubeconfig(str(sim.kubeconfig))
        try:
            await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
            operator.wait_ready()
            scheduler.wait_ready()
            yield Programs(sim, operator, scheduler, client)
        finally:
            await client.close()
            operator.stop()
            scheduler.stop()


async def start_once(p: Programs, name: str, replicas: int, startup: str) -> dict[str, Any]:
    """Create the PodCliqueSet, wait until every pod is Ready, check the order, then delete it and its pods."""
    selector = f"{glabels.LABEL_PART_OF}={name}"
    cpu = (reaped_children_cpu(p.sim.pid), procs.cpu_seconds(p.operator.pid), procs.cpu_seconds(p.scheduler.pid))
    peak_procs, peak_rss = 0, 0.0
    start = time.perf_counter()
    await p.client.create(PCS, workload(name, replicas, startup), NAMESPACE)
    while True:
        pods = (await p.client.list(PODS, NAMESPACE, label_selector=selector))["items"]
        if len(pods) == 3 * replicas and all(ready_since(pod) for pod in pods):
            break
        if time.perf_counter() - start > LIMIT:
            raise TimeoutError(f"{name}: not every pod Ready after {LIMIT:.0f} s")
        alive = initc_processes(p.sim.pid)
        peak_procs = max(peak_procs, len(alive))
        peak_rss = max(peak_rss, sum(v for v in (procs.memory_mib(pid)[0] for pid in alive) if v == v))
        await asyncio.sleep(0.25)
    seconds = time.perf_counter() - start
    await asyncio.sleep(0.5)  # the last grove-initc processes have exited; let grove-sim reap them
    initc_cpu = reaped_children_cpu(p.sim.pid) - cpu[0]
    restarts = sum(
        int(s.get("restartCount") or 0)
        for pod in pods
        for s in (pod.get("status") or {}).get("initContainerStatuses") or ()
    )
    result = {
        "startup": startup.removeprefix("CliqueStartupType"),
        "all_ready_s": round(seconds, 2),
        "out_of_order": len(order_violations(pods)),
        "init_restarts": restarts,
        "peak_initc_processes": peak_procs,
        "peak_initc_rss_mib": round(peak_rss, 1),
        "initc_cpu_s": round(initc_cpu, 2),
        "operator_cpu_s": round(procs.cpu_seconds(p.operator.pid) - cpu[1], 2),
        "scheduler_cpu_s": round(procs.cpu_seconds(p.scheduler.pid) - cpu[2], 2),
    }
    await p.client.delete(PCS, name, NAMESPACE)
    while True:
        if not (await p.client.list(PODS, NAMESPACE, label_selector=selector))["items"]:
            return result
        await asyncio.sleep(0.25)


def median(runs: list[dict[str, Any]], startup: str, key: str) -> float:
    return float(statistics.median(r[key] for r in runs if r["startup"] == startup.removeprefix("CliqueStartupType")))


async def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    """Alternate AnyOrder and Explicit start-ups (which goes first alternates too) in one set of programs."""
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="grove-startup-bench-") as logdir:
        async with programs(args.nodes, args.ready_delay, Path(logdir)) as p:
            for index in range(args.runs):
                order = (ANY, EXPLICIT) if index % 2 == 0 else (EXPLICIT, ANY)
                for startup in order:
                    name = f"{'explicit' if startup == EXPLICIT else 'anyorder'}-{index}"
                    result = await start_once(p, name, args.replicas, startup)
                    print(json.dumps(result), flush=True)
                    runs.append(result)
    summary = {
        key: {s.removeprefix("CliqueStartupType"): median(runs, s, key) for s in (ANY, EXPLICIT)}
        for key in ("all_ready_s", "initc_cpu_s", "operator_cpu_s", "scheduler_cpu_s", "peak_initc_processes",
                    "peak_initc_rss_mib")
    }  # fmt: skip
    extra = summary["all_ready_s"]["Explicit"] - summary["all_ready_s"]["AnyOrder"]
    return {
        "command": shlex.join(["python", "-m", "benchmarks.startup_order", *sys.argv[1:]]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()},
        "replicas": args.replicas,
        "pods": 3 * args.replicas,
        "ready_delay_s": args.ready_delay,
        "runs": runs,
        "medians": summary,
        "extra_s": round(extra, 2),
        "inherent_s": 2 * args.ready_delay,
        "out_of_order_total": sum(r["out_of_order"] for r in runs),
    }


def markdown(report: dict[str, Any]) -> str:
    """The results as the committed markdown file."""
    m = report["medians"]
    rows = [
        f"| {label} | {m[key]['AnyOrder']:g} | {m[key]['Explicit']:g} |"
        for key, label in (
            ("all_ready_s", "all pods Ready (s)"),
            ("peak_initc_processes", "grove-initc processes alive at once"),
            ("peak_initc_rss_mib", "their total RSS (MiB)"),
            ("initc_cpu_s", "their CPU (s)"),
            ("operator_cpu_s", "operator CPU (s)"),
            ("scheduler_cpu_s", "scheduler CPU (s)"),
        )
    ]
    per_run = "\n".join(
        f"| {r['startup']} | {r['all_ready_s']} | {r['out_of_order']} | {r['init_restarts']} | "
        f"{r['peak_initc_processes']} | {r['initc_cpu_s']} |"
        for r in report["runs"]
    )
    return f"""# Startup ordering at scale

Command: `{report["command"]}` ({report["date"]}, {report["machine"]["cpus"]} CPUs, Python \
{report["machine"]["python"]}, load average at the end {", ".join(f"{x:.1f}" for x in report["machine"]["load_avg"])}).
A PodCliqueSet of {report["replicas"]} replicas of a three-level chain l1 → l2 → l3 ({report["pods"]} pods), started
with cliqueStartupType Explicit and with AnyOrder, alternately in the same grove-sim, operator and scheduler
processes; grove-sim's `--ready-delay {report["ready_delay_s"]:g}`, the real `grove-initc` in every waiting pod.
Medians of {len(report["runs"]) // 2} runs each.

| measure | AnyOrder | Explicit |
|---|---:|---:|
{chr(10).join(rows)}

Ordering costs **{report["extra_s"]:g} s** more until every pod is Ready (median against median), of which
{report["inherent_s"]:g} s are inherent (two levels wait one ready delay each). Pods Ready before their parents had
their minimum Ready, over all Explicit runs: **{report["out_of_order_total"]}**.

| run | all Ready (s) | out of order | init restarts | grove-initc alive at once | their CPU (s) |
|---|---:|---:|---:|---:|---:|
{per_run}
"""


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.startup_order", description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=100, help="PodCliqueSet replicas (3 pods each)")
    parser.add_argument("--runs", type=int, default=3, help="start-ups per startup type")
    parser.add_argument("--ready-delay", type=float, default=1.0, help="grove-sim's seconds from start to Ready")
    parser.add_argument("--nodes", type=int, default=10, help="simulated nodes")
    parser.add_argument("--json", type=Path, default=RESULTS / "startup_order.json", help="results file (.md beside)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # stop like Ctrl-C, so the programs it started are stopped too
    report = asyncio.run(benchmark(args))
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    args.json.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    return 1 if report["out_of_order_total"] else 0


if __name__ == "__main__":
    sys.exit(main())
