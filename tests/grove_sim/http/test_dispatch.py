"""The (verb, subresource) table: a route the real server never installs is a 405 Status, never another verb."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import aiohttp
import pytest
from yarl import URL

from grove_sim.testing import SimCluster

POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[SimCluster]:
    with SimCluster() as sim:
        yield sim


@pytest.mark.parametrize(
    ("method", "path", "what"),
    [
        ("PUT", "/api/v1/namespaces/default/pods", "pods"),
        ("PATCH", "/api/v1/namespaces/default/pods", "pods"),
        ("POST", "/api/v1/namespaces/default/pods/p", "pods"),
        ("GET", "/api/v1/namespaces/default/pods/p/binding", "pods/binding"),
        ("PUT", "/api/v1/namespaces/default/pods/p/binding", "pods/binding"),
        ("DELETE", "/api/v1/namespaces/default/pods/p/status", "pods/status"),
        ("GET", "/api/v1/namespaces/default/pods/p/eviction", "pods/eviction"),
        ("PATCH", "/api/v1/namespaces/kube-system/finalize", "namespaces/finalize"),
        ("GET", "/api/v1/namespaces/default/bindings", "bindings"),
    ],
)
async def test_unrouted_verbs_are_method_not_allowed(cluster: SimCluster, method: str, path: str, what: str) -> None:
    """Each pair absent from the table answers 405 MethodNotAllowed naming the resource, and changes nothing."""
    async with aiohttp.ClientSession(cluster.url) as http:
        async with http.post("/api/v1/namespaces/default/pods", json=POD) as created:
            assert created.status in (201, 409)
        async with http.get("/api/v1/namespaces/default/pods/p") as before:
            stored = await before.json()
        async with http.request(method, path, json={}) as response:
            body = json.loads(await response.read())
            assert response.status == 405
        async with http.get("/api/v1/namespaces/default/pods/p") as after:
            assert (await after.json())["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert body["kind"] == "Status"
    assert body["reason"] == "MethodNotAllowed"
    assert body["message"].endswith(f"({what})")


async def test_routed_subresource_verbs_reach_their_handlers(cluster: SimCluster) -> None:
    """GET on ``pods/p/status`` is the pod; POST on ``pods/p/binding`` binds it (201 Status)."""
    async with aiohttp.ClientSession(cluster.url) as http:
        async with http.post("/api/v1/namespaces/default/pods", json={**POD, "metadata": {"name": "q"}}) as created:
            assert created.status == 201
        async with http.get("/api/v1/namespaces/default/pods/q/status") as status:
            assert (await status.json())["metadata"]["name"] == "q"
        binding = {"metadata": {"name": "q"}, "target": {"kind": "Node", "name": "node-0"}}
        async with http.post("/api/v1/namespaces/default/pods/q/binding", json=binding) as bound:
            assert bound.status == 201
            assert (await bound.json())["status"] == "Success"


async def test_a_client_gone_mid_body_is_not_an_internal_error(
    cluster: SimCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A program killed while sending a request body (the chaos suite's SIGKILLs) leaves no traceback in the
    server's log, and the server goes on answering."""
    url = URL(cluster.url)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    head = (
        "PATCH /api/v1/namespaces/default/pods/p HTTP/1.1\r\nHost: sim\r\n"
        "Content-Type: application/merge-patch+json\r\nContent-Length: 1000\r\n\r\n"
    )
    writer.write(head.encode() + b'{"metadata": ')
    await writer.drain()
    await asyncio.sleep(0.2)  # the server is now waiting for the rest of the body
    writer.close()
    await writer.wait_closed()
    del reader
    async with aiohttp.ClientSession(cluster.url) as http, http.get("/api/v1/namespaces/default/pods") as response:
        assert response.status == 200
    await asyncio.sleep(0.2)
    assert not [r for r in caplog.records if "internal error" in r.getMessage()], caplog.text
