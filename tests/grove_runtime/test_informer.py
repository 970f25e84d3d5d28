"""Informer over real HTTP (MiniApi): list+watch, bookmarks, re-watch on close, 410 re-list with synthesised deletes."""

from __future__ import annotations

from typing import Any

import pytest

from grove_runtime.cache import Cache
from grove_runtime.client import KubeClient
from grove_runtime.informer import Informer, running
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import PODS
from grove_runtime.store import index_by_field

from .conftest import MiniApi
from .helpers import Recorder, eventually

COLL = "api/v1/pods"


def pod(name: str, ns: str = "default", node: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": {"nodeName": node}}


async def test_list_then_watch_sees_adds_updates_deletes(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """The initial list fills the store; later creates, updates and deletes reach the store and handlers."""
    mini_api.put(COLL, pod("a", node="n1"))
    informer = Informer(mini_client, PODS, indexers={"node": index_by_field("spec.nodeName")})
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        assert informer.has_synced
        assert rec.events == [("add", "a")]
        mini_api.put(COLL, pod("b", node="n1"))
        mini_api.put(COLL, pod("a", node="n2"))
        mini_api.remove(COLL, "default", "b")
        await eventually(lambda: len(rec.events) == 4)
    assert rec.events[1:] == [("add", "b"), ("update", "a"), ("delete", "b")]
    assert [p["metadata"]["name"] for p in informer.store.by_index("node", "n2")] == ["a"]
    assert informer.store.by_index("node", "n1") == []
    assert informer.resource_version == str(mini_api.rv)


async def test_rewatches_from_last_rv_when_server_closes_stream(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """A clean end of stream re-watches from the last resourceVersion without re-listing."""
    informer = Informer(mini_client, PODS)
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        await eventually(lambda: mini_api.watcher_count == 1)
        mini_api.close_watches()
        await eventually(lambda: informer.watches == 2 and mini_api.watcher_count == 1)
        mini_api.put(COLL, pod("c"))
        await eventually(lambda: rec.events == [("add", "c")])
    assert informer.lists == 1


async def test_bookmark_advances_resource_version(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """A BOOKMARK only moves the informer's resourceVersion."""
    informer = Informer(mini_client, PODS)
    async with running(informer):
        await eventually(lambda: mini_api.watcher_count == 1)
        mini_api.put("api/v1/nodes", {"metadata": {"name": "unrelated"}})
        mini_api.bookmark(COLL)
        await eventually(lambda: informer.resource_version == str(mini_api.rv))
        assert len(informer.store) == 0


async def test_gone_relists_and_synthesises_missed_deletes(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """After 410 the informer re-lists, emitting deletes for objects that vanished while it was not watching."""
    mini_api.put(COLL, pod("keep"))
    mini_api.put(COLL, pod("vanish"))
    informer = Informer(mini_client, PODS)
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        await eventually(lambda: mini_api.watcher_count == 1)
        mini_api.remove(COLL, "default", "vanish", silently=True)
        mini_api.put(COLL, pod("new"), silently=True)
        mini_api.expire_next = 1
        mini_api.close_watches()
        await eventually(lambda: informer.lists == 2 and ("delete", "vanish") in rec.events)
    assert ObjectKey("default", "vanish") not in informer.store
    assert ObjectKey("default", "new") in informer.store
    assert rec.events.count(("add", "new")) == 1


async def test_odd_events_and_failing_handlers_do_not_stop_the_informer(
    mini_api: MiniApi, mini_client: KubeClient
) -> None:
    """Malformed events are skipped and a raising handler is isolated; later events still arrive."""

    class Boom:
        def on_add(self, obj: dict[str, Any]) -> None:
            raise RuntimeError("boom")

        def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
            raise RuntimeError("boom")

        def on_delete(self, obj: dict[str, Any]) -> None:
            raise RuntimeError("boom")

    informer = Informer(mini_client, PODS)
    rec = Recorder()
    informer.add_handler(Boom())
    informer.add_handler(rec)
    async with running(informer):
        await eventually(lambda: mini_api.watcher_count == 1)
        mini_api.inject_raw(COLL, {"type": "ADDED", "object": "not-a-dict"})
        mini_api.inject_raw(COLL, {"type": "ADDED", "object": {"metadata": {}}})
        mini_api.inject_raw(COLL, {"type": "WEIRD", "object": {"metadata": {"name": "x"}}})
        mini_api.put(COLL, pod("ok"))
        await eventually(lambda: rec.events == [("add", "ok")])
    assert len(informer.store) == 1


async def test_late_handler_receives_existing_objects(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """A handler added after sync first gets an add for every cached object."""
    mini_api.put(COLL, pod("a"))
    informer = Informer(mini_client, PODS)
    async with running(informer):
        rec = Recorder()
        informer.add_handler(rec)
        assert rec.events == [("add", "a")]


async def test_expired_list_backs_off_instead_of_spinning(mini_api: MiniApi) -> None:
    """A 410 from the list itself is retried with backoff on the informer's clock, then the list succeeds."""
    from grove_runtime.clock import FakeClock

    from .conftest import Fault, kube_client_for

    assert mini_api.server is not None
    clock = FakeClock()
    client = kube_client_for(str(mini_api.server.make_url("")).rstrip("/"))
    mini_api.faults.append(Fault(410, "GET"))
    informer = Informer(client, PODS, clock=clock, backoff=(1.0, 10.0))
    try:
        async with running_with_clock(informer, clock):
            assert informer.lists == 1
    finally:
        await client.close()


def running_with_clock(informer: Informer, clock: Any) -> Any:
    """Like ``running`` but advances the fake clock while waiting for the first sync."""
    import asyncio
    import contextlib

    @contextlib.asynccontextmanager
    async def ctx() -> Any:
        task = asyncio.ensure_future(informer.run())
        try:
            await eventually(lambda: clock.sleepers == 1)
            assert not informer.has_synced
            clock.advance(2.0)
            await informer.wait_synced()
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    return ctx()


async def test_transform_shapes_listed_and_watched_objects(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """The transform runs on every object before it is stored or handed to handlers, listed or watched."""

    def drop_spec(obj: dict[str, Any]) -> dict[str, Any]:
        obj.pop("spec", None)
        obj.setdefault("metadata", {})["annotations"] = {"shaped": "yes"}
        return obj

    mini_api.put(COLL, pod("a", node="n1"))
    informer = Informer(mini_client, PODS, transform=drop_spec)
    seen: list[dict[str, Any]] = []
    informer.add_handler(type("H", (), {
        "on_add": lambda self, o: seen.append(o),
        "on_update": lambda self, old, new: seen.append(new),
        "on_delete": lambda self, o: seen.append(o),
    })())  # fmt: skip
    async with running(informer):
        mini_api.put(COLL, pod("b", node="n2"))
        await eventually(lambda: len(seen) == 2)
    stored = [informer.store.get(ObjectKey("default", n)) for n in ("a", "b")]
    for obj in [*stored, *seen]:
        assert obj is not None
        assert "spec" not in obj
        assert obj["metadata"]["annotations"] == {"shaped": "yes"}


def test_cache_refuses_a_second_transform_for_one_informer(mini_client: KubeClient) -> None:
    """Objects already stored were shaped by the first transform, so asking for another one is an error."""
    cache = Cache(mini_client)

    def first(o: dict[str, Any]) -> dict[str, Any]:
        return o

    def second(o: dict[str, Any]) -> dict[str, Any]:
        return o

    inf = cache.informer(PODS, transform=first)
    assert cache.informer(PODS) is inf
    assert cache.informer(PODS, transform=first) is inf
    with pytest.raises(ValueError, match="another transform"):
        cache.informer(PODS, transform=second)
