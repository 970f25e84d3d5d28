"""Store: keyed and namespaced access and index consistency under arbitrary mutations."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_runtime.keys import ObjectKey
from grove_runtime.store import Store, index_by_field, index_by_label, index_by_owner_uid


def obj(
    name: str, ns: str = "n", *, label: str | None = None, node: str | None = None, owner: str | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if label is not None:
        meta["labels"] = {"gang": label}
    if owner is not None:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "X", "name": "o"}]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


def make_store() -> Store:
    return Store(
        {"gang": index_by_label("gang"), "node": index_by_field("spec.nodeName"), "owner": index_by_owner_uid()}
    )


def test_index_lookup_and_update_moves_entries() -> None:
    """Updating an object moves it between index buckets."""
    store = make_store()
    store.upsert(obj("a", label="g1", node="n1", owner="u1"))
    store.upsert(obj("b", label="g1"))
    assert {o["metadata"]["name"] for o in store.by_index("gang", "g1")} == {"a", "b"}
    store.upsert(obj("a", label="g2"))
    assert [o["metadata"]["name"] for o in store.by_index("gang", "g1")] == ["b"]
    assert store.by_index("node", "n1") == []
    assert store.by_index("owner", "u1") == []
    assert store.index_keys("gang", "g2") == [ObjectKey("n", "a")]


def test_namespace_listing_and_delete() -> None:
    """list(namespace) only returns that namespace, and delete removes from every view."""
    store = make_store()
    store.upsert(obj("a", "x", label="g"))
    store.upsert(obj("b", "y", label="g"))
    assert [o["metadata"]["name"] for o in store.list("x")] == ["a"]
    assert store.delete(ObjectKey("x", "a")) is not None
    assert store.list("x") == []
    assert [o["metadata"]["name"] for o in store.by_index("gang", "g")] == ["b"]
    assert store.delete(ObjectKey("x", "a")) is None


def test_odd_objects_index_nothing() -> None:
    """An index function that fails on an odd object indexes nothing, and the object is still stored."""
    store = make_store()
    store.upsert({"metadata": {"name": "odd", "namespace": "n", "labels": None}, "spec": "not-a-dict"})
    assert ObjectKey("n", "odd") in store
    assert store.index_values("node") == []


def test_replace_returns_vanished_objects() -> None:
    """replace() reports objects that are no longer present."""
    store = make_store()
    store.upsert(obj("a"))
    store.upsert(obj("b"))
    gone = store.replace([obj("b"), obj("c")])
    assert [o["metadata"]["name"] for o in gone] == ["a"]
    assert sorted(k.name for k in store.snapshot()) == ["b", "c"]


def test_indexer_added_later_covers_existing_objects() -> None:
    """add_indexer builds the index over objects already stored."""
    store = Store()
    store.upsert(obj("a", label="g"))
    store.add_indexer("gang", index_by_label("gang"))
    assert len(store.by_index("gang", "g")) == 1


ops = st.lists(
    st.tuples(st.sampled_from(["up", "del"]), st.sampled_from("abcd"), st.sampled_from(["g1", "g2", None])),
    max_size=50,
)


@given(ops)
def test_index_matches_brute_force(sequence: list[tuple[str, str, str | None]]) -> None:
    """After any sequence of upserts and deletes, index lookups equal a full scan."""
    store = make_store()
    for op, name, label in sequence:
        if op == "up":
            store.upsert(obj(name, label=label))
        else:
            store.delete(ObjectKey("n", name))
    for value in ("g1", "g2"):
        expected = {
            o["metadata"]["name"] for o in store.list() if (o["metadata"].get("labels") or {}).get("gang") == value
        }
        assert {o["metadata"]["name"] for o in store.by_index("gang", value)} == expected
    assert len(store) == len(store.list("n"))
