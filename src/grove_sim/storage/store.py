"""The versioned object store: one global resourceVersion, O(1) lookups, bounded per-collection event history.

It plays etcd's role. Every write goes through ``put`` or ``remove``, which stamp the next global resourceVersion,
append one ``Event`` to the collection's history (the replay window for "watch from resourceVersion N") and hand
the event to the collection's watchers and to in-process listeners (the garbage collector, namespace controller,
kubelet and token controller).

Ownership rule: a stored object, and every dict and list reachable from it, is immutable. Writers build a new
top-level dict with new containers along every path they change and ``put`` it; untouched subtrees may be shared
with the previous version (the patch functions' ``copy_target=False``). So readers, watch events, history and
older versions share structure without copies, and one write is JSON-encoded once: the event's encoding feeds
every watcher's line and the HTTP response (``encoded``). Only the newest ``ENCODED_EVENTS`` events of a
collection keep their encoding; an older one re-encodes if a watch replays it.

The store is single-threaded by design: every caller runs on the server's event loop, so a write and its
notifications are atomic with respect to each other.
"""

from __future__ import annotations

import bisect
import builtins
import itertools
import json
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import orjson

__all__ = [
    "DEFAULT_HISTORY",
    "DEFAULT_HISTORY_AGE",
    "ENCODED_EVENTS",
    "Event",
    "ObjectRef",
    "ResourceKey",
    "Store",
    "TooOld",
    "WatchSink",
    "dumps",
]

ResourceKey = tuple[str, str]
"""(group, plural): identifies a stored collection independent of the served version."""

DEFAULT_HISTORY = 20_000
"""Events kept per collection for watch replay at most; older resourceVersions get 410 Expired."""

DEFAULT_HISTORY_AGE = 75.0
"""Seconds an event stays in the replay window at most, as kube-apiserver's watch cache keeps about 75 s of events
(its ``eventFreshDuration``; older resourceVersions are answered 410 and clients relist). Bounded by time as well
as by count, the window's memory follows the recent write rate, not how many objects a long run ever wrote."""

ENCODED_EVENTS = 256
"""Newest events per collection that keep their JSON encoding (watchers that lag hold their own line bytes)."""

ObjectRef = tuple[ResourceKey, str, str]
"""(collection, namespace, name) of a stored object; namespace is "" for cluster-scoped kinds."""


def dumps(obj: Any) -> bytes:
    """Compact JSON, as the real server sends it (orjson: every response and watch line is encoded here; the
    standard library takes what orjson refuses, non-string keys or integers beyond 64 bits)."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def loads(raw: bytes | str) -> Any:
    """Parsed JSON (orjson; the standard library for what orjson refuses, such as NaN, and for the error)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


class Event:
    """One committed change: the new state (or last state for DELETED) and the previous state."""

    __slots__ = ("_json", "_lines", "at", "key", "obj", "old", "rv", "type")

    def __init__(self, type_: str, key: ResourceKey, obj: dict[str, Any], old: dict[str, Any] | None, rv: int):
        self.type = type_
        self.key = key
        self.obj = obj
        self.old = old
        self.rv = rv
        self.at = 0.0
        """When it was committed (the store's clock), for the replay window's age bound."""
        self._json: bytes | None = None
        self._lines: dict[str, bytes] | None = None

    def object_json(self) -> bytes:
        """The object's JSON, encoded once and shared by the response and every watcher that sends it."""
        if self._json is None:
            self._json = dumps(self.obj)
        return self._json

    def line(self, type_: str | None = None) -> bytes:
        """One watch-stream line ``{"type":…,"object":…}\\n``, built once per type and shared by all watchers."""
        type_ = type_ or self.type
        lines = self._lines
        if lines is None:
            lines = self._lines = {}
        line = lines.get(type_)
        if line is None:
            line = lines[type_] = b'{"type":"' + type_.encode() + b'","object":' + self.object_json() + b"}\n"
        return line

    def drop_encoding(self) -> None:
        """Forget the cached JSON and lines (memory); they are rebuilt if the event is ever sent again."""
        self._json = None
        self._lines = None


class TooOld(Exception):
    """A watch asked to replay from a resourceVersion older than the history window."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class WatchSink(Protocol):
    """Anything that wants committed events of one collection (an HTTP watch stream)."""

    def offer(self, event: Event) -> None:
        """Receive one event, synchronously; must not write to the store."""


Listener = Callable[[Event], None]


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


class Store:
    """All objects of all collections, their history and their watchers."""

    def __init__(
        self,
        history: int = DEFAULT_HISTORY,
        history_age: float = DEFAULT_HISTORY_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rv = 1
        self._history_limit = max(1, history)
        self._history_age = history_age
        self._clock = clock
        self._by_ns: dict[ResourceKey, dict[str, dict[str, dict[str, Any]]]] = {}
        self._history: dict[ResourceKey, deque[Event]] = {}
        self._compacted: dict[ResourceKey, int] = {}
        self._watchers: dict[ResourceKey, set[WatchSink]] = {}
        self._listeners: list[Listener] = []
        self._uids: dict[str, ObjectRef] = {}
        self._dependents: dict[str, set[ObjectRef]] = {}
        self._last: Event | None = None
        self._order: dict[ResourceKey, builtins.list[tuple[str, str]]] = {}
        """Per collection, every (namespace, name) in order, built by the first ordered read after an object came or
        went: paging a 500,000-object list must not sort it again for every page."""

    # ---------------------------------------------------------------------------------------------------- reads

    def get(self, key: ResourceKey, namespace: str, name: str) -> dict[str, Any] | None:
        """The stored object or None (O(1))."""
        return self._by_ns.get(key, {}).get(namespace, {}).get(name)

    def list(self, key: ResourceKey, namespace: str | None = None) -> list[dict[str, Any]]:
        """Objects of a collection sorted by (namespace, name); ``namespace=None`` means all namespaces."""
        spaces = self._by_ns.get(key, {})
        if namespace is not None:
            bucket = spaces.get(namespace, {})
            return [bucket[n] for n in sorted(bucket)]
        return [spaces[ns][n] for ns, n in self._ordered(key)]

    def after(
        self, key: ResourceKey, namespace: str | None, start: tuple[str, str] | None
    ) -> tuple[Iterator[dict[str, Any]], int]:
        """Objects of a collection (in one namespace or all) in (namespace, name) order, from just after `start`,
        and how many there are: a page costs a binary search and the objects it returns, not a sort of the
        collection. Iterate it before the next write."""
        keys = self._ordered(key)
        lo, hi = 0, len(keys)
        if namespace is not None:
            lo, hi = bisect.bisect_left(keys, (namespace,)), bisect.bisect_left(keys, (namespace + "\x00",))
        if start is not None:
            lo = max(lo, bisect.bisect_right(keys, start))
        spaces = self._by_ns.get(key, {})
        return (spaces[ns][name] for ns, name in itertools.islice(keys, lo, hi)), max(hi - lo, 0)

    def _ordered(self, key: ResourceKey) -> builtins.list[tuple[str, str]]:
        keys = self._order.get(key)
        if keys is None:
            spaces = self._by_ns.get(key, {})
            keys = sorted((ns, name) for ns, bucket in spaces.items() for name in bucket)
            self._order[key] = keys
        return keys

    def count(self, key: ResourceKey, namespace: str | None = None) -> int:
        """Number of stored objects (in one namespace or in all)."""
        spaces = self._by_ns.get(key, {})
        if namespace is not None:
            return len(spaces.get(namespace, {}))
        return sum(len(b) for b in spaces.values())

    def collections(self) -> builtins.list[ResourceKey]:
        """Collections that hold or held objects."""
        return list(self._by_ns)

    def encoded(self, obj: dict[str, Any]) -> bytes:
        """JSON of ``obj``, reusing the last commit's encoding when ``obj`` is the object that commit stored.

        Handlers answer a write with the object they just stored; the identity check makes the reuse exact (same
        object, hence same representation), and anything else (dry runs, no-op updates, reads) is encoded afresh.
        """
        last = self._last
        if last is not None and last.obj is obj:
            return last.object_json()
        return dumps(obj)

    def by_uid(self, uid: str) -> ObjectRef | None:
        """Where the object with this uid lives, or None if no such object exists."""
        return self._uids.get(uid)

    def dependents(self, owner_uid: str) -> builtins.list[ObjectRef]:
        """Objects whose ownerReferences name this uid."""
        return sorted(self._dependents.get(owner_uid, ()))

    # --------------------------------------------------------------------------------------------------- writes

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` synchronously after every commit (it must only schedule work, never write)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling ``listener`` (a no-op if it is not registered)."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def put(self, key: ResourceKey, obj: dict[str, Any], old: dict[str, Any] | None) -> Event:
        """Store ``obj`` (taking ownership), stamping the next resourceVersion; emits ADDED or MODIFIED."""
        self.rv += 1
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.rv)
        namespace, name = meta.get("namespace", ""), meta["name"]
        bucket = self._by_ns.setdefault(key, {}).setdefault(namespace, {})
        if name not in bucket:
            self._order.pop(key, None)
        bucket[name] = obj
        ref: ObjectRef = (key, namespace, name)
        if old is not None:
            self._unindex(ref, old)
        self._index(ref, obj)
        return self._commit(Event("ADDED" if old is None else "MODIFIED", key, obj, old, self.rv))

    def remove(self, key: ResourceKey, obj: dict[str, Any]) -> Event:
        """Delete the stored object; the DELETED event carries its last state with a new resourceVersion."""
        meta = _meta(obj)
        namespace, name = meta.get("namespace", ""), meta["name"]
        spaces = self._by_ns.get(key, {})
        bucket = spaces.get(namespace, {})
        old = bucket.pop(name, None)
        if not bucket:
            spaces.pop(namespace, None)
        if old is not None:
            self._order.pop(key, None)
            self._unindex((key, namespace, name), old)
        self.rv += 1
        last = {**obj, "metadata": {**meta, "resourceVersion": str(self.rv)}}
        return self._commit(Event("DELETED", key, last, old, self.rv))

    def _index(self, ref: ObjectRef, obj: dict[str, Any]) -> None:
        meta = _meta(obj)
        uid = meta.get("uid")
        if uid:
            self._uids[uid] = ref
        for owner in meta.get("ownerReferences") or ():
            owner_uid = owner.get("uid") if isinstance(owner, dict) else None
            if owner_uid:
                self._dependents.setdefault(owner_uid, set()).add(ref)

    def _unindex(self, ref: ObjectRef, obj: dict[str, Any]) -> None:
        meta = _meta(obj)
        uid = meta.get("uid")
        if uid and self._uids.get(uid) == ref:
            del self._uids[uid]
        for owner in meta.get("ownerReferences") or ():
            owner_uid = owner.get("uid") if isinstance(owner, dict) else None
            deps = self._dependents.get(owner_uid or "")
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self._dependents[owner_uid or ""]

    def _commit(self, event: Event) -> Event:
        history = self._history.get(event.key)
        if history is None:
            history = self._history[event.key] = deque()
        event.at = now = self._clock()
        while history and (len(history) >= self._history_limit or history[0].at < now - self._history_age):
            self._compacted[event.key] = history.popleft().rv
        history.append(event)
        if len(history) > ENCODED_EVENTS:
            history[-ENCODED_EVENTS - 1].drop_encoding()
        self._last = event
        for sink in list(self._watchers.get(event.key, ())):
            sink.offer(event)
        for listener in self._listeners:
            listener(event)
        return event

    # ---------------------------------------------------------------------------------------------------- watch

    def subscribe(self, key: ResourceKey, sink: WatchSink, since: int | None) -> Iterable[Event]:
        """Register a watcher; returns the history events after ``since`` to replay first (none when None).

        Raises ``TooOld`` when events after ``since`` have already been dropped from the window.
        """
        replay: list[Event] = []
        if since is not None:
            compacted = self._compacted.get(key, 0)
            if since < compacted:
                raise TooOld(since, compacted + 1)
            replay = [e for e in self._history.get(key, ()) if e.rv > since]
        self._watchers.setdefault(key, set()).add(sink)
        return replay

    def unsubscribe(self, key: ResourceKey, sink: WatchSink) -> None:
        """Stop delivering events to ``sink``."""
        self._watchers.get(key, set()).discard(sink)

    def history_size(self) -> int:
        """Events held for watch replay, all collections together (for tests: bounded by count and age)."""
        return sum(len(h) for h in self._history.values())

    def watcher_count(self) -> int:
        """Open watch streams (for metrics and tests)."""
        return sum(len(s) for s in self._watchers.values())
