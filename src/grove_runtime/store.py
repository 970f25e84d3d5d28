"""An in-memory indexed store of plain object dicts: the informer's memory and every controller's read path.

Why: controllers ask "pods of this gang", "pods on this node", "children of this owner" thousands of times per
second; scanning 50,000 pods each time is not an option. The store keeps objects by :class:`ObjectKey`, by
namespace, and under any number of named index functions (object -> index values).

Objects are stored as the parsed JSON dicts the informer received and are handed out **without copying**:
callers must treat them as read-only (copy before mutating, e.g. ``copy.deepcopy`` or build a patch instead).
An index function that raises on an odd object simply indexes nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from grove_runtime.keys import ObjectKey

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]
_Objs = list[Obj]
_Keys = list[ObjectKey]
_Strs = list[str]


def index_by_label(label: str) -> IndexFunc:
    """Index objects by the value of one label (objects without it are not indexed)."""

    def values(obj: Obj) -> Iterable[str]:
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(label)
        return (str(value),) if value is not None else ()

    return values


def index_by_owner_uid(*, only_controller: bool = False) -> IndexFunc:
    """Index objects by the uids of their ownerReferences (optionally only the controller reference)."""

    def values(obj: Obj) -> Iterable[str]:
        refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
        return tuple(
            str(ref["uid"]) for ref in refs if ref.get("uid") and (not only_controller or ref.get("controller"))
        )

    return values


def index_by_field(path: str) -> IndexFunc:
    """Index objects by a dotted field path such as ``spec.nodeName`` (missing or empty values are skipped)."""
    parts = tuple(path.split("."))

    def values(obj: Obj) -> Iterable[str]:
        cur: Any = obj
        for part in parts:
            if not isinstance(cur, Mapping):
                return ()
            cur = cur.get(part)
        return (str(cur),) if cur not in (None, "") else ()

    return values


class Store:
    """Objects by key plus secondary indexes; every mutation keeps all indexes consistent."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[ObjectKey, Obj] = {}
        # One key instance per stored object, shared by every index: dict and set lookups then match by identity
        # instead of calling ObjectKey.__eq__ (by_index over 1,000 pods was a visible cost in the operator).
        self._keys: dict[ObjectKey, ObjectKey] = {}
        self._by_namespace: dict[str, set[ObjectKey]] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[ObjectKey]]] = {}
        self._values: dict[str, dict[ObjectKey, tuple[str, ...]]] = {}
        for name, fn in (indexers or {}).items():
            self.add_indexer(name, fn)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[Obj]:
        return iter(list(self._items.values()))

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Register an index (idempotent by name) and build it over the current contents."""
        if name in self._indexers:
            return
        self._indexers[name] = fn
        self._indices[name] = {}
        self._values[name] = {}
        for key, obj in self._items.items():
            self._index_one(name, key, obj)

    def has_indexer(self, name: str) -> bool:
        """Whether an index of that name exists."""
        return name in self._indexers

    def get(self, key: ObjectKey) -> Obj | None:
        """The stored object, or ``None``."""
        return self._items.get(key)

    def snapshot(self) -> dict[ObjectKey, Obj]:
        """A shallow copy of the key -> object map (objects are shared)."""
        return dict(self._items)

    def keys(self) -> _Keys:
        """All keys (a snapshot list)."""
        return list(self._items)

    def list(self, namespace: str | None = None) -> _Objs:
        """All objects, or those of one namespace."""
        if namespace is None:
            return list(self._items.values())
        return [self._items[k] for k in self._by_namespace.get(namespace, ())]

    def by_index(self, name: str, value: str) -> _Objs:
        """Objects whose index function returned ``value``; raises ``KeyError`` for an unknown index."""
        keys = self._indices[name].get(value, ())
        return [self._items[k] for k in keys]

    def index_keys(self, name: str, value: str) -> _Keys:
        """Keys whose index function returned ``value``."""
        return list(self._indices[name].get(value, ()))

    def index_values(self, name: str) -> _Strs:
        """Every value currently present in one index."""
        return [v for v, keys in self._indices[name].items() if keys]

    def upsert(self, obj: Obj) -> Obj | None:
        """Insert or replace ``obj`` (keyed by its metadata); returns the previous object."""
        key = ObjectKey.of(obj)
        key = self._keys.setdefault(key, key)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key)
        self._items[key] = obj
        self._by_namespace.setdefault(key.namespace, set()).add(key)
        for name in self._indexers:
            self._index_one(name, key, obj)
        return old

    def delete(self, key: ObjectKey) -> Obj | None:
        """Remove and return the object at ``key``, if any."""
        old = self._items.pop(key, None)
        if old is None:
            return None
        key = self._keys.pop(key, key)
        self._unindex(key)
        ns = self._by_namespace.get(key.namespace)
        if ns is not None:
            ns.discard(key)
            if not ns:
                del self._by_namespace[key.namespace]
        return old

    def replace(self, objs: Iterable[Obj]) -> _Objs:
        """Replace the whole contents with ``objs``; returns the objects that disappeared."""
        new_keys: set[ObjectKey] = set()
        for obj in objs:
            new_keys.add(ObjectKey.of(obj))
            self.upsert(obj)
        gone = [k for k in self._items if k not in new_keys]
        return [o for o in (self.delete(k) for k in gone) if o is not None]

    def _index_one(self, name: str, key: ObjectKey, obj: Obj) -> None:
        try:
            values = tuple(self._indexers[name](obj))
        except Exception:
            values = ()
        if not values:
            return
        self._values[name][key] = values
        index = self._indices[name]
        for value in values:
            index.setdefault(value, set()).add(key)

    def _unindex(self, key: ObjectKey) -> None:
        for name, per_key in self._values.items():
            values = per_key.pop(key, ())
            index = self._indices[name]
            for value in values:
                bucket = index.get(value)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del index[value]
