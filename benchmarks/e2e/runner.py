"""One end-to-end run: start the three programs, create PodCliqueSets at a rate, wait for the binds, measure, verify.

Order: grove-sim (its kubeconfig appearing = serving) → CRDs, namespace, ClusterTopologyBinding, background pods
(bound directly to nodes, like pods of earlier jobs) → grove-operator and grove-scheduler (their `/readyz`) → the
pod watch → a metrics scrape → PodCliqueSets at `rate` per second → wait until every workload pod is bound (or the
timeout) → a second scrape, memory, the final cluster state → stop everything → numbers and verdict. All three
programs are always stopped, also on errors and Ctrl-C; their logs are kept in the work folder if the run failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from tqdm import tqdm

from benchmarks.e2e import analysis, procs
from benchmarks.e2e.observer import PodWatcher, watching
from benchmarks.e2e.scenarios import Scenario, pcs_body, topology_body
from benchmarks.e2e.verify import verify
from benchmarks.e2e.writes import WriteCounter, counting_writes, per_bound_pod
from benchmarks.sim_throughput_proc import SimProcess, profile_hotspots
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import CRDS, NAMESPACES, NODES, PODS, ResourceType

__all__ = ["PROFILE_DIR_ENV", "E2EError", "run_scenario"]

PROFILE_DIR_ENV = "GROVE_E2E_PROFILE_DIR"
"""With `--profile`, a folder to keep the programs' raw cProfile files in."""

PCS = ResourceType("grove.io", "v1alpha1", "podcliquesets", "PodCliqueSet")
PODGANGS = ResourceType("scheduler.grove.io", "v1alpha1", "podgangs", "PodGang")
TOPOLOGIES = ResourceType("grove.io", "v1alpha1", "clustertopologybindings", "ClusterTopologyBinding", namespaced=False)
CRD_DIR = Path(__file__).resolve().parents[2] / "crds"
NAMESPACE = "bench"
BACKGROUND_NAMESPACE = "bench-bg"
CONCURRENCY = 32
STALL_S = 60.0


class E2EError(RuntimeError):
    """The run could not be carried out (a program failed to start or died)."""


async def _install(client: KubeClient, scenario: Scenario) -> None:
    """CRDs, namespaces and the ClusterTopologyBinding."""
    for path in sorted(CRD_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                await client.create(CRDS, doc)
    for name in (NAMESPACE, BACKGROUND_NAMESPACE):
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while True:  # the CRDs serve once established
        try:
            await client.create(TOPOLOGIES, topology_body(scenario.topology))
            return
        except errors.NotFound:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


def background_pods(scenario: Scenario, nodes: list[str]) -> list[dict[str, Any]]:
    """Pods of earlier jobs, bound directly, using `background` of the cluster's GPUs (2-8 GPUs per node, seeded)."""
    rng = random.Random(scenario.seed)
    target = int(scenario.background * scenario.nodes * scenario.gpus_per_node)
    order = list(nodes)
    rng.shuffle(order)
    pods = []
    used = 0
    for index, node in enumerate(order):
        if used >= target:
            break
        gpus = min(rng.choice([2, 4, 6, 8]), scenario.gpus_per_node, target - used)
        used += gpus
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"bg-{index:05d}", "namespace": BACKGROUND_NAMESPACE},
                "spec": {
                    "nodeName": node,
                    "containers": [
                        {
                            "name": "job",
                            "image": "registry.example.com/training:1",
                            "resources": {
                                "requests": {"nvidia.com/gpu": str(gpus), "cpu": str(4 * gpus), "memory": "32Gi"},
                                "limits": {"nvidia.com/gpu": str(gpus)},
                            },
                        }
                    ],
                },
            }
        )
    return pods


async def _create_all(client: KubeClient, rt: ResourceType, bodies: list[dict[str, Any]]) -> None:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(body: dict[str, Any]) -> None:
        async with sem:
            await client.create(rt, body)

    await asyncio.gather(*(one(body) for body in bodies))


async def _create_at_rate(client: KubeClient, scenario: Scenario, created: dict[str, float], progress: bool) -> None:
    """Create the scenario's PodCliqueSets, the i-th at start + i / rate; records each create request's moment."""
    sem = asyncio.Semaphore(CONCURRENCY)
    bar = tqdm(total=scenario.pcs, desc="PodCliqueSets created", unit="pcs", disable=not progress, leave=False)
    start = time.monotonic()

    async def one(index: int) -> None:
        body = pcs_body(scenario, index, NAMESPACE)
        async with sem:
            created[str(body["metadata"]["name"])] = time.monotonic()
            await client.create(PCS, body)
        bar.update()

    tasks = []
    for index in range(scenario.pcs):
        if scenario.rate > 0:
            delay = start + index / scenario.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        tasks.append(asyncio.get_running_loop().create_task(one(index)))
    await asyncio.gather(*tasks)
    bar.close()


async def _wait_bound(
    watcher: PodWatcher, scenario: Scenario, children: list[procs.Child], deadline: float, progress: bool
) -> bool:
    """Until every expected workload pod is bound, a child dies, or the deadline passes (then return quietly).

    Also returns once nothing has moved (no pod seen, ungated or bound) for `STALL_S` seconds: a broken scheduler
    should fail the run in a minute, not after the whole timeout. Returns whether the run stalled.
    """
    bar = tqdm(total=scenario.expected_pods, desc="pods bound", unit="pod", disable=not progress, leave=False)
    state = (-1, -1, -1)
    moved = time.monotonic()
    try:
        while watcher.bound < scenario.expected_pods and time.monotonic() < deadline:
            for child in children:
                if not child.alive():
                    raise E2EError(f"{child.name} died during the run; log: {child.log}")
            now_state = (len(watcher.pods), watcher.ungated, watcher.bound)
            if now_state != state:
                state, moved = now_state, time.monotonic()
            elif time.monotonic() - moved > STALL_S:
                return True
            bar.update(watcher.bound - bar.n)
            await asyncio.sleep(0.1)
        bar.update(watcher.bound - bar.n)
    finally:
        bar.close()
    return False


async def _measure(scenario: Scenario, sim: SimProcess, logdir: Path, progress: bool, profile: bool) -> dict[str, Any]:
    client = await KubeClient.from_kubeconfig(str(sim.kubeconfig))
    profiles = {name: logdir / f"{name}.prof" for name in ("operator", "scheduler")} if profile else {}
    children = [
        procs.operator(sim.kubeconfig, NAMESPACE, logdir, profiles.get("operator")),
        procs.scheduler(sim.kubeconfig, logdir, profiles.get("scheduler")),
    ]
    try:
        await _install(client, scenario)
        node_names = sorted(n["metadata"]["name"] for n in (await client.list(NODES))["items"])
        background = background_pods(scenario, node_names)
        await _create_all(client, PODS, background)
        for child in children:
            child.start()
        for child in children:
            await asyncio.to_thread(child.wait_ready)
        operator, scheduler = children
        async with watching(client, NAMESPACE) as watcher, counting_writes(client, NAMESPACE) as counter:
            before = await asyncio.to_thread(scheduler.metrics)
            pids = {"sim": sim.pid, "operator": operator.pid, "scheduler": scheduler.pid}
            cpu_before = {name: procs.cpu_seconds(pid) for name, pid in pids.items()}
            cpu_before["benchmark"] = time.process_time()
            created: dict[str, float] = {}
            start = time.monotonic()
            creating = asyncio.get_running_loop().create_task(_create_at_rate(client, scenario, created, progress))
            try:
                stalled = await _wait_bound(watcher, scenario, children, start + scenario.timeout, progress)
                await creating
            finally:
                creating.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await creating
            timed_out = watcher.bound < scenario.expected_pods
            wall = time.monotonic() - start
            cpu = {name: procs.cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
            cpu["benchmark"] = time.process_time() - cpu_before["benchmark"]
            await asyncio.sleep(0.5)  # the scheduler observes its gang latency after the bind calls return
            after = await asyncio.to_thread(scheduler.metrics)
            writes = await _quiet(counter)
            memory = {
                "sim": procs.memory_mib(sim.pid),
                "operator": operator.memory(),
                "scheduler": scheduler.memory(),
            }
            podgangs = (await client.list(PODGANGS, NAMESPACE))["items"]
            workload = (await client.list(PODS, NAMESPACE))["items"]
            everything = (await client.list(PODS))["items"]
            nodes = (await client.list(NODES))["items"]
            pod_times = dict(watcher.pods)
            watch_errors = watcher.errors
    finally:
        for child in children:
            child.stop()
        await client.close()
    verdict = verify(podgangs, workload, everything, nodes, scenario.expected_pods, scenario.expected_gangs)
    if timed_out:
        verdict["ok"] = False
        why = f"nothing moved for {STALL_S:.0f} s" if stalled else f"timed out after {scenario.timeout:.0f} s"
        verdict["problems"].insert(0, f"{why} with {len(pod_times)} pods seen, not all bound")
    gangs = analysis.gang_times(podgangs, pod_times)
    numbers = analysis.summarize(pod_times, gangs, created, before, after, start)
    numbers["memory_mib"] = {
        name: {"rss": round(cur, 1), "peak": round(peak, 1)} for name, (cur, peak) in memory.items()
    }
    numbers["cpu_s"] = {name: round(value, 2) for name, value in cpu.items()}
    numbers["cpu_wall_s"] = round(wall, 2)
    numbers["background_pods"] = len(background)
    moments = sorted(created.values())
    span = moments[-1] - moments[0] if len(moments) > 1 else 0.0
    offered = (len(moments) - 1) * scenario.pods_per_pcs / span if span > 0 else None
    numbers["offered_pods_per_s"] = offered
    rate = numbers["pods_per_s"]
    numbers["capacity"] = bool(rate and (offered is None or offered >= 1.5 * rate))
    numbers["cpu_ms_per_bound_pod"] = {
        name: round(1000 * value / numbers["pods_bound"], 2) if numbers["pods_bound"] else None
        for name, value in cpu.items()
    }
    numbers["writes"] = writes
    numbers["writes_per_bound_pod"] = per_bound_pod(writes, numbers["pods_bound"])
    numbers["watch_errors"] = watch_errors
    hotspots = {name: profile_hotspots(path) for name, path in profiles.items() if path.exists()}
    return {
        "numbers": numbers,
        "verify": verdict,
        "timeline": _timeline(pod_times, created, start),
        "profile": hotspots,
    }


async def _quiet(counter: WriteCounter, quiet: float = 1.5, limit: float = 15.0) -> dict[str, int]:
    """The write counts once no write was seen for `quiet` seconds (status writes that wait for a gang to settle
    come after its binds), or after `limit` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    seen, since = -1, loop.time()
    while loop.time() < deadline:
        total = sum(counter.counts.values())
        if total != seen:
            seen, since = total, loop.time()
        elif loop.time() - since >= quiet:
            break
        await asyncio.sleep(0.1)
    return counter.snapshot()


def _timeline(pods: Mapping[str, Any], created: Mapping[str, float], start: float) -> dict[str, list[float]]:
    """Sorted event moments (s from the first create) for the plot: PCS created, pods created, ungated, bound."""
    return {
        "pcs_created": sorted(round(t - start, 3) for t in created.values()),
        "pods_created": sorted(round(p.seen - start, 3) for p in pods.values()),
        "pods_ungated": sorted(round(p.ungated - start, 3) for p in pods.values() if p.ungated is not None),
        "pods_bound": sorted(round(p.bound - start, 3) for p in pods.values() if p.bound is not None),
    }


def run_scenario(scenario: Scenario, *, progress: bool = True, profile: bool = False) -> dict[str, Any]:
    """Run one scenario end to end with fresh processes; the result dict the report writes (see `report`).

    `profile` runs operator and scheduler under cProfile (slower) and adds their heaviest functions; grove-sim
    runs under it too, and its raw profile (set-up included) is kept with theirs in `$GROVE_E2E_PROFILE_DIR`.
    """
    logdir = Path(tempfile.mkdtemp(prefix=f"grove-e2e-{scenario.name}-"))
    began = time.monotonic()
    ok = False
    try:
        sim_profile = logdir / "sim.prof" if profile else None  # written when grove-sim exits
        with SimProcess(
            scenario.nodes, gpus_per_node=scenario.gpus_per_node, topology=scenario.topology, profile_out=sim_profile
        ) as sim:
            sim_ready = time.monotonic() - began
            result = asyncio.run(_measure(scenario, sim, logdir, progress, profile))
        ok = bool(result["verify"]["ok"])
    finally:
        keep = os.environ.get(PROFILE_DIR_ENV) if profile else None
        if keep:  # the raw cProfile files, for `python -m pstats` (the log folder goes with a good run)
            Path(keep).mkdir(parents=True, exist_ok=True)
            for path in logdir.glob("*.prof"):
                shutil.copy(path, Path(keep) / f"{scenario.name}-{path.name}")
        if ok:
            shutil.rmtree(logdir, ignore_errors=True)
    result["scenario"] = {
        "name": scenario.name,
        "kind": scenario.kind,
        "summary": scenario.summary(),
        "nodes": scenario.nodes,
        "gpus_per_node": scenario.gpus_per_node,
        "topology": scenario.topology,
        "pcs": scenario.pcs,
        "pods_per_gang": scenario.pods_per_gang,
        "gpus_per_pod": scenario.gpus_per_pod,
        "rate": scenario.rate,
        "background": scenario.background,
        "expected_pods": scenario.expected_pods,
        "expected_gangs": scenario.expected_gangs,
    }
    result["seconds"] = {"sim_start": round(sim_ready, 2), "total": round(time.monotonic() - began, 2)}
    result["logs"] = None if ok else str(logdir)
    return result
