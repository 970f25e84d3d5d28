"""The operator's scale paths: memoised parses, the in-sync memo, the batched child watches, the subset check."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from grove_api import PodClique
from grove_operator import syncmemo
from grove_operator.parsed import ParseMemo
from grove_operator.reconcile.compare import in_sync, is_subset, merge_patch_for
from grove_operator.syncmemo import SyncMemo
from grove_operator.triggers import GENERATION_OR_DELETION, STATUS_ONLY
from grove_runtime.clock import FakeClock
from grove_runtime.controller import Controller
from grove_runtime.handlers import enqueue_self
from grove_runtime.keys import ObjectKey, Result
from grove_runtime.store import Store


def _named_pclq(name: str) -> dict[str, Any]:
    raw = _pclq()
    return {**raw, "metadata": {**raw["metadata"], "name": name}}


def _pclq(replicas: int = 2, rv: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "metadata": {"name": "p-0-w", "namespace": "ns", "resourceVersion": rv, "generation": 1},
        "spec": {"roleName": "w", "replicas": replicas, "podSpec": {"containers": [{"name": "c", "image": "i"}]}},
    }


def test_parse_reuses_the_model_of_the_same_dict_and_reparses_a_replaced_one() -> None:
    """The same cached dict parses once; the dict that replaces it (new state) is parsed afresh."""
    parsed = ParseMemo()
    raw = _pclq(2)
    first = parsed.parse(PodClique, raw)
    assert parsed.parse(PodClique, raw) is first
    newer = _pclq(3, rv="2")
    assert parsed.parse(PodClique, newer).spec.replicas == 3
    assert parsed.parse(PodClique, copy.deepcopy(newer)) is not parsed.parse(PodClique, newer)


def test_sync_memo_hits_only_for_the_same_object_and_an_equal_fingerprint() -> None:
    """A hit needs the very same cached object and an equal fingerprint; forget drops the entry."""
    memo = SyncMemo()
    obj = {"a": 1}
    memo.in_sync("k", obj, ("uid", 1), value=True)
    assert memo.recall("k", obj, ("uid", 1)) == (True, True)
    assert not memo.unchanged("k", {"a": 1}, ("uid", 1))
    assert not memo.unchanged("k", obj, ("uid", 2))
    memo.forget("k")
    assert not memo.unchanged("k", obj, ("uid", 1))


def test_is_subset_ignores_server_added_fields_but_not_differences() -> None:
    """Extra fields on the server side are fine; a changed or missing desired field is not."""
    have = {"spec": {"a": [{"x": 1, "defaulted": True}], "b": "v", "extra": 0}}
    assert is_subset({"spec": {"a": [{"x": 1}], "b": "v"}}, have)
    assert not is_subset({"spec": {"a": [{"x": 2}], "b": "v"}}, have)
    assert not is_subset({"spec": {"a": [{"x": 1}, {"x": 1}]}}, have)
    assert not is_subset({"spec": {"missing": 1}}, have)


def test_in_sync_matches_merge_patch_for() -> None:
    """in_sync is exactly "exists and there is no patch to send"."""
    owner = {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "name": "p", "uid": "u", "controller": True}
    desired = {"metadata": {"name": "s", "labels": {"l": "1"}, "ownerReferences": [owner]}, "spec": {"x": 1}}
    existing: dict[str, Any] = {
        "metadata": {"name": "s", "labels": {"l": "1", "other": "2"}, "ownerReferences": [owner]},
        "spec": {"x": 1, "y": 2},
    }
    assert in_sync(desired, existing, component="c")
    assert not in_sync(desired, None, component="c")
    changed = copy.deepcopy(existing)
    changed["spec"]["x"] = 5
    assert merge_patch_for(desired, changed, component="c") == {"spec": {"x": 1}}
    assert not in_sync(desired, changed, component="c")


def test_status_only_and_generation_predicates_split_child_events() -> None:
    """Status-only updates go to the batched watch; spec changes, creates and deletes to the immediate one."""
    old = _pclq()
    status = copy.deepcopy(old)
    status["status"] = {"readyReplicas": 1}
    spec = copy.deepcopy(old)
    spec["metadata"]["generation"] = 2
    spec["status"] = {"readyReplicas": 1}
    assert STATUS_ONLY.update(old, status)
    assert not GENERATION_OR_DELETION.update(old, status)
    assert GENERATION_OR_DELETION.update(old, spec)
    assert not STATUS_ONLY.update(old, spec)
    assert not STATUS_ONLY.create(old)
    assert not STATUS_ONLY.delete(old)


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


class _Handlers:
    """Collects the handlers a controller registers, standing in for an informer."""

    def __init__(self) -> None:
        self.handlers: list[Any] = []

    def add_handler(self, handler: Any) -> None:
        self.handlers.append(handler)


class _Nop:
    async def reconcile(self, key: ObjectKey) -> Result:
        return Result()


async def test_batched_watch_adds_keys_after_the_period_and_collapses_events() -> None:
    """With batch_period, a burst of events parks the key once and makes it ready only after the period."""
    clock = FakeClock()
    ctrl = Controller("batched", _Nop(), clock=clock)
    informer = _Handlers()
    ctrl.watch(informer, enqueue_self(), batch_period=0.5)  # type: ignore[arg-type]
    obj = _pclq()
    for _ in range(10):
        informer.handlers[0].on_add(obj)
    assert len(ctrl.queue) == 0
    assert ctrl.queue.pending_delayed() == 1
    await _settle()
    clock.advance(0.4)
    await _settle()
    assert len(ctrl.queue) == 0
    clock.advance(0.2)
    await _settle()
    assert len(ctrl.queue) == 1
    assert await ctrl.queue.get() == ObjectKey("ns", "p-0-w")
    await ctrl.queue.shut_down()


def test_store_shares_one_key_instance_across_replacements() -> None:
    """Replacing an object keeps the stored key and its index entries consistent."""
    store = Store({"ns": lambda o: (str(o["metadata"]["namespace"]),)})
    store.upsert(_pclq(2))
    store.upsert(_pclq(3, rv="2"))
    assert [o["spec"]["replicas"] for o in store.by_index("ns", "ns")] == [3]
    assert store.delete(ObjectKey("ns", "p-0-w")) is not None
    assert store.by_index("ns", "ns") == []
    assert len(store) == 0
    store.upsert(_pclq(4, rv="3"))
    assert [o["spec"]["replicas"] for o in store.by_index("ns", "ns")] == [4]


def test_owner_ignores_the_creation_of_its_children_but_not_their_changes() -> None:
    """The PCS created its children itself: their ADDED events do not re-run it; spec changes and deletes do."""
    from grove_operator.triggers import CHILD_CHANGED

    old = _pclq(2)
    assert not CHILD_CHANGED.create(old)
    assert CHILD_CHANGED.update(old, {**old, "metadata": {**old["metadata"], "generation": 2}})
    assert not CHILD_CHANGED.update(old, {**old, "status": {"replicas": 2}})
    assert CHILD_CHANGED.delete(old)


def test_parse_memo_forgets_an_object_its_informer_saw_deleted() -> None:
    """`on_delete` (the informer handler) drops every parse of that object: 100 objects come and go, none stays."""
    parsed = ParseMemo()
    objects = [_named_pclq(f"p{i}") for i in range(100)]
    for obj in objects:
        parsed.parse(PodClique, obj)
        parsed.parse_with("other-parser", lambda raw: raw["metadata"]["name"], obj)
    assert parsed.held("ns") == 200
    for obj in objects:
        parsed.on_delete(obj)
    assert len(parsed) == 0


def test_sync_memo_sweep_drops_children_no_longer_cached_and_stays_bounded() -> None:
    """Entries of deleted (or replaced) children are swept once the memo doubled; live ones stay; the memo never
    holds more than about twice the live children however many came and went."""
    memo = SyncMemo()
    cache: dict[str, dict[str, int]] = {}
    for i in range(20_000):  # children created, found in sync, deleted: a churn of 20,000
        name = f"c{i}"
        cache[name] = {"i": i}
        memo.in_sync(name, cache[name], "fp")
        if i % 10:  # one in ten stays
            del cache[name]
        memo.sweep(cache.get)
        assert len(memo) <= max(syncmemo.MIN_SWEEP, 2 * len(cache))
    assert len(cache) == 2_000
    assert len(memo) <= 4_000
    assert all(memo.unchanged(name, obj, "fp") for name, obj in cache.items())
