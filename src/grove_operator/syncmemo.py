"""Remembering which cached children were last found in sync, so an unchanged child costs a lookup, not a rebuild.

Why: a PodCliqueSet reconcile re-derives all of its children (500 PodCliques and 500 PodGangs for the scale test)
and compares each with the cache, although between two reconciles only a few of them change. A child's verdict
("nothing to write") depends only on its cached object and on the inputs its desired state is built from. The
cached object is compared by identity (informer objects are replaced, never mutated); the inputs are summed up
by the caller as a hashable, comparable `fingerprint`. When both are unchanged since the child was last found in
sync, building and comparing it again would give the same answer, so it is skipped.

A `SyncMemo` holds one entry per child name. Children that were deleted (or replaced) leave entries that can never
hit again; `sweep` drops them, amortised: only once the memo has doubled since the last sweep, so it stays within
twice the number of live children (an operator's memory must not grow with every child it ever saw).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["SyncMemo"]

MIN_SWEEP = 1024
"""No sweep below this many entries (a sweep costs one cache lookup per entry)."""


class SyncMemo:
    """`(cached object, fingerprint, value)` of each child at the time it was last found in sync.

    `value` is whatever else the caller derived on the way and needs again on a hit (e.g. "all pods created").
    """

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[Any, Any, Any]] = {}
        self._sweep_at = MIN_SWEEP

    def recall(self, key: Hashable, obj: Any, fingerprint: Any) -> tuple[bool, Any]:
        """(hit, value): hit when `obj` (the very same object) was found in sync under an equal `fingerprint`."""
        entry = self._entries.get(key)
        if entry is not None and entry[0] is obj and entry[1] == fingerprint:
            return True, entry[2]
        return False, None

    def unchanged(self, key: Hashable, obj: Any, fingerprint: Any) -> bool:
        """Whether `obj` was found in sync under an equal `fingerprint` (`recall` without the value)."""
        return self.recall(key, obj, fingerprint)[0]

    def in_sync(self, key: Hashable, obj: Any, fingerprint: Any, value: Any = None) -> None:
        """Record that `obj` needs no write for `fingerprint`."""
        self._entries[key] = (obj, fingerprint, value)

    def forget(self, key: Hashable) -> None:
        """Drop the entry of `key` (a write is under way, or the child went away)."""
        self._entries.pop(key, None)

    def sweep(self, current: Callable[[Hashable], Any]) -> int:
        """Drop the entries whose object is no longer `current(key)` (the cached child: gone or replaced), once the
        memo has doubled since the last sweep; how many were dropped."""
        if len(self._entries) < self._sweep_at:
            return 0
        before = len(self._entries)
        self._entries = {k: e for k, e in self._entries.items() if current(k) is e[0]}
        self._sweep_at = max(MIN_SWEEP, 2 * len(self._entries))
        return before - len(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
