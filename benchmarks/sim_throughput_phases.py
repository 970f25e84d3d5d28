"""The write phases of the grove-sim throughput benchmark: request bodies, a trivial binder, timing and latency.

Every phase is N independent requests issued with bounded concurrency from one aiohttp session with raw JSON, so
what is measured is the server (and the HTTP stack), not client-side model (de)serialisation. Each request's
latency is taken from send to full response, excluding time spent waiting for a concurrency slot. The binder is
deliberately trivial (round-robin over nodes, skipping nodes that cannot hold the pod) but respects allocatable
capacity, because the simulated kubelet fails pods that do not fit (``OutOf<resource>``).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from tqdm import tqdm

__all__ = [
    "Binder",
    "PhaseResult",
    "RequestError",
    "list_all",
    "parse_quantity",
    "pod_body",
    "pod_requests",
    "request_json",
    "run_phase",
]

_WORKER_REQUESTS: dict[str, str] = {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"}
_FRONTEND_REQUESTS: dict[str, str] = {"cpu": "2", "memory": "8Gi"}

_SUFFIXES = {
    "m": 0.001,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
}


class RequestError(RuntimeError):
    """A benchmark request got an unexpected HTTP status."""


def parse_quantity(text: str) -> float:
    """A Kubernetes quantity (``500m``, ``2048Gi``, ``8``) as a float, enough for capacity bookkeeping."""
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * _SUFFIXES[suffix]
    return float(text)


def pod_requests(index: int) -> dict[str, str]:
    """Even pods are GPU workers, odd pods CPU frontends: 50,000 fit 5,000 nodes of 192 CPU, 2 TiB and 8 GPUs."""
    return dict(_WORKER_REQUESTS if index % 2 == 0 else _FRONTEND_REQUESTS)


def pod_body(index: int, namespace: str) -> dict[str, Any]:
    """A realistic ~1.5 KB inference pod: labels, requests and limits, env, probes, grove-scheduler."""
    gang = index // 8
    requests = pod_requests(index)
    limits = {"nvidia.com/gpu": requests["nvidia.com/gpu"]} if "nvidia.com/gpu" in requests else {}
    role = "worker" if "nvidia.com/gpu" in requests else "frontend"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"bench-{index:06d}",
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": "bench-inference",
                "app.kubernetes.io/part-of": "grove",
                "grove.io/podcliqueset": "bench",
                "grove.io/podclique": f"bench-0-{role}-{gang % 16}",
                "grove.io/podgang": f"bench-gang-{gang}",
                "grove.io/role": role,
                "grove.io/pod-index": str(index % 8),
            },
            "annotations": {"grove.io/benchmark": "sim-throughput"},
        },
        "spec": {
            "schedulerName": "grove-scheduler",
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {
                    "name": role,
                    "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0",
                    "command": ["python3", "-m", "dynamo.vllm"],
                    "args": ["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "1"],
                    "env": [
                        {"name": "GROVE_PCS_NAME", "value": "bench"},
                        {"name": "GROVE_PCLQ_POD_INDEX", "value": str(index % 8)},
                        {"name": "GROVE_HEADLESS_SERVICE", "value": "bench-0.default.svc.cluster.local"},
                        {"name": "HF_HOME", "value": "/cache/huggingface"},
                        {"name": "NCCL_DEBUG", "value": "WARN"},
                    ],
                    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                    "ports": [{"name": "http", "containerPort": 8000, "protocol": "TCP"}],
                    "resources": {"requests": requests, "limits": limits},
                    "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10},
                }
            ],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}],
        },
    }


class Binder:
    """Round-robin over nodes, skipping a node whose remaining allocatable cannot hold the pod's requests."""

    RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "pods")

    def __init__(self, nodes: Sequence[dict[str, Any]]) -> None:
        self._names = [str(n["metadata"]["name"]) for n in nodes]
        self.free: list[dict[str, float]] = []
        for node in nodes:
            allocatable = (node.get("status") or {}).get("allocatable") or {}
            self.free.append({name: parse_quantity(str(allocatable.get(name, "0"))) for name in self.RESOURCES})
        self._next = 0

    def place(self, requests: dict[str, str]) -> str | None:
        """The node for a pod with these requests (its capacity is taken), or None if no node can hold it."""
        need = {name: parse_quantity(value) for name, value in requests.items()}
        need["pods"] = need.get("pods", 0.0) + 1.0
        count = len(self._names)
        for step in range(count):
            index = (self._next + step) % count
            free = self.free[index]
            if all(free.get(name, 0.0) >= amount for name, amount in need.items()):
                for name, amount in need.items():
                    free[name] = free.get(name, 0.0) - amount
                self._next = (index + 1) % count
                return self._names[index]
        return None


def _percentile(sorted_values: Sequence[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


@dataclass
class PhaseResult:
    """Throughput and latency of one phase."""

    name: str
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    error_samples: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Successful requests per second of wall time."""
        return (self.requests - self.errors) / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (latencies as p50/p99/mean in milliseconds)."""
        ordered = sorted(self.latencies_ms)
        return {
            "requests": self.requests,
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "rate_per_s": round(self.rate, 1),
            "p50_ms": round(_percentile(ordered, 0.50), 3),
            "p99_ms": round(_percentile(ordered, 0.99), 3),
            "mean_ms": round(statistics.fmean(ordered), 3) if ordered else float("nan"),
            "error_samples": self.error_samples[:5],
        }


async def run_phase(
    name: str,
    count: int,
    concurrency: int,
    op: Callable[[int], Awaitable[None]],
    *,
    progress: bool = False,
) -> PhaseResult:
    """Run ``op(0..count-1)`` with at most ``concurrency`` in flight; time the phase and each request."""
    result = PhaseResult(name=name, requests=count)
    semaphore = asyncio.Semaphore(concurrency)
    bar = tqdm(total=count, desc=name, unit="req", disable=not progress, leave=False, mininterval=0.5)

    async def one(i: int) -> None:
        async with semaphore:
            began = time.perf_counter()
            try:
                await op(i)
            except (RequestError, aiohttp.ClientError, TimeoutError) as exc:
                result.errors += 1
                if len(result.error_samples) < 5:
                    result.error_samples.append(f"{type(exc).__name__}: {exc}")
            result.latencies_ms.append((time.perf_counter() - began) * 1000)
            bar.update(1)

    began = time.perf_counter()
    try:
        await asyncio.gather(*(one(i) for i in range(count)))
    finally:
        result.seconds = time.perf_counter() - began
        bar.close()
    return result


async def request_json(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    body: dict[str, Any],
    *,
    content_type: str = "application/json",
    expect: int,
) -> dict[str, Any]:
    """Send one raw JSON request and return the decoded reply; raises ``RequestError`` on another status."""
    data = json.dumps(body, separators=(",", ":"))
    async with session.request(method, url, data=data, headers={"Content-Type": content_type}) as resp:
        payload = await resp.read()
        if resp.status != expect:
            raise RequestError(f"{method} {url}: HTTP {resp.status}: {payload[:300]!r}")
    decoded: dict[str, Any] = json.loads(payload)
    return decoded


async def list_all(session: aiohttp.ClientSession, url: str, limit: int = 2000) -> tuple[list[dict[str, Any]], int]:
    """Every item of a collection, paginated with limit/continue; also the list's resourceVersion."""
    items: list[dict[str, Any]] = []
    token = ""
    rv = 0
    while True:
        params = {"limit": str(limit)}
        if token:
            params["continue"] = token
        async with session.get(url, params=params) as resp:
            if resp.status != 200:
                raise RequestError(f"GET {url}: HTTP {resp.status}: {(await resp.text())[:300]}")
            page: dict[str, Any] = json.loads(await resp.read())
        items.extend(page.get("items") or [])
        meta = page.get("metadata") or {}
        rv = rv or int(meta.get("resourceVersion") or 0)
        token = meta.get("continue") or ""
        if not token:
            return items, rv
