"""Cache: shared informers per kind, reads by key/namespace/labels/index, late informers; health endpoints."""

from __future__ import annotations

import asyncio
import contextlib

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from grove_runtime.cache import Cache
from grove_runtime.client import KubeClient
from grove_runtime.health import HealthServer
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import NODES, PODS
from grove_runtime.store import index_by_label

from .conftest import MiniApi
from .helpers import eventually


async def test_reads_and_shared_informers(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """One informer per kind is shared; reads filter by namespace, labels and index; late informers start too."""
    mini_api.put("api/v1/pods", {"metadata": {"name": "a", "namespace": "x", "labels": {"gang": "g1"}}})
    mini_api.put("api/v1/pods", {"metadata": {"name": "b", "namespace": "y", "labels": {"gang": "g2"}}})
    mini_api.put("api/v1/nodes", {"metadata": {"name": "n1"}})
    cache = Cache(mini_client)
    assert cache.informer(PODS) is cache.informer(PODS)
    cache.add_index(PODS, "gang", index_by_label("gang"))
    task = asyncio.ensure_future(cache.run())
    try:
        await cache.wait_synced()
        assert cache.synced
        assert cache.get(PODS, ObjectKey("x", "a")) is not None
        assert [p["metadata"]["name"] for p in cache.list(PODS, "y")] == ["b"]
        assert [p["metadata"]["name"] for p in cache.list(PODS, labels={"gang": "g1"})] == ["a"]
        assert [p["metadata"]["name"] for p in cache.by_index(PODS, "gang", "g2")] == ["b"]
        nodes = cache.informer(NODES)
        await nodes.wait_synced()
        assert cache.get(NODES, ObjectKey("", "n1")) is not None
        mini_api.put("api/v1/pods", {"metadata": {"name": "c", "namespace": "x", "labels": {"gang": "g1"}}})
        await eventually(lambda: len(cache.by_index(PODS, "gang", "g1")) == 2)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert len(cache.informers()) == 2


async def test_reading_an_unknown_kind_raises(mini_client: KubeClient) -> None:
    """Reading a kind nobody registered an informer for is a programming error."""
    with pytest.raises(KeyError, match="no informer"):
        Cache(mini_client).get(PODS, ObjectKey("x", "a"))


async def test_health_server_reports_failing_checks() -> None:
    """/readyz is 503 naming the failing check until it passes; /healthz is 200 with no checks."""
    ready = {"caches": False}
    server = HealthServer(CollectorRegistry(), host="127.0.0.1", port=0)
    server.add_ready_check("caches", lambda: ready["caches"])
    server.add_health_check("ping", lambda: True)
    await server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(base + "/readyz") as resp:
                assert (resp.status, await resp.text()) == (503, "failed: caches\n")
            ready["caches"] = True
            async with http.get(base + "/readyz") as resp:
                assert resp.status == 200
            async with http.get(base + "/healthz") as resp:
                assert resp.status == 200
    finally:
        await server.stop()
