"""Store invariants: one global increasing resourceVersion, watch replay equal to the committed history."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_sim.storage.store import Event, Store, TooOld

KEY = ("", "configmaps")

ops = st.lists(
    st.tuples(st.sampled_from(["put", "remove"]), st.sampled_from(["a", "b", "c"]), st.integers(0, 3)),
    min_size=1,
    max_size=40,
)


class _Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def offer(self, event: Event) -> None:
        self.events.append(event)


def _apply(store: Store, op: str, name: str, value: int) -> Event | None:
    old = store.get(KEY, "ns", name)
    if op == "put":
        obj: dict[str, Any] = {
            "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}"},
            "data": {"v": str(value)},
        }
        return store.put(KEY, obj, old)
    return store.remove(KEY, old) if old is not None else None


@settings(max_examples=60, deadline=None)
@given(ops)
def test_resource_versions_increase_and_replay_matches_live(sequence: list[tuple[str, str, int]]) -> None:
    """Every commit gets a larger resourceVersion; a replay from 0 equals what a live watcher saw."""
    store = Store()
    start = store.rv
    live = _Sink()
    store.subscribe(KEY, live, None)
    committed = [e for e in (_apply(store, *op) for op in sequence) if e is not None]
    rvs = [e.rv for e in committed]
    assert rvs == sorted(set(rvs))
    assert all(int(e.obj["metadata"]["resourceVersion"]) == e.rv for e in committed)
    replay = list(store.subscribe(KEY, _Sink(), start))
    assert [(e.type, e.rv) for e in replay] == [(e.type, e.rv) for e in live.events]


@settings(max_examples=30, deadline=None)
@given(ops, st.integers(1, 5))
def test_history_window_expires_old_versions(sequence: list[tuple[str, str, int]], window: int) -> None:
    """Replaying from before the bounded window raises TooOld; from inside it returns exactly the newer events."""
    store = Store(history=window)
    start = store.rv
    committed = [e for e in (_apply(store, *op) for op in sequence) if e is not None]
    if len(committed) > window:
        with pytest.raises(TooOld) as exc:
            store.subscribe(KEY, _Sink(), start)
        assert exc.value.requested == start
    since = committed[-1].rv - 1 if committed else start
    replay = list(store.subscribe(KEY, _Sink(), since))
    assert [e.rv for e in replay] == [e.rv for e in committed if e.rv > since]


def test_dependents_index_follows_owner_references() -> None:
    """The owner index lists dependents by owner uid and forgets them when they go."""
    store = Store()
    child = {"metadata": {"name": "c", "namespace": "ns", "uid": "c1", "ownerReferences": [{"uid": "o1"}]}}
    store.put(KEY, child, None)
    assert store.dependents("o1") == [(KEY, "ns", "c")]
    store.remove(KEY, child)
    assert store.dependents("o1") == []
    assert store.by_uid("c1") is None
