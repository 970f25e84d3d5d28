"""Properties of the write helpers every component relies on: when a patch is needed and what it contains."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_operator.reconcile.compare import is_subset
from grove_operator.reconcile.failures import ComponentError, last_errors
from grove_operator.reconcile.writes import status_patch
from grove_runtime.clock import FakeClock

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
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


@given(objects, objects)
def test_status_patch_applied_as_merge_yields_the_new_status(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Applying the status patch (top-level merge, null deletes) to the old status gives exactly the new one."""
    patch = status_patch(old, new)
    if patch is None:
        assert old == new
        return
    result = {**old, **patch}
    result = {k: v for k, v in result.items() if not (v is None and k not in new)}
    assert result == new


def test_repeated_error_keeps_its_observed_time() -> None:
    """A failure that persists does not rewrite lastErrors (so the status is not rewritten on every retry)."""
    clock = FakeClock()
    failure = ComponentError("ERR_SYNC_POD", "create", "boom")
    first = last_errors(failure, clock.now())
    clock.advance(60)
    again = last_errors(failure, clock.now(), first)
    assert again == first
    assert last_errors(None, clock.now(), first) is None
