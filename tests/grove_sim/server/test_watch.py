"""List and watch: pagination, resume from a resourceVersion, 410 recovery, bookmarks and selector semantics."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.rest import ApiException

from grove_sim.server import SimOptions
from grove_sim.testing import SimCluster


async def _collect(stream: Any, count: int) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    async for event in stream:
        seen.append((event["type"], event["raw_object"]["metadata"]["name"]))
        if len(seen) >= count:
            break
    return seen


async def test_list_pagination(api_client: client.ApiClient, namespace: str) -> None:
    """limit/continue walks every item once and reports remainingItemCount."""
    core = client.CoreV1Api(api_client)
    for i in range(5):
        await core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{i}"}})
    first = await core.list_namespaced_config_map(namespace, limit=2)
    assert [c.metadata.name for c in first.items] == ["cm-0", "cm-1"]
    assert first.metadata.remaining_item_count == 3
    names = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = await core.list_namespaced_config_map(namespace, limit=2, _continue=token)
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
    assert names == [f"cm-{i}" for i in range(5)]


async def test_pagination_with_a_selector_and_writes_between_pages(
    api_client: client.ApiClient, namespace: str
) -> None:
    """A selector filters across pages and leaves remainingItemCount unset (kube-apiserver cannot count what a
    selector will keep); an object created between pages after the last key is listed, one before it is not, and a
    deleted one is gone."""
    core = client.CoreV1Api(api_client)
    for i in range(10):
        labels = {"keep": "yes"} if i % 2 == 0 else {}
        await core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{i:02d}", "labels": labels}})
    first = await core.list_namespaced_config_map(namespace, limit=2, label_selector="keep=yes")
    assert [c.metadata.name for c in first.items] == ["cm-00", "cm-02"]
    assert first.metadata.remaining_item_count is None
    assert first.metadata._continue
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm-01a", "labels": {"keep": "yes"}}})
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm-05a", "labels": {"keep": "yes"}}})
    await core.delete_namespaced_config_map("cm-04", namespace)
    names = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = await core.list_namespaced_config_map(namespace, limit=2, label_selector="keep=yes", _continue=token)
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
    assert names == ["cm-00", "cm-02", "cm-05a", "cm-06", "cm-08"]
    unfiltered = await core.list_namespaced_config_map(namespace, limit=3)
    assert unfiltered.metadata.remaining_item_count == 11 - 3  # 10 + 2 created, 1 deleted; 3 on this page


async def test_watch_resumes_from_list_resource_version(api_client: client.ApiClient, namespace: str) -> None:
    """A watch from a list's resourceVersion sees exactly the later changes, in order."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "before"}})
    listed = await core.list_namespaced_config_map(namespace)
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "after"}})
    await core.patch_namespaced_config_map("before", namespace, {"data": {"x": "y"}})
    await core.delete_namespaced_config_map("after", namespace)
    w = watch.Watch()
    stream = w.stream(
        core.list_namespaced_config_map, namespace, resource_version=listed.metadata.resource_version, timeout_seconds=5
    )
    seen = await _collect(stream, 3)
    await w.close()
    assert seen == [("ADDED", "after"), ("MODIFIED", "before"), ("DELETED", "after")]


async def test_watch_without_resource_version_lists_then_streams(api_client: client.ApiClient, namespace: str) -> None:
    """A watch with no resourceVersion starts with synthetic ADDED events, then live ones, and ends at timeout."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "one"}})
    w = watch.Watch()
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async for event in w.stream(core.list_namespaced_config_map, namespace, timeout_seconds=1):
            seen.append((event["type"], event["raw_object"]["metadata"]["name"]))

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.2)
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "two"}})
    await task
    await w.close()
    assert seen == [("ADDED", "one"), ("ADDED", "two")]


async def test_label_selector_transitions(api_client: client.ApiClient, namespace: str) -> None:
    """A filtered watch sees ADDED when an object starts matching and DELETED when it stops."""
    core = client.CoreV1Api(api_client)
    listed = await core.list_namespaced_config_map(namespace)
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "sel", "labels": {"tier": "a"}}})
    await core.patch_namespaced_config_map("sel", namespace, {"metadata": {"labels": {"tier": "b"}}})
    await core.patch_namespaced_config_map("sel", namespace, {"metadata": {"labels": {"tier": "c"}}})
    w = watch.Watch()
    stream = w.stream(
        core.list_namespaced_config_map,
        namespace,
        label_selector="tier in (b)",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=5,
    )
    seen = await _collect(stream, 2)
    await w.close()
    assert seen == [("ADDED", "sel"), ("DELETED", "sel")]


async def test_selectors_on_list(api_client: client.ApiClient, namespace: str) -> None:
    """Set-based label selectors and field != work; an unsupported field is 400."""
    core = client.CoreV1Api(api_client)
    for name, tier in (("a", "x"), ("b", "y"), ("c", "z")):
        await core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": {"tier": tier}}})
    found = await core.list_namespaced_config_map(namespace, label_selector="tier notin (x),tier")
    assert [c.metadata.name for c in found.items] == ["b", "c"]
    found = await core.list_namespaced_config_map(namespace, field_selector="metadata.name!=b")
    assert [c.metadata.name for c in found.items] == ["a", "c"]
    with pytest.raises(ApiException) as exc:
        await core.list_namespaced_config_map(namespace, field_selector="data.foo=bar")
    assert exc.value.status == 400
    assert "field label not supported: data.foo" in exc.value.body


async def test_watch_expired_and_bookmarks() -> None:
    """A watch from a compacted resourceVersion raises 410; bookmarks carry the current resourceVersion."""
    with SimCluster(SimOptions(history=3, bookmark_interval=0.1, default_service_accounts=False)) as small:
        configuration = client.Configuration()
        from kubernetes_asyncio import config

        await config.load_kube_config(config_file=small.kubeconfig, client_configuration=configuration)
        async with client.ApiClient(configuration=configuration) as api:
            core = client.CoreV1Api(api)
            first = await core.create_namespaced_config_map("default", {"metadata": {"name": "c0"}})
            for i in range(1, 6):
                await core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
            w = watch.Watch()
            with pytest.raises(ApiException) as exc:
                async for _ in w.stream(
                    core.list_namespaced_config_map,
                    "default",
                    resource_version=first.metadata.resource_version,
                    timeout_seconds=2,
                ):
                    pass
            assert exc.value.status == 410
            listed = await core.list_namespaced_config_map("default")
            resp = await core.list_namespaced_config_map(
                "default",
                watch=True,
                allow_watch_bookmarks=True,
                resource_version=listed.metadata.resource_version,
                timeout_seconds=1,
                _preload_content=False,
            )
            line = await resp.content.readline()
            resp.release()
            await w.close()
    import json

    event = json.loads(line)
    assert event["type"] == "BOOKMARK"
    assert event["object"]["metadata"]["resourceVersion"] == listed.metadata.resource_version
