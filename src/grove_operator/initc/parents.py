"""The parents `grove-initc` waits for, and the count of their Ready pods as pod events arrive.

Pure: the command line's `--podcliques=<name>:<minAvailable>` values become a `{parent: minimum}` map, and
`ParentTracker` folds pod add/update/delete events (an informer's handler) into "which parents still lack Ready
pods". A pod counts for the parent named by its `grove.io/podclique` label, never by name prefix: a sibling clique
`…-ab` must not count for `…-a` (upstream's prefix match does).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from grove_api import labels as glabels

__all__ = ["ParentTracker", "Waiting", "is_ready", "parse_parents"]

Obj = dict[str, Any]
Waiting = dict[str, tuple[int, int]]
"""Parent PodClique → (Ready pods seen, pods needed), for the parents still short of their minimum."""

_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?\Z")
_MAX_NAME = 253


def parse_parents(values: Iterable[str]) -> dict[str, int]:
    """`{parent: minimum}` from `--podcliques` values (each may hold several comma-separated `name:min` entries,
    as upstream's string-slice flag does); raises ValueError naming the offending entry."""
    parents: dict[str, int] = {}
    for value in values:
        for entry in value.split(","):
            entry = entry.strip()
            if not entry:
                continue
            name, sep, count = entry.rpartition(":")
            if not sep or not name:
                raise ValueError(f"--podcliques {entry!r}: expected <podclique>:<minAvailable>")
            if len(name) > _MAX_NAME or not _NAME.match(name):
                raise ValueError(f"--podcliques {entry!r}: {name!r} is not a valid PodClique name")
            if not count.isdigit() or int(count) < 1:
                raise ValueError(f"--podcliques {entry!r}: minAvailable must be a positive integer, got {count!r}")
            if parents.get(name, int(count)) != int(count):
                raise ValueError(f"--podcliques: {name!r} is given twice with different minimums")
            parents[name] = int(count)
    if not parents:
        raise ValueError("--podcliques: no parent PodClique given")
    return parents


def is_ready(pod: Mapping[str, Any]) -> bool:
    """Ready=True and not being deleted (a terminating pod is about to stop serving)."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, Mapping))


class ParentTracker:
    """Ready pods per parent PodClique, fed by an informer; `done` is set once every parent has its minimum.

    `on_change` is called with the parents still waited for whenever that set (not merely a count) changes, and
    once for the first event, so a log line says what the pod waits for without a line per pod event.
    """

    def __init__(self, parents: Mapping[str, int], on_change: Callable[[Waiting], None] | None = None) -> None:
        self.parents = dict(parents)
        self._ready: dict[str, set[str]] = {name: set() for name in self.parents}
        self._parent_of: dict[str, str] = {}
        self._on_change = on_change
        self._reported: frozenset[str] | None = None
        self.done = asyncio.Event()

    def waiting(self) -> Waiting:
        """The parents still short of their minimum, with (ready, needed)."""
        return {
            name: (len(self._ready[name]), needed)
            for name, needed in self.parents.items()
            if len(self._ready[name]) < needed
        }

    def _observe(self, pod: Obj, present: bool) -> None:
        meta = pod.get("metadata") or {}
        key = str(meta.get("name") or "")
        previous = self._parent_of.pop(key, None)
        if previous is not None:
            self._ready[previous].discard(key)
        parent = (meta.get("labels") or {}).get(glabels.LABEL_PODCLIQUE)
        if present and parent in self._ready and is_ready(pod):
            self._ready[parent].add(key)
            self._parent_of[key] = parent
        self.refresh()

    def refresh(self) -> None:
        """Report a changed waiting set and set `done` when nothing is left to wait for."""
        waiting = self.waiting()
        names = frozenset(waiting)
        if names != self._reported:
            self._reported = names
            if self._on_change is not None:
                self._on_change(waiting)
        if not waiting:
            self.done.set()

    def on_add(self, obj: Obj) -> None:
        """A pod of the gang appeared."""
        self._observe(obj, present=True)

    def on_update(self, old: Obj, new: Obj) -> None:
        """A pod of the gang changed."""
        self._observe(new, present=True)

    def on_delete(self, obj: Obj) -> None:
        """A pod of the gang disappeared."""
        self._observe(obj, present=False)
