"""Expectations: counting observed creates/deletes and timing out."""

from __future__ import annotations

from grove_runtime.clock import FakeClock
from grove_runtime.expectations import Expectations
from grove_runtime.keys import ObjectKey

K = ObjectKey("ns", "pcs")


def test_satisfied_after_all_observed() -> None:
    """Expectations are satisfied only once every expected create and delete was observed."""
    exp: Expectations[ObjectKey] = Expectations(clock=FakeClock())
    assert exp.satisfied(K)
    exp.expect(K, creations=2, deletions=1)
    exp.creation_observed(K)
    exp.deletion_observed(K)
    assert not exp.satisfied(K)
    assert exp.pending(K) == (1, 0)
    exp.creation_observed(K)
    assert exp.satisfied(K)
    exp.creation_observed(K)
    assert exp.pending(K) == (0, 0)


def test_timeout_makes_expectations_satisfied() -> None:
    """A lost event delays trust in the cache only until the timeout."""
    clock = FakeClock()
    exp: Expectations[ObjectKey] = Expectations(timeout=30, clock=clock)
    exp.expect_creations(K, 3)
    clock.advance(29)
    assert not exp.satisfied(K)
    clock.advance(1)
    assert exp.satisfied(K)


def test_raise_lower_and_forget() -> None:
    """raise_expectations adds, lower gives back failed writes, forget drops the record."""
    exp: Expectations[ObjectKey] = Expectations(clock=FakeClock())
    exp.raise_expectations(K, creations=1)
    exp.raise_expectations(K, creations=2, deletions=1)
    assert exp.pending(K) == (3, 1)
    exp.lower(K, creations=3)
    exp.expect_deletions(K, 1)
    assert exp.pending(K) == (0, 1)
    exp.forget(K)
    assert exp.satisfied(K)
    assert exp.pending(K) == (0, 0)


def test_uid_tracked_deletions_count_only_their_uids() -> None:
    """With UID tracking, only deletions of the expected uids are counted, each once."""
    exp: Expectations[ObjectKey] = Expectations(clock=FakeClock())
    exp.expect_deletion_uids(K, ["u1", "u2"])
    assert exp.deleting_uids(K) == {"u1", "u2"}
    exp.deletion_observed(K, "other")
    exp.deletion_observed(K, "u1")
    exp.deletion_observed(K, "u1")
    assert exp.pending(K) == (0, 1)
    assert exp.deleting_uids(K) == {"u2"}
    exp.deletion_observed(K, "u2")
    assert exp.satisfied(K)
    assert exp.deleting_uids(ObjectKey("x", "y")) == frozenset()


def test_observer_lowers_expectations_from_child_events() -> None:
    """The informer-side observer counts child adds and deletes against their owner's expectations."""
    from grove_runtime.expectations import ExpectationsObserver
    from grove_runtime.handlers import enqueue_owner

    exp: Expectations[ObjectKey] = Expectations(clock=FakeClock())
    observer = ExpectationsObserver(exp, enqueue_owner("grove.io", "PodClique").keys)
    ref = {"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "name": "pcs", "controller": True}

    def child(uid: str) -> dict[str, object]:
        return {"metadata": {"name": uid, "namespace": "ns", "uid": uid, "ownerReferences": [ref]}}

    exp.expect_creations(K, 2)
    observer.on_add(child("c1"))
    observer.on_update(child("c1"), child("c1"))
    assert exp.pending(K) == (1, 0)
    observer.on_add(child("c2"))
    assert exp.satisfied(K)
    exp.expect_deletion_uids(K, ["c1"])
    observer.on_delete(child("c2"))
    assert not exp.satisfied(K)
    observer.on_delete(child("c1"))
    assert exp.satisfied(K)


def test_outstanding_time_and_one_overdue_report_per_record() -> None:
    """How long unmet expectations have waited (None once met), and an overdue report once per record."""
    clock = FakeClock()
    exp: Expectations[ObjectKey] = Expectations(timeout=30, clock=clock)
    assert exp.outstanding_for(K) is None
    exp.expect_creations(K, 1)
    clock.advance(4)
    assert exp.outstanding_for(K) == 4
    assert exp.tell_overdue(K)
    assert not exp.tell_overdue(K)
    exp.expect_creations(K, 1)  # a new record is reported again
    assert exp.tell_overdue(K)
    exp.creation_observed(K)
    assert exp.outstanding_for(K) is None
    assert not exp.tell_overdue(K)
