"""grove-operator at upstream's weekly scale-test shape: a 500-replica PodCliqueSet (1,000 pods) on 100 nodes.

grove-sim and grove-operator run as separate processes; this process is the "scheduler": a trivial binder that
watches the namespace's pods and binds every ungated, unbound pod round-robin over the nodes. Per run it measures

* create: seconds from creating the PCS until all 1,000 pods exist, and until `availableReplicas` = 500;
* scale-down 500 → 0 (`spec.replicas` via the scale subresource): seconds until no pod is left;
* scale-up 0 → 500 (after the status shows 0 available): seconds until 1,000 pods exist and until
  `availableReplicas` = 500 again;
* the operator's CPU seconds per phase (steadier than wall time on a shared machine) and peak memory (VmHWM).

It prints per-run numbers and medians and writes them to `benchmarks/results/operator_scale.json` (and `.md`).
Options: `--baseline-src DIR` also runs the operator from `DIR/src` or `DIR` (e.g. `git archive <commit> src | tar -x -C
DIR`), alternating with the current one, for a before/after comparison under the same load;
`--memory-replicas 5000` adds one run with a 5,000-replica PCS (10,000 pods) reporting the operator's memory and
printing its progress every 30 s (`--runs 0` runs only that); `--profile-operator FILE` runs the operator under
cProfile (the memory run's profile goes to `FILE` with the suffix `.memory.prof`).

Usage: ``python -m benchmarks.operator_scale [--runs 3] [--replicas 500] [--baseline-src DIR]
[--memory-replicas 5000] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
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
MEMORY_PHASE_LIMIT = 1800.0
LOG_DIR = Path(tempfile.gettempdir())
RESULTS = Path(__file__).resolve().parent / "results"


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


def source_root(path: Path) -> Path:
    """The directory holding the `grove_operator` package: `path/src` (a `git archive ... src` extracted into
    `path`) or `path` itself (its `src`); anything else is an error, since the operator would silently be imported
    from the current checkout instead."""
    for candidate in (path / "src", path):
        if (candidate / "grove_operator" / "__init__.py").is_file():
            return candidate
    raise SystemExit(f"--baseline-src {path}: no grove_operator package in {path}/src or {path}")


def _proc_status_mib(pid: int, field: str) -> float:
    """One memory field (``VmHWM``, ``VmRSS``) of ``/proc/<pid>/status`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib(pid: int) -> float:
    """Peak resident set size (VmHWM) of a process in MiB."""
    return _proc_status_mib(pid, "VmHWM")


def rss_mib(pid: int) -> float:
    """Current resident set size (VmRSS) of a process in MiB."""
    return _proc_status_mib(pid, "VmRSS")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used: on a shared 2-core machine wall-clock phases move with
    everyone else's load, the operator's CPU seconds per phase much less."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


async def until(predicate: Any, poll: float = 0.05, limit: float = PHASE_LIMIT) -> float:
    """Seconds until `predicate()` (sync or async) is true; raises after `limit` seconds."""
    start = time.perf_counter()
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return time.perf_counter() - start
        if time.perf_counter() - start > limit:
            raise TimeoutError("phase did not finish")
        await asyncio.sleep(poll)


async def available(client: KubeClient, want: int) -> bool:
    """Whether the PCS reports `want` available replicas."""
    pcs = await client.get(PCS, "scale", NAMESPACE)
    return bool((pcs.get("status") or {}).get("availableReplicas") == want)


@dataclass
class Cluster:
    """A running sim + operator pair, a client and the binder; `operator_pid` for /proc readings."""

    client: KubeClient
    binder: Binder
    operator_pid: int


@contextlib.asynccontextmanager
async def cluster(nodes: int, operator_src: Path | None, profile_out: Path | None) -> AsyncIterator[Cluster]:
    """Fresh grove-sim and grove-operator processes (the operator from `operator_src`/src when given), CRDs
    applied, the namespace created and the binder running; everything is stopped on exit."""
    with SimProcess(nodes) as sim:
        kubectl = await asyncio.create_subprocess_exec(
            "kubectl", "apply", "-f", str(CRDS),
            stdout=asyncio.subprocess.DEVNULL,
            env={"KUBECONFIG": str(sim.kubeconfig), "PATH": "/usr/bin:/bin", "NO_PROXY": "127.0.0.1,localhost"},
        )  # fmt: skip
        if await kubectl.wait() != 0:
            raise RuntimeError("kubectl apply of the CRDs failed")
        env = dict(os.environ)
        if operator_src is not None:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(source_root(operator_src)), env.get("PYTHONPATH")) if p)
        profiler = ["-m", "cProfile", "-o", str(profile_out)] if profile_out is not None else []
        log = LOG_DIR / f"operator-{os.getpid()}-{time.monotonic_ns()}.log"
        with log.open("wb") as sink:
            operator = await asyncio.create_subprocess_exec(
                sys.executable, *profiler, "-m", "grove_operator.cli", "--kubeconfig", str(sim.kubeconfig),
                "--no-leader-elect", "--health-port", "0", "--metrics-port", "0", "--log-level", "WARNING",
                "--webhook-port", "0", "--webhook-namespace", NAMESPACE,
                stdout=asyncio.subprocess.DEVNULL, stderr=sink, env=env,
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
            yield Cluster(client, binder, operator.pid)
        finally:
            if binder_task is not None:
                binder_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await binder_task
            await client.close()
            if operator.returncode is None:
                operator.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(operator.wait(), 60)
                except TimeoutError:
                    operator.kill()


async def one_run(
    replicas: int, nodes: int, *, operator_src: Path | None = None, profile_out: Path | None = None
) -> dict[str, float]:
    """Create, scale to 0, scale back up: the five timings, the operator CPU seconds per phase, its peak RSS."""
    async with cluster(nodes, operator_src, profile_out) as c:
        client, binder, pid = c.client, c.binder, c.operator_pid
        cpu0 = cpu_seconds(pid)
        start = time.perf_counter()
        await client.create(PCS, workload(replicas), NAMESPACE)
        await until(lambda: len(binder.live) >= 2 * replicas)
        created = time.perf_counter() - start
        await until(lambda: available(client, replicas), poll=0.1)
        avail = time.perf_counter() - start
        cpu1 = cpu_seconds(pid)
        start = time.perf_counter()
        await client.scale(PCS, "scale", NAMESPACE, 0)
        down = await until(lambda: not binder.live)
        await until(lambda: available(client, 0), poll=0.1)  # status caught up, so scale-up starts from 0
        cpu2 = cpu_seconds(pid)
        await client.scale(PCS, "scale", NAMESPACE, replicas)
        start = time.perf_counter()
        await until(lambda: len(binder.live) >= 2 * replicas)
        up_pods = time.perf_counter() - start
        await until(lambda: available(client, replicas), poll=0.1)
        up = time.perf_counter() - start
        cpu3 = cpu_seconds(pid)
        return {
            "pods_created_s": created,
            "available_s": avail,
            "scale_down_s": down,
            "scale_up_pods_s": up_pods,
            "scale_up_s": up,
            "operator_cpu_create_s": cpu1 - cpu0,
            "operator_cpu_scale_down_s": cpu2 - cpu1,
            "operator_cpu_scale_up_s": cpu3 - cpu2,
            "operator_peak_rss_mib": peak_rss_mib(pid),
        }


async def _progress(client: KubeClient, binder: Binder, pid: int, start: float) -> None:
    """Print, every 30 s, how far a long phase has got (pods, available replicas, operator CPU and RSS)."""
    while True:
        await asyncio.sleep(30)
        pcs = await client.get(PCS, "scale", NAMESPACE)
        print(
            f"  {time.perf_counter() - start:6.0f} s: {len(binder.live)} pods, "
            f"{(pcs.get('status') or {}).get('availableReplicas', 0)} available, "
            f"operator cpu {cpu_seconds(pid):.1f} s, rss {rss_mib(pid):.0f} MiB",
            flush=True,
        )


async def memory_run(
    replicas: int, nodes: int, operator_src: Path | None = None, profile_out: Path | None = None
) -> dict[str, float]:
    """One PCS of `replicas` x 2 pods: the operator's RSS once every pod exists and once all are available."""
    async with cluster(nodes, operator_src, profile_out) as c:
        client, binder, pid = c.client, c.binder, c.operator_pid
        idle = rss_mib(pid)
        start = time.perf_counter()
        cpu0 = cpu_seconds(pid)
        progress = asyncio.get_running_loop().create_task(_progress(client, binder, pid, start))
        try:
            await client.create(PCS, workload(replicas), NAMESPACE)
            await until(lambda: len(binder.live) >= 2 * replicas, limit=MEMORY_PHASE_LIMIT)
            created = time.perf_counter() - start
            rss_created = rss_mib(pid)
            await until(lambda: available(client, replicas), poll=0.5, limit=MEMORY_PHASE_LIMIT)
            avail = time.perf_counter() - start
        finally:
            progress.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await progress
        return {
            "pods": 2 * replicas,
            "pods_created_s": created,
            "available_s": avail,
            "operator_idle_rss_mib": idle,
            "operator_rss_when_created_mib": rss_created,
            "operator_rss_when_available_mib": rss_mib(pid),
            "operator_peak_rss_mib": peak_rss_mib(pid),
            "operator_cpu_s": cpu_seconds(pid) - cpu0,
        }


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """Per-metric median over runs (empty when there were none, e.g. a memory-only invocation)."""
    return {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]} if runs else {}


def _line(label: str, result: dict[str, float]) -> str:
    return f"{label}: " + ", ".join(f"{k}={v:.2f}" for k, v in result.items())


def write_reports(report: dict[str, Any], json_path: Path) -> None:
    """`report` as JSON at `json_path` and as a Markdown table next to it (same stem, `.md`)."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    rows = [("current", report["median"])]
    if report.get("baseline"):
        rows.insert(0, (f"baseline ({report['baseline']['source']})", report["baseline"]["median"]))
    keys = list(report["median"])
    lines = [
        "# grove-operator scale test",
        "",
        f"Command: `{report['command']}` ({report['date']}, {report['cpus']} CPUs, Python {report['python']}); "
        f"{report['replicas']}-replica PodCliqueSet ({2 * report['replicas']} pods) on {report['nodes']} nodes, "
        f"medians of {report['runs']} runs. Times in seconds, memory in MiB.",
        "",
        "| operator | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
    ]
    lines += [f"| {label} | " + " | ".join(f"{m[k]:.2f}" for k in keys) + " |" for label, m in rows]
    memory = report.get("memory")
    if memory:
        lines += ["", f"Memory phase ({memory['pods']:.0f} pods):", ""]
        lines += [f"- {k}: {v:.1f}" for k, v in memory.items() if k != "pods"]
    json_path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def report_header(module: str, argv: list[str] | None) -> dict[str, Any]:
    """The command that produced a result file, when, and on what machine."""
    return {
        "command": f"python -m {module} " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print per-run numbers and medians, write the result files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument(
        "--baseline-src", type=Path, default=None,
        help="also run the operator from DIR/src or DIR (e.g. a `git archive` of an older commit), alternating runs",
    )  # fmt: skip
    parser.add_argument(
        "--memory-replicas", type=int, default=0,
        help="after the timed runs, one run with this many replicas (x2 pods) reporting the operator's memory",
    )  # fmt: skip
    parser.add_argument("--memory-nodes", type=int, default=200)
    parser.add_argument("--profile-operator", type=Path, default=None, help="write the operator's cProfile here")
    parser.add_argument("--json", default=str(RESULTS / "operator_scale.json"), help="result file ('' skips)")
    args = parser.parse_args(argv)
    if args.baseline_src is not None:
        source_root(args.baseline_src)  # fail before the first run, not after it
    current: list[dict[str, float]] = []
    baseline: list[dict[str, float]] = []
    for i in range(args.runs):
        if args.baseline_src is not None:
            result = asyncio.run(one_run(args.replicas, args.nodes, operator_src=args.baseline_src))
            baseline.append(result)
            print(_line(f"baseline run {i + 1}", result), flush=True)
        result = asyncio.run(one_run(args.replicas, args.nodes, profile_out=args.profile_operator))
        current.append(result)
        print(_line(f"run {i + 1}", result), flush=True)
    report: dict[str, Any] = {
        **report_header("benchmarks.operator_scale", argv),
        "replicas": args.replicas,
        "nodes": args.nodes,
        "runs": args.runs,
        "median": medians(current),
        "per_run": current,
    }
    if baseline:
        report["baseline"] = {"source": str(args.baseline_src), "median": medians(baseline), "per_run": baseline}
        print(_line("baseline median", report["baseline"]["median"]))
    print(_line("median", report["median"]), flush=True)
    if args.memory_replicas > 0:
        memory_profile = args.profile_operator.with_suffix(".memory.prof") if args.profile_operator else None
        report["memory"] = asyncio.run(memory_run(args.memory_replicas, args.memory_nodes, profile_out=memory_profile))
        print(_line("memory", report["memory"]), flush=True)
    if args.json:
        write_reports(report, Path(args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
