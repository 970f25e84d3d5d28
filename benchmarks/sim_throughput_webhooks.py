"""What admission webhooks cost a write: PodCliqueSet creates through grove-sim without and with grove-operator's
webhooks (``python -m benchmarks.sim_throughput --webhooks``).

One fresh grove-sim per repetition (Grove CRDs and the example ClusterTopologyBinding applied). Phase 1 creates
N PodCliqueSets (the disaggregated-inference example, renamed) with no webhook registered; then grove-operator
starts as its own process with ``--webhook-port 0`` and, so that it only answers admission and does not reconcile
the objects, watches another namespace (``--namespace``; webhooks are cluster-wide); once its ``/readyz`` passes
(the webhooks are registered), phase 2 creates N more, each going through the defaulting and the validating
webhook over HTTPS. Reported per phase: rate, latency percentiles and the API server's CPU per create; for phase 2
also the operator's CPU per create. The difference is the cost of admission per create.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from benchmarks.sim_throughput_phases import PhaseResult, request_json, run_phase
from benchmarks.sim_throughput_proc import SimProcess, cpu_seconds

__all__ = ["markdown_webhooks", "run_webhooks"]

ROOT = Path(__file__).resolve().parents[1]
WATCHED = "elsewhere"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@functools.cache
def _example() -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "disaggregated-inference.yaml").read_text())
    return body


def _pcs(index: int, namespace: str) -> dict[str, Any]:
    return {**_example(), "metadata": {"name": f"llm-{index:05d}", "namespace": namespace}}


async def _setup(session: aiohttp.ClientSession, url: str) -> None:
    for path in sorted((ROOT / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        await request_json(
            session, "POST", f"{url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, expect=201
        )
    for name in ("grove-system", "plain", "hooked", WATCHED):
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        await request_json(session, "POST", f"{url}/api/v1/namespaces", body, expect=201)
    topology = yaml.safe_load((ROOT / "examples" / "cluster-topology.yaml").read_text())
    await request_json(session, "POST", f"{url}/apis/grove.io/v1alpha1/clustertopologybindings", topology, expect=201)


async def _creates(
    session: aiohttp.ClientSession,
    url: str,
    namespace: str,
    count: int,
    concurrency: int,
    sim: SimProcess,
    pid: int | None,
) -> dict[str, Any]:
    collection = f"{url}/apis/grove.io/v1alpha1/namespaces/{namespace}/podcliquesets"

    async def create(i: int) -> None:
        await request_json(session, "POST", collection, _pcs(i, namespace), expect=201)

    server_before = sim.cpu_seconds()
    operator_before = cpu_seconds(pid) if pid is not None else 0.0
    result: PhaseResult = await run_phase(namespace, count, concurrency, create)
    out = result.as_dict()
    out["server_cpu_ms_per_create"] = round((sim.cpu_seconds() - server_before) * 1000 / count, 3)
    if pid is not None:
        out["operator_cpu_ms_per_create"] = round((cpu_seconds(pid) - operator_before) * 1000 / count, 3)
    return out


def _wait_ready(port: int, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"grove-operator exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError("grove-operator's webhooks never became ready")


def _session(sim: SimProcess, concurrency: int) -> aiohttp.ClientSession:
    headers = {"Authorization": f"Bearer {sim.token}"} if sim.token else {}
    return aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(limit=concurrency + 4))


async def _phase(sim: SimProcess, namespace: str, count: int, concurrency: int, pid: int | None) -> dict[str, Any]:
    async with _session(sim, concurrency) as session:
        if pid is None:
            await _setup(session, sim.url)
        return await _creates(session, sim.url, namespace, count, concurrency, sim, pid)


def _repetition(sim: SimProcess, count: int, concurrency: int) -> dict[str, Any]:
    without = asyncio.run(_phase(sim, "plain", count, concurrency, None))
    port = _free_port()
    command = [
        sys.executable, "-m", "grove_operator.cli", "--kubeconfig", str(sim.kubeconfig), "--no-leader-elect",
        "--namespace", WATCHED, "--health-port", str(port), "--metrics-port", "0", "--webhook-port", "0",
        "--log-level", "WARNING",
    ]  # fmt: skip
    operator = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    try:
        _wait_ready(port, operator)
        with_hooks = asyncio.run(_phase(sim, "hooked", count, concurrency, operator.pid))
    finally:
        operator.terminate()
        operator.wait(30)
    return {"without_webhooks": without, "with_webhooks": with_hooks, "operator_command": shlex.join(command)}


def _median(reps: list[dict[str, Any]], phase: str, key: str) -> float:
    return round(statistics.median(float(r[phase][key]) for r in reps), 3)


def run_webhooks(count: int, concurrency: int, repeat: int, nodes: int) -> dict[str, Any]:
    """Every repetition on a fresh grove-sim; medians over repetitions in ``summary``."""
    reps = []
    for _ in range(repeat):
        with SimProcess(nodes) as sim:
            reps.append(_repetition(sim, count, concurrency))
    keys = ("rate_per_s", "p50_ms", "p99_ms", "server_cpu_ms_per_create")
    summary = {
        phase: {key: _median(reps, phase, key) for key in keys} for phase in ("without_webhooks", "with_webhooks")
    }
    summary["with_webhooks"]["operator_cpu_ms_per_create"] = _median(
        reps, "with_webhooks", "operator_cpu_ms_per_create"
    )
    summary["added_per_create"] = {
        "p50_ms": round(summary["with_webhooks"]["p50_ms"] - summary["without_webhooks"]["p50_ms"], 3),
        "server_cpu_ms": round(
            summary["with_webhooks"]["server_cpu_ms_per_create"]
            - summary["without_webhooks"]["server_cpu_ms_per_create"],
            3,
        ),
        "operator_cpu_ms": summary["with_webhooks"]["operator_cpu_ms_per_create"],
    }
    return {
        "config": {"creates": count, "concurrency": concurrency, "repeat": repeat, "nodes": nodes},
        "benchmark_command": shlex.join([Path(sys.executable).name, "-m", "benchmarks.sim_throughput", *sys.argv[1:]]),
        "repetitions": reps,
        "summary": summary,
    }


def markdown_webhooks(result: dict[str, Any]) -> str:
    """The summary as a Markdown table."""
    summary = result["summary"]
    rows = [
        "| PodCliqueSet creates | req/s | p50 ms | p99 ms | grove-sim CPU ms/create | operator CPU ms/create |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for phase, label in (("without_webhooks", "no webhooks"), ("with_webhooks", "defaulting + validating webhooks")):
        s = summary[phase]
        operator = s.get("operator_cpu_ms_per_create", "-")
        cells = (f"{s['rate_per_s']:,.0f}", s["p50_ms"], s["p99_ms"], s["server_cpu_ms_per_create"], operator)
        rows.append(f"| {label} | " + " | ".join(str(c) for c in cells) + " |")
    added = summary["added_per_create"]
    rows.append(
        f"\nAdded per create: {added['p50_ms']} ms median latency, {added['server_cpu_ms']} ms of grove-sim CPU, "
        f"{added['operator_cpu_ms']} ms of operator CPU."
    )
    return "\n".join(rows)
