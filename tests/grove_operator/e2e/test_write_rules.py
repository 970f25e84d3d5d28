"""Properties of the write helpers every component relies on: when a patch is needed and what it contains."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_operator.reconcile.compare import is_subset
from grove_operator.reconcile.failures import ComponentError, last_errors
from grove_operator.reconcile.writes import status_patch
from grove_runtime.clock import FakeClock

scalars = st.one_of(st.booleans(), st.integers(-5, 5), st.text(max_size=3))
"""No nulls: a status holds none, and a JSON merge patch cannot write one."""
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=3), json_values, max_size=4)


@given(objects)
def test_every_object_is_a_subset_of_itself(obj: dict[str, Any]) -> None:
    """An object never needs a patch to become itself."""
    assert is_subset(obj, obj)


@given(objects, objects)
def test_subset_of_a_merge_result(base: dict[str, Any], extra: dict[str, Any]) -> None:
    """After merging top-level fields of `want` into an object, no further patch of those fields is needed."""
    merged = {**extra, **base}
    assert is_subset(base, merged)


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386, as the API server applies a merge patch: objects merge recursively, null deletes."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


@given(objects, objects)
def test_status_patch_applied_as_merge_yields_the_new_status(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Applying the status patch as the API server does (RFC 7386) to the old status gives exactly the new one."""
    patch = status_patch(old, new)
    if patch is None:
        assert old == new
        return
    assert merge(old, patch) == new


def test_a_field_removed_inside_an_object_is_sent_as_null() -> None:
    """An update that ends drops `updateProgress.currentlyUpdating`: the patch must say so at that depth."""
    old = {"updateProgress": {"updateStartedAt": "t0", "currentlyUpdating": [{"replicaIndex": 1}]}}
    new = {"updateProgress": {"updateStartedAt": "t0", "updateEndedAt": "t1"}}
    assert status_patch(old, new) == {"updateProgress": {"updateEndedAt": "t1", "currentlyUpdating": None}}


def test_repeated_error_keeps_its_observed_time() -> None:
    """A failure that persists does not rewrite lastErrors (so the status is not rewritten on every retry)."""
    clock = FakeClock()
    failure = ComponentError("ERR_SYNC_POD", "create", "boom")
    first = last_errors(failure, clock.now())
    clock.advance(60)
    again = last_errors(failure, clock.now(), first)
    assert again == first
    assert last_errors(None, clock.now(), first) is None
