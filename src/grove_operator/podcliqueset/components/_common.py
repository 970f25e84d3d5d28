"""Cache lookups shared by the PodCliqueSet components: the children of one PCS, by kind and component label.

Why: every component must answer "which of my children exist?" from the informer cache in the same way (the
`app.kubernetes.io/part-of` index, scoped to the namespace, then the component label and our owner uid), so
a user object that merely shares the labels is never adopted or deleted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from grove_api import PodCliqueSet
from grove_api import labels as glabels
from grove_operator.components import INDEX_PART_OF, SyncContext, controller_owner
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import ResourceType

__all__ = ["PcsContext", "bounded", "cached", "children"]

Obj = dict[str, Any]
T = TypeVar("T")
PcsContext = SyncContext[PodCliqueSet]


def children(ctx: PcsContext, rt: ResourceType, component: str | None = None) -> list[Obj]:
    """Cached objects of `rt` that are part of this PCS, controlled by it and (optionally) of `component`."""
    uid = ctx.owner.metadata.uid
    out: list[Obj] = []
    for obj in ctx.cache.by_index(rt, INDEX_PART_OF, f"{ctx.namespace}/{ctx.key.name}"):
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if component is not None and labels.get(glabels.LABEL_COMPONENT) != component:
            continue
        owner = controller_owner(obj)
        if owner is not None and owner.get("uid") == uid:
            out.append(obj)
    return out


def cached(ctx: PcsContext, rt: ResourceType, name: str) -> Obj | None:
    """The cached object `name` in the PCS namespace."""
    return ctx.cache.get(rt, ObjectKey(ctx.namespace, name))


async def bounded(calls: Iterable[Callable[[], Awaitable[T]]], limit: int = 32) -> list[T]:
    """Run `calls` concurrently, at most `limit` at a time (a 500-replica PCS means 1,000 writes).

    Calls are factories, so nothing is created that a cancellation could leave un-awaited.
    """
    semaphore = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[T]]) -> T:
        async with semaphore:
            return await call()

    return list(await asyncio.gather(*(one(c) for c in calls)))
