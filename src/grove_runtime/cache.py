"""The shared cache: one informer per (resource type, namespace, selectors) per process, plus a reader over them.

Why: several controllers watch pods; they must share one watch and one store. Controllers ask the cache for an
informer (created on first use), add indexes, and read through :meth:`Cache.get`, :meth:`Cache.list` and
:meth:`Cache.by_index`. :meth:`Cache.run` runs every informer (including ones added while running) until
cancelled; :meth:`Cache.wait_synced` blocks until each has loaded its first list.
Reads are stale by design (never read-your-writes); use expectations to bridge the gap.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from grove_runtime.client import Client
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.informer import Informer
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import ResourceType
from grove_runtime.store import IndexFunc

Obj = dict[str, Any]
_InformerKey = tuple[ResourceType, str | None, str | None, str | None]
_Objs = list[Obj]
_Informers = list[Informer]


def _matches(obj: Obj, labels: Mapping[str, str]) -> bool:
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


class Cache:
    """Multi-kind informers and a reader over their stores."""

    def __init__(self, client: Client, *, clock: Clock | None = None, **informer_options: Any) -> None:
        self.client = client
        self._clock = clock or LoopClock()
        self._options = informer_options
        self._informers: dict[_InformerKey, Informer] = {}
        self._by_type: dict[ResourceType, Informer] = {}
        self._tasks: dict[_InformerKey, asyncio.Task[None]] = {}
        self._running = False

    def informer(
        self,
        rt: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Callable[[Obj], Obj] | None = None,
        optional: bool = False,
    ) -> Informer:
        """The shared informer for these parameters (created, and started if the cache runs, on first use).

        ``transform`` (see :class:`Informer`) applies from creation on; a later call asking for the same informer
        with a different one is an error, since the objects it has stored were shaped by the first. ``optional``:
        the kind's CRD may be missing (a 404 is an empty list, retried; see :class:`Informer`).
        """
        key: _InformerKey = (rt, namespace, label_selector, field_selector)
        inf = self._informers.get(key)
        if inf is None:
            inf = Informer(
                self.client,
                rt,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                clock=self._clock,
                transform=transform,
                optional=optional,
                **self._options,
            )
            self._informers[key] = inf
            self._by_type.setdefault(rt, inf)
            if self._running:
                self._start(key, inf)
        elif transform is not None and inf.transform is not transform:
            raise ValueError(f"informer for {rt} already exists with another transform")
        return inf

    def informers(self) -> _Informers:
        """Every informer created so far."""
        return list(self._informers.values())

    def _reader(self, rt: ResourceType) -> Informer:
        inf = self._by_type.get(rt)
        if inf is None:
            raise KeyError(f"no informer for {rt}; call cache.informer({rt.kind}) first")
        return inf

    def add_index(self, rt: ResourceType, name: str, fn: IndexFunc) -> None:
        """Add an index to the (primary) informer of ``rt``, creating that informer if needed."""
        if rt not in self._by_type:
            self.informer(rt)
        self._reader(rt).add_indexer(name, fn)

    def get(self, rt: ResourceType, key: ObjectKey) -> Obj | None:
        """Cached object (shared, read-only) or ``None``."""
        return self._reader(rt).store.get(key)

    def list(self, rt: ResourceType, namespace: str | None = None, *, labels: Mapping[str, str] | None = None) -> _Objs:
        """Cached objects, optionally of one namespace and matching equality label selectors."""
        objs = self._reader(rt).store.list(namespace)
        return [o for o in objs if _matches(o, labels)] if labels else objs

    def by_index(self, rt: ResourceType, index: str, value: str) -> _Objs:
        """Cached objects under one index value."""
        return self._reader(rt).store.by_index(index, value)

    @property
    def synced(self) -> bool:
        """Whether every informer has loaded its first list."""
        return all(i.has_synced for i in self._informers.values())

    async def wait_synced(self) -> None:
        """Wait until every informer created so far has synced."""
        await asyncio.gather(*(i.wait_synced() for i in list(self._informers.values())))

    def _start(self, key: _InformerKey, inf: Informer) -> None:
        self._tasks[key] = asyncio.get_running_loop().create_task(inf.run(), name=f"informer-{inf.resource}")

    async def run(self) -> None:
        """Run every informer until cancelled (informers created later start immediately)."""
        self._running = True
        try:
            for key, inf in self._informers.items():
                self._start(key, inf)
            await asyncio.Event().wait()
        finally:
            self._running = False
            tasks = list(self._tasks.values())
            self._tasks.clear()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
