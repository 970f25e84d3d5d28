"""Create/delete expectations: the bridge between a controller's writes and its stale informer cache.

Why: after a reconcile creates three pods, the next reconcile may run before the informer has seen them; counting
children from the cache would then create three more. Like client-go's ``ControllerExpectations`` (used by the
ReplicaSet and Job controllers), a controller records "I expect N creations and M deletions for key K", the
informer event handlers lower those counts as ADDED/DELETED events arrive, and the reconciler only trusts the
cache for K once :meth:`Expectations.satisfied` is true. Expectations older than ``timeout`` are considered
satisfied, so a lost event can delay a controller but never wedge it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from grove_runtime.clock import Clock, LoopClock

K = TypeVar("K")


@dataclass(slots=True)
class _Record:
    adds: int
    dels: int
    since: float
    deleting: set[str] = field(default_factory=set)
    overdue_told: bool = False


class Expectations(Generic[K]):
    """Outstanding expected creations and deletions per controller key."""

    def __init__(self, *, timeout: float = 300.0, clock: Clock | None = None) -> None:
        self._timeout = timeout
        self._clock = clock or LoopClock()
        self._records: dict[K, _Record] = {}

    def expect(self, key: K, *, creations: int = 0, deletions: int = 0) -> None:
        """Set (replace) the expectations for ``key``, restarting its timeout."""
        self._records[key] = _Record(max(0, creations), max(0, deletions), self._clock.monotonic())

    def expect_creations(self, key: K, count: int) -> None:
        """Expect ``count`` creations (and no deletions) for ``key``."""
        self.expect(key, creations=count)

    def expect_deletions(self, key: K, count: int) -> None:
        """Expect ``count`` deletions (and no creations) for ``key``."""
        self.expect(key, deletions=count)

    def raise_expectations(self, key: K, *, creations: int = 0, deletions: int = 0) -> None:
        """Add to the outstanding counts of ``key`` (creating the record if needed)."""
        rec = self._records.get(key)
        if rec is None:
            self.expect(key, creations=creations, deletions=deletions)
            return
        rec.adds += creations
        rec.dels += deletions

    def lower(self, key: K, *, creations: int = 0, deletions: int = 0) -> None:
        """Give back expectations for writes that failed and will never be observed."""
        rec = self._records.get(key)
        if rec is not None:
            rec.adds = max(0, rec.adds - creations)
            rec.dels = max(0, rec.dels - deletions)

    def expect_deletion_uids(self, key: K, uids: Iterable[str]) -> None:
        """Expect the deletion of these specific children (client-go's UID-tracking expectations)."""
        wanted = set(uids)
        self.expect(key, deletions=len(wanted))
        self._records[key].deleting = wanted

    def deleting_uids(self, key: K) -> frozenset[str]:
        """UIDs whose deletion was issued but not yet observed (skip them when counting live children)."""
        rec = self._records.get(key)
        return frozenset(rec.deleting) if rec is not None else frozenset()

    def creation_observed(self, key: K) -> None:
        """An informer ADDED event for a child of ``key`` arrived."""
        self.lower(key, creations=1)

    def deletion_observed(self, key: K, uid: str | None = None) -> None:
        """An informer DELETED event for a child of ``key`` arrived (with ``uid``, only a tracked one counts)."""
        rec = self._records.get(key)
        if rec is None:
            return
        if uid is not None and rec.deleting:
            if uid not in rec.deleting:
                return
            rec.deleting.discard(uid)
        self.lower(key, deletions=1)

    def satisfied(self, key: K) -> bool:
        """Whether the cache can be trusted for ``key``: no record, all observed, or the record timed out."""
        rec = self._records.get(key)
        if rec is None:
            return True
        if rec.adds <= 0 and rec.dels <= 0:
            return True
        return self._clock.monotonic() - rec.since >= self._timeout

    def outstanding_for(self, key: K) -> float | None:
        """Seconds the unmet expectations of ``key`` have been waiting (None when :meth:`satisfied`)."""
        if self.satisfied(key):
            return None
        return self._clock.monotonic() - self._records[key].since

    def tell_overdue(self, key: K) -> bool:
        """True the first time it is asked of the current unmet record of ``key`` (to report it once)."""
        rec = self._records.get(key)
        if rec is None or self.satisfied(key) or rec.overdue_told:
            return False
        rec.overdue_told = True
        return True

    def pending(self, key: K) -> tuple[int, int]:
        """Outstanding (creations, deletions) for ``key``."""
        rec = self._records.get(key)
        return (rec.adds, rec.dels) if rec is not None else (0, 0)

    def forget(self, key: K) -> None:
        """Drop the record of ``key`` (the owner was deleted)."""
        self._records.pop(key, None)


class ExpectationsObserver(Generic[K]):
    """An informer event handler that lowers expectations as children appear and disappear.

    ``owners`` maps a child object to the keys of its owners (e.g. ``enqueue_owner(...).keys``). Register it on
    the child informer *before* the controller's own handler, so the count is lowered before the owner is
    reconciled again.
    """

    def __init__(self, expectations: Expectations[K], owners: Callable[[dict[str, Any]], Iterable[K]]) -> None:
        self._expectations = expectations
        self._owners = owners

    def on_add(self, obj: dict[str, Any]) -> None:
        """A child was created: one expected creation observed per owner."""
        for key in self._owners(obj):
            self._expectations.creation_observed(key)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Updates do not change expectations."""

    def on_delete(self, obj: dict[str, Any]) -> None:
        """A child disappeared: one expected deletion (of its uid, when tracked) observed per owner."""
        uid = (obj.get("metadata") or {}).get("uid")
        for key in self._owners(obj):
            self._expectations.deletion_observed(key, str(uid) if uid else None)
