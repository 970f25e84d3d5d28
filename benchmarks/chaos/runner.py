"""One chaos run, start to figures.

grove-sim (nodes, 8 GPUs each) → CRDs and namespaces → the observer's service account and its token (exempt from
faults) → grove-operator and grove-scheduler, `replicas` of each with leader election on short Leases → the
observer's watches → faults on, the disruptor and the driver until `gangs` gangs were seen bound and
`min_disruptions` disruptions were over (or the time budget ran out) → faults off, every frozen replica resumed,
exited ones restarted: the last fault → convergence, timed → the end-state invariants → every PodCliqueSet
deleted, nothing may remain → the same final specs created again with no fault, converged, compared → the fuzz
phase (its own single operator with webhooks on) → figures.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import random
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from tqdm import tqdm

from benchmarks.chaos import fuzz
from benchmarks.chaos.disrupt import (
    Disruptor,
    Program,
    Supervisor,
    fault_document,
    put_faults,
    sim_fault_counters,
    write_kubeconfig,
)
from benchmarks.chaos.observer import PCS, PCSG, Observer, differences, entry_diff, observing
from benchmarks.e2e.procs import Child, free_port, memory_mib
from benchmarks.sim_throughput_proc import SimProcess
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import CRDS, NAMESPACES, SECRETS, SERVICEACCOUNTS

__all__ = ["ChaosConfig", "run_chaos"]

CRD_DIR = Path(__file__).resolve().parents[2] / "crds"
SYSTEM, WORK, REFERENCE = "chaos-system", "chaos", "chaos-reference"
OBSERVER = "observer"
LEASE = {"duration": 6.0, "renew": 4.0, "retry": 1.0}


@dataclass(frozen=True, slots=True)
class ChaosConfig:
    """The size of a run."""

    seed: int = 1
    gangs: int = 10_000
    nodes: int = 500
    replicas: int = 2
    live: int = 200
    budget_s: float = 2700.0
    disrupt_every: tuple[float, float] = (6.0, 14.0)
    pause_every: tuple[float, float] = (20.0, 40.0)
    min_disruptions: int = 0
    rolling_updates: bool = True
    recovery_window: float = 60.0
    converge_timeout: float = 180.0
    fuzz_examples: int = 1000
    error_rate: float = 0.05


async def install(client: KubeClient) -> None:
    """The CRDs and the namespaces of a run."""
    for path in sorted(CRD_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                await client.create(CRDS, doc)
    for name in (SYSTEM, WORK, REFERENCE, fuzz.NAMESPACE):
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while True:  # the CRDs serve once established
        try:
            await client.list(PCS, WORK)
            return
        except errors.NotFound:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def _account_token(client: KubeClient, namespace: str, name: str) -> str:
    """A new service account's token, once grove-sim's token controller has filled its Secret."""
    await client.create(SERVICEACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                          "metadata": {"name": name, "namespace": namespace}})  # fmt: skip
    secret = {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": f"{name}-token", "namespace": namespace,
                     "annotations": {"kubernetes.io/service-account.name": name}},
    }  # fmt: skip
    await client.create(SECRETS, secret)
    while True:
        data = (await client.get(SECRETS, f"{name}-token", namespace)).get("data") or {}
        if "token" in data:
            return base64.b64decode(data["token"]).decode()
        await asyncio.sleep(0.1)


def _programs(kubeconfig: Path, logdir: Path, replicas: int) -> list[Program]:
    lease = [
        "--lease-namespace",
        SYSTEM,
        "--leader-elect-lease-duration",
        str(LEASE["duration"]),
        "--leader-elect-renew-deadline",
        str(LEASE["renew"]),
        "--leader-elect-retry-period",
        str(LEASE["retry"]),
    ]
    common = ["--kubeconfig", str(kubeconfig), "--log-level", "WARNING", *lease]  # fmt: skip

    def operator(name: str) -> Child:
        port = free_port()
        argv = ["-m", "grove_operator.cli", *common, "--health-port", str(port), "--metrics-port", "0",
                "--no-webhooks"]  # fmt: skip
        return Child(name, argv, logdir, port)

    def scheduler(name: str) -> Child:
        port = free_port()
        return Child(name, ["-m", "grove_sched.cli", *common, "--metrics-port", str(port)], logdir, port)

    return [
        Program("grove-operator", "grove-operator-leader-election", operator, replicas),
        Program("grove-scheduler", "grove-scheduler", scheduler, replicas),
    ]


async def _converge(observer: Observer, namespace: str, limit: float, settle: float = 3.0) -> float | None:
    """Seconds until the namespace stays converged for `settle` seconds (its start counted), None on timeout."""
    start = time.monotonic()
    since: float | None = None
    while time.monotonic() - start < limit:
        if observer.unsettled(namespace):
            since = None
        elif since is None:
            since = time.monotonic()
        elif time.monotonic() - since >= settle:
            return round(since - start, 1)
        await asyncio.sleep(0.25)
    return None


async def _delete_all(client: KubeClient, observer: Observer, namespace: str, limit: float) -> float | None:
    for pcs in observer.in_namespace("pcs", namespace):
        with contextlib.suppress(errors.NotFound):
            await client.delete(PCS, pcs["metadata"]["name"], namespace)
    start = time.monotonic()
    while observer.leftovers(namespace):
        if time.monotonic() - start > limit:
            return None
        await asyncio.sleep(0.25)
    return round(time.monotonic() - start, 1)


def _final_specs(observer: Observer, namespace: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
    specs = []
    for pcs in observer.in_namespace("pcs", namespace):
        meta = pcs["metadata"]
        specs.append({"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "spec": pcs["spec"],
                      "metadata": {"name": meta["name"], "labels": meta.get("labels") or {}}})  # fmt: skip
    groups = {g["metadata"]["name"]: int(g["spec"]["replicas"]) for g in observer.in_namespace("pcsg", namespace)}
    return specs, groups


async def _replay(
    client: KubeClient, observer: Observer, specs: list[dict[str, Any]], groups: Mapping[str, int]
) -> None:
    """Create the specs in the reference namespace, then scale each scaling group as the chaos run left it."""
    for body in specs:
        await client.create(PCS, {**body, "metadata": {**body["metadata"], "namespace": REFERENCE}})
    pending = dict(groups)
    deadline = time.monotonic() + 120
    while pending and time.monotonic() < deadline:
        present = {g["metadata"]["name"]: g for g in observer.in_namespace("pcsg", REFERENCE)}
        for name in [n for n in pending if n in present]:
            if int(present[name]["spec"]["replicas"]) != pending[name]:
                await client.scale(PCSG, name, REFERENCE, pending[name])
            del pending[name]
        await asyncio.sleep(0.25)


async def _chaos_phase(config: ChaosConfig, sim: SimProcess, workdir: Path, progress: bool) -> dict[str, Any]:
    from benchmarks.chaos.workload import Driver

    rng = random.Random(config.seed)
    admin = KubeClient.from_kubeconfig_light(str(sim.kubeconfig))
    await install(admin)
    token = await _account_token(admin, SYSTEM, OBSERVER)
    own = write_kubeconfig(sim.kubeconfig, workdir / "observer.kubeconfig", token)
    client = KubeClient.from_kubeconfig_light(str(own))
    observer = Observer(client, recovery_window=config.recovery_window)
    programs = _programs(sim.kubeconfig, workdir, config.replicas)
    supervisor = Supervisor(programs)
    disruptor = Disruptor(client, programs, SYSTEM, rng, LEASE["duration"], config.disrupt_every)
    exempt = [f"system:serviceaccount:{SYSTEM}:{OBSERVER}"]
    result: dict[str, Any] = {}
    tasks: list[asyncio.Future[Any]] = []
    try:
        for program in programs:
            program.start()
        for program in programs:
            for child in program.children:
                child.wait_ready()
        tasks.append(asyncio.ensure_future(supervisor.run()))
        async with observing(observer):
            driver = Driver(client, observer, WORK, rng, live=config.live, rolling_updates=config.rolling_updates)
            stop = asyncio.Event()
            put_faults(sim.url, sim.token, fault_document(config.seed, exempt, error_rate=config.error_rate))
            start = time.monotonic()
            tasks.append(asyncio.ensure_future(disruptor.run(stop)))
            tasks.append(asyncio.ensure_future(_pauses(sim, config, exempt, stop, rng)))
            bar = tqdm(total=config.gangs, desc="gangs bound", unit="gang", disable=not progress)
            driving = asyncio.ensure_future(driver.run(stop))
            while not driving.done():
                enough = len(observer.gangs_bound) >= config.gangs
                if time.monotonic() - start > config.budget_s or (enough and disruptor.done(config.min_disruptions)):
                    stop.set()
                for task in tasks:  # a background task that died would silently stall the run
                    if task.done() and not task.cancelled() and task.exception() is not None:
                        raise RuntimeError("a chaos task failed") from task.exception()
                bar.update(len(observer.gangs_bound) - bar.n)
                bar.set_postfix_str(_status(observer, disruptor), refresh=True)
                await asyncio.sleep(0.5)
            bar.close()
            stop.set()
            await driving
            await asyncio.gather(*tasks[1:])
            put_faults(sim.url, sim.token, None)
            disruptor.resume_all()
            last_fault = time.monotonic()
            result["driving_s"] = round(last_fault - start, 1)
            result["faults_injected"] = sim_fault_counters(sim.url, sim.token)
            converge = await _converge(observer, WORK, config.converge_timeout)
            result["converge_after_last_fault_s"] = converge
            result["unsettled_at_timeout"] = observer.unsettled(WORK)[:20]
            observer.check()
            observer.check_converged(WORK)
            chaos_digest = observer.digest(WORK, template_hash=config.rolling_updates)
            specs, groups = _final_specs(observer, WORK)
            result["final_pcs"] = len(specs)
            result["delete_all_s"] = await _delete_all(client, observer, WORK, config.converge_timeout)
            observer.check_leaks(WORK)
            await _replay(client, observer, specs, groups)
            result["reference_converge_s"] = await _converge(observer, REFERENCE, config.converge_timeout)
            reference_digest = observer.digest(REFERENCE, template_hash=config.rolling_updates)
            diverged = list(differences(reference_digest, chaos_digest))
            for name in diverged:
                diff = entry_diff(chaos_digest.get(name), reference_digest.get(name))
                observer.violate("diverged-from-fault-free", name, f"differs from a fault-free run: {diff}")
            result["diverged"] = [
                {"pcs": name, "differs": entry_diff(chaos_digest.get(name), reference_digest.get(name)),
                 "chaos": chaos_digest.get(name), "fault_free": reference_digest.get(name)}
                for name in diverged[:5]
            ]  # fmt: skip
            await _delete_all(client, observer, REFERENCE, config.converge_timeout)
            observer.check()
            result["actions"] = dict(driver.actions)
            result["pcs_created"] = driver.created
            result["observer"] = observer.summary()
    finally:
        for task in tasks:
            task.cancel()
        disruptor.resume_all()
        result["disruptions"] = disruptor.record
        result["restarts"] = supervisor.restarts
        result["peak_rss_mib"] = {p.name: round(p.peak_rss_mib, 1) for p in programs}
        for program in programs:
            program.stop()
        await client.close()
        await admin.close()
    return result


def _status(observer: Observer, disruptor: Disruptor) -> str:
    pods = observer.in_namespace("pods", WORK)
    unbound = sum(1 for pod in pods if not (pod.get("spec") or {}).get("nodeName"))
    return (
        f"pcs {len(observer.in_namespace('pcs', WORK))} pods {len(pods)} unbound {unbound} "
        f"disruptions {len(disruptor.record)} violations {len(observer.violations)}"
    )


async def _pauses(sim: SimProcess, config: ChaosConfig, exempt: list[str], stop: asyncio.Event,
                  rng: random.Random) -> None:  # fmt: skip
    """Pause the whole server for a second now and then (a stalled apiserver)."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), rng.uniform(*config.pause_every))
        if stop.is_set():
            return
        doc = fault_document(config.seed, exempt, error_rate=config.error_rate)
        put_faults(sim.url, sim.token, {**doc, "paused": True})
        await asyncio.sleep(1.0)
        put_faults(sim.url, sim.token, doc)


async def _main(config: ChaosConfig, progress: bool) -> dict[str, Any]:
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="grove-chaos-") as tmp, SimProcess(config.nodes) as sim:
        workdir = Path(tmp)
        result = await _chaos_phase(config, sim, workdir, progress)
        peak_sim = 0.0
        if config.fuzz_examples:
            result["fuzz"] = await fuzz.run_fuzz(sim, workdir, config.fuzz_examples, config.seed, progress)
        peak_sim = max(v for v in memory_mib(sim.pid) if v == v)
        result["peak_rss_mib"]["grove-sim"] = round(peak_sim, 1)
        result["peak_rss_mib"]["chaos-runner"] = round(max(v for v in memory_mib(os.getpid()) if v == v), 1)
        result["sim_alive_at_end"] = True
    result["wall_s"] = round(time.time() - started, 1)
    return result


def run_chaos(config: ChaosConfig, *, progress: bool = True) -> dict[str, Any]:
    """Run the suite; the figures (see `benchmarks.chaos.report`)."""
    return asyncio.run(_main(config, progress))
