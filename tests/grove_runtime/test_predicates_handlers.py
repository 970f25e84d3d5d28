"""Predicates filter events; handlers map objects to the keys to reconcile."""

from __future__ import annotations

from typing import Any

import pytest

from grove_runtime import predicates
from grove_runtime.handlers import enqueue_mapped, enqueue_owner, enqueue_self, keys_for_update
from grove_runtime.keys import ObjectKey


def obj(gen: int = 1, rv: str = "1", labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "o",
            "namespace": "ns",
            "generation": gen,
            "resourceVersion": rv,
            "labels": labels or {},
            **meta,
        }
    }


@pytest.mark.parametrize(
    ("pred", "old", "new", "expected"),
    [
        pytest.param(predicates.GENERATION_CHANGED, obj(1), obj(2), True, id="generation-bumped"),
        pytest.param(predicates.GENERATION_CHANGED, obj(1, "1"), obj(1, "2"), False, id="status-only"),
        pytest.param(
            predicates.LABELS_CHANGED, obj(labels={"a": "1"}), obj(labels={"a": "2"}), True, id="label-changed"
        ),
        pytest.param(
            predicates.LABELS_CHANGED, obj(labels={"a": "1"}), obj(2, labels={"a": "1"}), False, id="labels-same"
        ),
        pytest.param(predicates.RESOURCE_VERSION_CHANGED, obj(rv="1"), obj(rv="1"), False, id="rv-same"),
        pytest.param(predicates.RESOURCE_VERSION_CHANGED, obj(rv="1"), obj(rv="2"), True, id="rv-changed"),
    ],
)
def test_update_predicates(
    pred: predicates.Predicate, old: dict[str, Any], new: dict[str, Any], expected: bool
) -> None:
    """Each stock predicate keeps exactly the updates it is named after."""
    assert pred.update(old, new) is expected
    assert pred.create(new) is True
    assert pred.delete(new) is True


def test_custom_and_combinators() -> None:
    """Custom predicates and any_of/all_of compose as boolean logic."""
    ready = predicates.predicate(update=lambda o, n: o.get("ready") != n.get("ready"), delete=lambda o: False)
    assert ready.update({"ready": False}, {"ready": True})
    assert not ready.delete({})
    either = predicates.any_of(predicates.GENERATION_CHANGED, predicates.LABELS_CHANGED)
    assert either.update(obj(1), obj(2))
    assert not either.update(obj(1), obj(1))
    both = predicates.all_of(predicates.GENERATION_CHANGED, ready)
    assert not both.update(obj(1), obj(2))
    assert not both.delete(obj())


def test_enqueue_self() -> None:
    """enqueue_self yields the object's own key, nothing for a nameless object."""
    assert list(enqueue_self().keys(obj())) == [ObjectKey("ns", "o")]
    assert list(enqueue_self().keys({"metadata": {}})) == []


def test_enqueue_owner_only_matching_controller_reference() -> None:
    """enqueue_owner follows only the controller ownerReference of the given group/kind."""
    refs = [
        {"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "name": "pclq", "controller": True, "uid": "1"},
        {"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "name": "other", "uid": "2"},
        {"apiVersion": "apps/v1", "kind": "PodClique", "name": "wrong-group", "controller": True, "uid": "3"},
    ]
    child = obj(ownerReferences=refs)
    handler = enqueue_owner("grove.io", "PodClique")
    assert list(handler.keys(child)) == [ObjectKey("ns", "pclq")]
    loose = enqueue_owner("grove.io", "PodClique", only_controller=False)
    assert {k.name for k in loose.keys(child)} == {"pclq", "other"}
    core = enqueue_owner("", "Node", cluster_scoped_owner=True)
    assert list(
        core.keys(obj(ownerReferences=[{"apiVersion": "v1", "kind": "Node", "name": "n", "controller": True}]))
    ) == [ObjectKey("", "n")]


def test_enqueue_mapped_and_update_union() -> None:
    """A mapped handler uses its function; updates enqueue keys of both old and new objects."""
    by_label = enqueue_mapped(lambda o: [ObjectKey("ns", v) for v in (o["metadata"].get("labels") or {}).values()])
    keys = keys_for_update(by_label, obj(labels={"c": "a"}), obj(labels={"c": "b"}))
    assert keys == {ObjectKey("ns", "a"), ObjectKey("ns", "b")}
