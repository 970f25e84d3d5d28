"""A list-and-watch informer (client-go's reflector + shared informer) that keeps a :class:`Store` current.

Lifecycle of :meth:`Informer.run` (runs until cancelled, never raises for API trouble):

1. LIST (all pages) and *replace* the store, diffing old against new: new keys dispatch ``on_add``, changed
   resourceVersions ``on_update``, vanished keys ``on_delete`` (deletes missed while not watching are synthesised
   from the last known state). The informer is *synced* after the first successful list.
2. WATCH from the list's resourceVersion with bookmarks and a randomised timeout; every event updates the store and
   the resourceVersion (bookmarks only advance it).
3. A clean end of stream re-watches from the last resourceVersion. 410 Gone re-lists at once. Any other error
   (connection loss, 5xx, malformed stream) backs off exponentially and re-lists.

An *optional* informer is for a kind whose CRD a cluster may not have (another scheduler's Queues or
Reservations): a 404 on its list counts as an empty, synced list (so the program starts and works without it),
and the list is retried every ``absent_retry`` seconds, so a CRD installed later is picked up without a restart.

Objects are the dicts parsed from the wire (after the optional ``transform``, client-go's ``SetTransform``, which
may drop fields the process never reads before they are stored) and are shared, not copied, with the store and
every handler: handlers must not mutate them. Odd events (no name, unknown type, non-dict object) are skipped;
a handler that raises is logged and does not stop the informer.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from grove_runtime import errors
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import ResourceType
from grove_runtime.store import IndexFunc, Store

if TYPE_CHECKING:
    from grove_runtime.client import Client

Obj = dict[str, Any]
log = structlog.get_logger("grove_runtime.informer")


class ResourceEventHandler(Protocol):
    """Receives store changes; must be quick and synchronous (typically: map to keys and enqueue)."""

    def on_add(self, obj: Obj) -> None:
        """An object appeared."""
        ...

    def on_update(self, old: Obj, new: Obj) -> None:
        """An object changed."""
        ...

    def on_delete(self, obj: Obj) -> None:
        """An object disappeared (last known state)."""
        ...


def _rv(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def _valid(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    meta = obj.get("metadata")
    return isinstance(meta, dict) and bool(meta.get("name"))


class Informer:
    """One list+watch loop for one resource type (optionally one namespace and selectors)."""

    def __init__(
        self,
        client: Client,
        rt: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        clock: Clock | None = None,
        watch_timeout: tuple[int, int] = (300, 600),
        backoff: tuple[float, float] = (0.2, 30.0),
        transform: Callable[[Obj], Obj] | None = None,
        optional: bool = False,
        absent_retry: float = 30.0,
    ) -> None:
        self.client = client
        self.optional = optional
        self.absent_retry = absent_retry
        self.absent = False
        """An optional informer whose resource the server does not serve (its last list was a 404)."""
        self.transform = transform
        self.resource = rt
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.store = Store(indexers)
        self._clock = clock or LoopClock()
        self._watch_timeout = watch_timeout
        self._backoff = backoff
        self._handlers: list[ResourceEventHandler] = []
        self._synced = asyncio.Event()
        self.resource_version = ""
        self.lists = 0
        self.watches = 0

    @property
    def has_synced(self) -> bool:
        """Whether the first list has been loaded into the store."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Wait until the first list has been loaded."""
        await self._synced.wait()

    def add_handler(self, handler: ResourceEventHandler) -> None:
        """Register a handler; if already synced, it first receives ``on_add`` for every stored object."""
        self._handlers.append(handler)
        if self.has_synced:
            for obj in self.store.list():
                self._call(handler.on_add, obj)

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index to the store (built over current contents)."""
        self.store.add_indexer(name, fn)

    async def run(self) -> None:
        """List and watch until cancelled; a restarted, already synced informer resumes watching from its last RV."""
        failures = 0
        need_list = not (self.has_synced and self.resource_version)
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch()
                failures = 0
            except errors.NotFound as exc:
                if not self.optional:
                    need_list = True
                    failures = await self._back_off(failures, exc)
                    continue
                self._not_served()
                need_list = True
                await self._clock.sleep(self.absent_retry)
            except errors.Gone as exc:
                if need_list:  # the list itself expired (e.g. a stale continue token): back off like any error
                    failures = await self._back_off(failures, exc)
                else:
                    log.info("watch expired, re-listing", resource=str(self.resource), rv=self.resource_version)
                    need_list = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                need_list = True
                failures = await self._back_off(failures, exc)

    def _not_served(self) -> None:
        """The resource is not served (its CRD is not installed, or was deleted): the store is empty and synced."""
        if not self.absent:
            log.info("resource not served; treated as empty", resource=str(self.resource), retry=self.absent_retry)
        self.absent = True
        self.resource_version = ""
        for obj in self.store.replace([]):
            self._dispatch_delete(obj)
        self._synced.set()

    async def _back_off(self, failures: int, exc: Exception) -> int:
        failures += 1
        delay = min(self._backoff[1], self._backoff[0] * 2 ** min(failures - 1, 16))
        log.warning("list/watch failed, backing off", resource=str(self.resource), error=repr(exc), delay=delay)
        await self._clock.sleep(delay * random.uniform(0.8, 1.2))
        return failures

    async def _list(self) -> None:
        transform = self.transform

        def admit(obj: Obj) -> Obj | None:  # page by page: a full cluster's pods are never all held unslimmed
            if not _valid(obj):
                return None
            return transform(obj) if transform is not None else obj

        result = await self.client.list(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            transform=admit,
        )
        self.lists += 1
        items: list[Obj] = result.get("items") or []
        previous = self.store.snapshot()
        gone = self.store.replace(items)
        self.resource_version = _rv(result)
        if self.absent:
            log.info("resource served now", resource=str(self.resource))
            self.absent = False
        for obj in items:
            old = previous.get(ObjectKey.of(obj))
            if old is None:
                self._dispatch_add(obj)
            elif _rv(old) != _rv(obj):
                self._dispatch_update(old, obj)
        for obj in gone:
            self._dispatch_delete(obj)
        self._synced.set()

    async def _watch(self) -> None:
        timeout = random.randint(*self._watch_timeout)
        self.watches += 1
        async with self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self.resource_version or None,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
        ) as events:
            async for event in events:
                self._apply(event)

    def _apply(self, event: Obj) -> None:
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            return
        rv = _rv(obj)
        if kind == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED") or not _valid(obj):
            log.debug("skipping odd watch event", resource=str(self.resource), type=kind)
            return
        if rv:
            self.resource_version = rv
        if self.transform is not None:
            obj = self.transform(obj)
        if kind == "DELETED":
            self.store.delete(ObjectKey.of(obj))
            self._dispatch_delete(obj)
            return
        previous = self.store.upsert(obj)
        if previous is None:
            self._dispatch_add(obj)
        else:
            self._dispatch_update(previous, obj)

    def _dispatch_add(self, obj: Obj) -> None:
        for handler in self._handlers:
            self._call(handler.on_add, obj)

    def _dispatch_update(self, old: Obj, new: Obj) -> None:
        for handler in self._handlers:
            try:
                handler.on_update(old, new)
            except Exception:
                log.exception("event handler failed", resource=str(self.resource))

    def _dispatch_delete(self, obj: Obj) -> None:
        for handler in self._handlers:
            self._call(handler.on_delete, obj)

    def _call(self, fn: Any, obj: Obj) -> None:
        try:
            fn(obj)
        except Exception:
            log.exception("event handler failed", resource=str(self.resource))


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    """Run ``informer`` in a task for the duration of the block (wait for sync first); cancels it on exit."""
    task = asyncio.get_running_loop().create_task(informer.run(), name=f"informer-{informer.resource}")
    try:
        await informer.wait_synced()
        yield informer
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
