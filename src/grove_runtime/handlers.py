"""Event handlers: turn an informer event on some object into the keys of the objects to reconcile.

Mirrors controller-runtime's ``handler`` package: :func:`enqueue_self` (the ``For`` kind), :func:`enqueue_owner`
(``Owns``: the controller ownerReference of a given group/kind) and :func:`enqueue_mapped` (``Watches`` with a
map function, e.g. pod -> PodClique by label). For an update, keys from the old and the new object are both
enqueued, so a child that changes owner or label reaches both reconcilers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from grove_runtime.keys import ObjectKey

Obj = dict[str, Any]


class EventHandler(Protocol):
    """Maps one object to the keys it affects."""

    def keys(self, obj: Obj) -> Iterable[ObjectKey]:
        """Keys to enqueue for an event on ``obj``."""
        ...


def keys_for_update(handler: EventHandler, old: Obj, new: Obj) -> set[ObjectKey]:
    """Keys for an update event: the union over the old and the new object."""
    return set(handler.keys(old)) | set(handler.keys(new))


@dataclass(frozen=True, slots=True)
class _EnqueueSelf:
    def keys(self, obj: Obj) -> Iterable[ObjectKey]:
        key = ObjectKey.of(obj)
        return (key,) if key.name else ()


@dataclass(frozen=True, slots=True)
class _EnqueueOwner:
    group: str
    kind: str
    only_controller: bool
    cluster_scoped_owner: bool

    def keys(self, obj: Obj) -> Iterable[ObjectKey]:
        meta = obj.get("metadata") or {}
        namespace = "" if self.cluster_scoped_owner else str(meta.get("namespace") or "")
        out: list[ObjectKey] = []
        for ref in meta.get("ownerReferences") or ():
            if not isinstance(ref, dict) or ref.get("kind") != self.kind:
                continue
            if self.only_controller and not ref.get("controller"):
                continue
            api_version = str(ref.get("apiVersion") or "")
            group = api_version.rpartition("/")[0]
            if group == self.group and ref.get("name"):
                out.append(ObjectKey(namespace, str(ref["name"])))
        return out


@dataclass(frozen=True, slots=True)
class _EnqueueMapped:
    fn: Callable[[Obj], Iterable[ObjectKey]]

    def keys(self, obj: Obj) -> Iterable[ObjectKey]:
        return tuple(self.fn(obj))


def enqueue_self() -> EventHandler:
    """Enqueue the object's own key."""
    return _EnqueueSelf()


def enqueue_owner(
    group: str, kind: str, *, only_controller: bool = True, cluster_scoped_owner: bool = False
) -> EventHandler:
    """Enqueue the owner named by the (controller) ownerReference of ``group``/``kind``; same namespace as the child."""
    return _EnqueueOwner(group, kind, only_controller, cluster_scoped_owner)


def enqueue_mapped(fn: Callable[[Obj], Iterable[ObjectKey]]) -> EventHandler:
    """Enqueue whatever keys ``fn`` maps the object to."""
    return _EnqueueMapped(fn)
