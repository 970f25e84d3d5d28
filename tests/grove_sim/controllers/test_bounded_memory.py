"""No object may grow grove-sim's memory after it is gone: Events expire (--event-ttl), the watch replay window is
bounded by age as well as count, a deleted service account's issued token is forgotten. Fake clocks, counts of
entries (never RSS)."""

from __future__ import annotations

from typing import Any

import pytest

from grove_sim.controllers.eventttl import EventTTL
from grove_sim.server import SimOptions, SimServer
from grove_sim.storage.store import Store, TooOld


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _server() -> SimServer:
    server = SimServer(SimOptions())
    server.namespaces.seed()
    return server


def _event(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": name.split(".")[0]},
            "reason": "Started", "message": "started", "type": "Normal", "count": 1}  # fmt: skip


def test_events_expire_ttl_after_their_last_write() -> None:
    """An Event not written for `ttl` seconds is deleted; one bumped meanwhile lives `ttl` from the bump; the
    pending expiries go back to none, so 1,000 Events come and go without a trace."""
    server, clock = _server(), _Clock()
    ttl = EventTTL(server.core, 60.0, clock=clock)
    info = server.registry.get("", "v1", "events")
    assert info is not None
    for i in range(1000):
        server.core.create(info, "default", _event(f"p{i}.{i:x}"))
    clock.now = 30.0
    bumped = server.store.get(("", "events"), "default", "p0.0")
    assert bumped is not None
    server.core.replace(info, bumped, {**bumped, "count": 2})
    clock.now = 60.0
    assert ttl.expire() == 999
    assert [e["metadata"]["name"] for e in server.store.list(("", "events"))] == ["p0.0"]
    clock.now = 90.0
    assert ttl.expire() == 1
    assert server.store.count(("", "events")) == 0
    assert ttl.pending() == 0


def test_replay_window_is_bounded_by_age_and_too_old_watches_get_410() -> None:
    """10,000 objects created and deleted: once `history_age` has passed, the window holds only newer changes,
    and a watch from before them is told its resourceVersion is too old."""
    clock = _Clock()
    store = Store(history=100_000, history_age=300.0, clock=clock)
    key = ("", "configmaps")
    for i in range(10_000):
        obj = store.put(key, {"metadata": {"name": f"c{i}", "namespace": "ns", "uid": f"u{i}"}}, None).obj
        store.remove(key, obj)
    assert store.history_size() == 20_000
    first = store.rv
    clock.now = 301.0
    store.put(key, {"metadata": {"name": "late", "namespace": "ns", "uid": "late"}}, None)
    assert store.history_size() == 1
    assert store.count(key) == 1
    assert store.by_uid("u1") is None
    assert store.dependents("u1") == []
    with pytest.raises(TooOld):
        store.subscribe(key, _Sink(), since=first - 5)
    assert [e.rv for e in store.subscribe(key, _Sink(), since=first)] == [store.rv]


class _Sink:
    def offer(self, event: Any) -> None:
        """Events are not looked at."""


def test_deleted_service_account_takes_its_issued_token_along() -> None:
    """A token issued to a service account for a projected volume is forgotten (and no longer authenticates) once
    the account is deleted: 100 accounts come and go, no token stays."""
    server = _server()
    info = server.registry.get("", "v1", "serviceaccounts")
    assert info is not None
    tokens = []
    for i in range(100):
        server.core.create(info, "default", {"metadata": {"name": f"sa{i}"}})
        tokens.append(server.tokens.token_for("default", f"sa{i}"))
        server.core.delete(info, "default", f"sa{i}", {})
    assert all(server.tokens.issued_to(token) is None for token in tokens)
