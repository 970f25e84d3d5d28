"""KubeClient against the in-process MiniApi: verbs, content types, errors, retries and raw watch streams."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from grove_runtime import errors
from grove_runtime.client import KubeClient, PatchType
from grove_runtime.clock import FakeClock
from grove_runtime.resources import PODS, ResourceType

from .conftest import Fault, MiniApi

PCS = ResourceType("grove.io", "v1alpha1", "podcliquesets", "PodCliqueSet")


def pod(name: str, ns: str = "default", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": dict(spec)}


async def test_create_get_list_delete_roundtrip(mini_client: KubeClient) -> None:
    """Objects come back as plain dicts through create, get, list and delete."""
    created = await mini_client.create(PODS, pod("a"))
    assert created["metadata"]["resourceVersion"]
    got = await mini_client.get(PODS, "a", "default")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    listed = await mini_client.list(PODS, "default")
    assert [o["metadata"]["name"] for o in listed["items"]] == ["a"]
    assert listed["metadata"]["resourceVersion"]
    await mini_client.delete(PODS, "a", "default")
    with pytest.raises(errors.NotFound):
        await mini_client.get(PODS, "a", "default")


async def test_create_existing_raises_already_exists(mini_client: KubeClient) -> None:
    """A second create of the same name raises AlreadyExists, which is a Conflict."""
    await mini_client.create(PODS, pod("a"))
    with pytest.raises(errors.AlreadyExists) as info:
        await mini_client.create(PODS, pod("a"))
    assert isinstance(info.value, errors.Conflict)
    assert info.value.status == 409


async def test_update_with_stale_resource_version_conflicts(mini_client: KubeClient) -> None:
    """PUT carries the resourceVersion, so a stale copy raises Conflict."""
    first = await mini_client.create(PODS, pod("a"))
    await mini_client.update(PODS, first)
    with pytest.raises(errors.Conflict):
        await mini_client.update(PODS, first)


async def test_patch_defaults_to_merge_patch_content_type(mini_client: KubeClient, mini_api: MiniApi) -> None:
    """Dict patches are sent as merge patch (never json-patch) unless another type is asked for."""
    await mini_client.create(PCS, {"metadata": {"name": "p", "namespace": "default"}, "spec": {"replicas": 1}})
    out = await mini_client.patch(PCS, "p", {"spec": {"replicas": 3}}, "default")
    assert out["spec"]["replicas"] == 3
    assert mini_api.requests[-1] == (
        "PATCH",
        "/apis/grove.io/v1alpha1/namespaces/default/podcliquesets/p",
        PatchType.MERGE.value,
    )
    await mini_client.create(PODS, pod("p"))
    await mini_client.patch(PODS, "p", {"metadata": {"labels": {"a": "b"}}}, "default", patch_type=PatchType.STRATEGIC)
    assert mini_api.requests[-1][2] == PatchType.STRATEGIC.value


async def test_status_writes_go_through_status_subresource(mini_client: KubeClient, mini_api: MiniApi) -> None:
    """patch_status targets /status and changes only the status."""
    await mini_client.create(PCS, {"metadata": {"name": "p", "namespace": "default"}, "spec": {"replicas": 1}})
    out = await mini_client.patch_status(PCS, "p", {"status": {"replicas": 1}}, "default")
    assert out["status"] == {"replicas": 1}
    assert mini_api.requests[-1][1].endswith("/podcliquesets/p/status")


async def test_retries_429_honouring_retry_after(mini_client: KubeClient, mini_api: MiniApi) -> None:
    """429 and 503 answers are retried until the request succeeds."""
    await mini_client.create(PODS, pod("a"))
    mini_api.faults.append(Fault(429, "GET", {"Retry-After": "0"}, times=2))
    mini_api.faults.append(Fault(503, "GET"))
    got = await mini_client.get(PODS, "a", "default")
    assert got["metadata"]["name"] == "a"
    assert sum(1 for m, p, _ in mini_api.requests if m == "GET" and p.endswith("/pods/a")) == 4


async def test_client_errors_are_not_retried(mini_client: KubeClient, mini_api: MiniApi) -> None:
    """A 422 is raised at once as Invalid."""
    mini_api.faults.append(Fault(422, "POST", times=5))
    with pytest.raises(errors.Invalid):
        await mini_client.create(PODS, pod("a"))
    assert len(mini_api.requests) == 1


async def test_connection_loss_maps_to_connection_lost() -> None:
    """A refused connection is retried and then raised as ConnectionLost."""
    from .conftest import kube_client_for

    client = kube_client_for("http://127.0.0.1:9")
    try:
        with pytest.raises(errors.ConnectionLost):
            await client.get(PODS, "a", "default")
    finally:
        await client.close()


async def test_bind_sets_node_and_double_bind_conflicts(mini_client: KubeClient, mini_api: MiniApi) -> None:
    """bind posts pods/{name}/binding; binding an already bound pod raises Conflict."""
    await mini_client.create(PODS, pod("a"))
    await mini_client.bind("default", "a", "node-1")
    assert (await mini_client.get(PODS, "a", "default"))["spec"]["nodeName"] == "node-1"
    assert mini_api.requests[-2][1] == "/api/v1/namespaces/default/pods/a/binding"
    with pytest.raises(errors.Conflict):
        await mini_client.bind("default", "a", "node-2")


async def test_watch_streams_raw_events_and_raises_gone(mini_client: KubeClient, mini_api: MiniApi) -> None:
    """watch yields raw dict events from a resourceVersion, and an expired one raises Gone."""
    mini_api.put("api/v1/pods", pod("a"))
    start = str(mini_api.rv)
    mini_api.put("api/v1/pods", pod("b"))
    async with mini_client.watch(PODS, resource_version=start) as events:
        event = await anext(events)
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "b"
    mini_api.compact()
    with pytest.raises(errors.Gone):
        async with mini_client.watch(PODS, resource_version=start) as events:
            await anext(events)


async def test_scale_apply_json_patch_and_delete_options(mini_client: KubeClient, mini_api: MiniApi) -> None:
    """Request shapes: scale hits /scale, apply sends apply-patch+yaml, JSON patch keeps its type."""
    await mini_client.create(PCS, {"metadata": {"name": "p", "namespace": "default"}, "spec": {"replicas": 1}})
    mini_api.faults.append(Fault(200, "PATCH", times=3))
    await mini_client.scale(PCS, "p", "default", 4)
    assert mini_api.requests[-1][:2] == ("PATCH", "/apis/grove.io/v1alpha1/namespaces/default/podcliquesets/p/scale")
    await mini_client.apply(PCS, {"metadata": {"name": "p", "namespace": "default"}}, field_manager="grove")
    assert mini_api.requests[-1][2] == PatchType.APPLY.value
    await mini_client.patch(
        PCS, "p", [{"op": "replace", "path": "/spec/replicas", "value": 2}], "default", patch_type=PatchType.JSON
    )
    assert mini_api.requests[-1][2] == PatchType.JSON.value
    await mini_client.delete(PCS, "p", "default", propagation_policy="Foreground", preconditions={"uid": "x"})
    assert mini_api.requests[-1][0] == "DELETE"
    assert ("apis/grove.io/v1alpha1/podcliquesets", "default", "p") not in mini_api.objects


async def test_retry_after_header_sets_the_wait(mini_api: MiniApi) -> None:
    """A 429 with Retry-After: 7 makes the client sleep exactly 7 s (on its injected clock) before retrying."""
    from .helpers import eventually

    async with _get_on_fake_clock(mini_api, [Fault(429, "GET", {"Retry-After": "7"})]) as (clock, task):
        await eventually(lambda: clock.sleepers == 1)
        assert clock.pending_delays() == [7.0]
        clock.advance(7)
        assert (await task)["metadata"]["name"] == "a"


@contextlib.asynccontextmanager
async def _get_on_fake_clock(
    mini_api: MiniApi, faults: list[Fault], **client_kwargs: Any
) -> AsyncIterator[tuple[FakeClock, asyncio.Future[Any]]]:
    """A client on a fake clock GETting pod `a` in the background after `faults` are armed; the GET is cancelled
    and the client closed on the way out."""
    from .conftest import kube_client_for

    assert mini_api.server is not None
    clock = FakeClock()
    client = kube_client_for(str(mini_api.server.make_url("")).rstrip("/"), clock=clock, **client_kwargs)
    try:
        mini_api.put("api/v1/pods", pod("a"))
        mini_api.faults.extend(faults)
        task = asyncio.ensure_future(client.get(PODS, "a", "default"))
        try:
            yield clock, task
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    finally:
        await client.close()


async def test_bearer_token_and_default_headers_are_sent(mini_api: MiniApi) -> None:
    """The kubeconfig's bearer token (with its prefix) and the client's default headers go with every request."""
    from .conftest import kube_client_for

    assert mini_api.server is not None
    client = kube_client_for(str(mini_api.server.make_url("")).rstrip("/"))
    cfg: Any = client.api_client.configuration
    cfg.api_key = {"BearerToken": "s3cret"}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    client.api_client.default_headers["X-Probe"] = "1"
    try:
        await client.create(PODS, pod("a"))
        await client.patch(PODS, "a", {"metadata": {"labels": {"k": "v"}}}, "default")
    finally:
        await client.close()
    assert [h.get("authorization") or h.get("Authorization") for h in mini_api.headers] == ["Bearer s3cret"] * 2
    assert all(h.get("X-Probe") == "1" for h in mini_api.headers)


async def test_requests_ignore_proxy_environment_changes(mini_api: MiniApi, monkeypatch: pytest.MonkeyPatch) -> None:
    """The proxy is decided once, when the client is built: a proxy set in the environment later is not consulted
    per request (that lookup used to cost a thread hop per request)."""
    from .conftest import kube_client_for

    assert mini_api.server is not None
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    client = kube_client_for(str(mini_api.server.make_url("")).rstrip("/"))
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # nothing listens there
    try:
        created = await client.create(PODS, pod("a"))
    finally:
        await client.close()
    assert created["metadata"]["name"] == "a"


def test_environment_proxy_honours_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment's proxy applies to the API server's host unless NO_PROXY exempts it."""
    from grove_runtime._transport import environment_proxy

    for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert environment_proxy("https://10.0.0.1:443") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert environment_proxy("https://10.0.0.1:443") == "http://proxy:3128"
    monkeypatch.setenv("NO_PROXY", "10.0.0.1,localhost")
    assert environment_proxy("https://10.0.0.1:443") is None


def test_backoff_doubles_per_failed_attempt_within_its_jitter_and_cap() -> None:
    """After n failed attempts the wait is initial * 2^(n-1) plus up to `initial` of jitter, never above `maximum`;
    a Retry-After is taken as given, up to `max_retry_after`."""
    from grove_runtime._wire import RetryPolicy, retry_delay

    policy = RetryPolicy(initial=0.2, maximum=10.0, max_retry_after=60.0)
    for failed, base in ((1, 0.2), (2, 0.4), (3, 0.8), (4, 1.6)):
        for _ in range(50):
            assert base <= retry_delay(policy, failed, None) <= base + 0.2
    assert retry_delay(policy, 500, None) == 10.0
    assert retry_delay(policy, 1, errors.TooManyRequests("busy", retry_after=7.0)) == 7.0
    assert retry_delay(policy, 1, errors.TooManyRequests("busy", retry_after=600.0)) == 60.0


async def test_later_retries_keep_backing_off_after_the_bare_first_attempt(mini_api: MiniApi) -> None:
    """Two 503s: the first attempt (run outside the retry loop) and the first retry fail; the waits before the
    second and third attempts are the first and second steps of the backoff, then the third attempt succeeds."""
    from grove_runtime._wire import RetryPolicy

    from .helpers import eventually

    retry = RetryPolicy(attempts=4, initial=1.0, maximum=100.0)
    async with _get_on_fake_clock(mini_api, [Fault(503, "GET", times=2)], retry=retry) as (clock, task):
        waits = []
        for _ in range(2):
            await eventually(lambda: clock.sleepers == 1)
            (wait,) = clock.pending_delays()
            waits.append(wait)
            clock.advance(wait)
        assert 1.0 <= waits[0] <= 2.0
        assert 2.0 <= waits[1] <= 3.0
        assert (await task)["metadata"]["name"] == "a"
