"""The garbage collector: ownerReference cascades with background, foreground and orphan propagation.

It follows kube-controller-manager's GC closely enough for operators that rely on it: when an owner disappears
its dependents are deleted (transitively, because each deletion is itself an owner disappearing); an object whose
owners never existed or are all gone ("dangling") is collected too; an owner deleted with ``Foreground`` keeps its
``foregroundDeletion`` finalizer until its blocking dependents (``blockOwnerDeletion: true``) are gone; with
``Orphan`` the dependents lose their ownerReferences to it and the ``orphan`` finalizer is dropped.
"""

from __future__ import annotations

from typing import Any

from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.registry.core import Core, clone
from grove_sim.storage.store import Event, ObjectRef

__all__ = ["GarbageCollector"]

_DEP = "dependent"
_OWNER = "owner"


class GarbageCollector:
    """Reacts to store events; all work happens on its queue."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self.queue: WorkQueue[tuple[str, ObjectRef]] = WorkQueue("gc", self._process)
        core.store.add_listener(self._on_event)

    def _ref(self, event: Event) -> ObjectRef:
        meta = event.obj["metadata"]
        return (event.key, meta.get("namespace", ""), meta["name"])

    def _on_event(self, event: Event) -> None:
        store = self._core.store
        meta = event.obj.get("metadata") or {}
        owners = meta.get("ownerReferences") or ()
        if event.type == "DELETED":
            for dep in store.dependents(meta.get("uid", "")):
                self.queue.add((_DEP, dep))
            for owner in owners:
                ref = store.by_uid(owner.get("uid", ""))
                if ref is not None:
                    self.queue.add((_OWNER, ref))
            return
        if any(store.by_uid(o.get("uid", "")) is None for o in owners):
            self.queue.add((_DEP, self._ref(event)))
        if meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or ()
            if "foregroundDeletion" in finalizers or "orphan" in finalizers:
                self.queue.add((_OWNER, self._ref(event)))
            if owners:
                for owner in owners:
                    ref = store.by_uid(owner.get("uid", ""))
                    if ref is not None:
                        self.queue.add((_OWNER, ref))

    def _process(self, item: tuple[str, ObjectRef]) -> None:
        what, ref = item
        obj = self._core.store.get(*ref)
        if obj is None:
            return
        try:
            if what == _DEP:
                self._attempt_delete(ref, obj)
            else:
                self._process_owner(ref, obj)
        except errors.ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _attempt_delete(self, ref: ObjectRef, obj: dict[str, Any]) -> None:
        store = self._core.store
        info = self._core.registry.by_key(ref[0])
        if info is None or obj["metadata"].get("deletionTimestamp"):
            return
        owners = obj["metadata"].get("ownerReferences") or []
        solid, waiting, dangling = [], [], []
        for owner in owners:
            owner_ref = store.by_uid(owner.get("uid", ""))
            owner_obj = store.get(*owner_ref) if owner_ref is not None else None
            if owner_obj is None:
                dangling.append(owner)
            elif owner_obj["metadata"].get("deletionTimestamp") and "foregroundDeletion" in (
                owner_obj["metadata"].get("finalizers") or ()
            ):
                waiting.append(owner)
            else:
                solid.append(owner)
        if solid:
            if dangling:
                new = clone(obj)
                new["metadata"]["ownerReferences"] = [o for o in owners if o not in dangling]
                self._core.replace(info, obj, new)
            return
        policy = "Foreground" if waiting and not dangling else "Background"
        self._core.delete(info, ref[1], ref[2], {"propagationPolicy": policy})

    def _process_owner(self, ref: ObjectRef, obj: dict[str, Any]) -> None:
        store = self._core.store
        meta = obj["metadata"]
        info = self._core.registry.by_key(ref[0])
        if info is None or not meta.get("deletionTimestamp"):
            return
        uid = meta.get("uid", "")
        finalizers = meta.get("finalizers") or ()
        if "orphan" in finalizers:
            for dep_ref in store.dependents(uid):
                dep = store.get(*dep_ref)
                dep_info = self._core.registry.by_key(dep_ref[0])
                if dep is None or dep_info is None:
                    continue
                new = clone(dep)
                remaining = [o for o in new["metadata"].get("ownerReferences") or [] if o.get("uid") != uid]
                if remaining:
                    new["metadata"]["ownerReferences"] = remaining
                else:
                    new["metadata"].pop("ownerReferences", None)
                self._core.replace(dep_info, dep, new)
            self._core.remove_finalizer(info, obj, "orphan")
            return
        if "foregroundDeletion" in finalizers:
            blocking = False
            for dep_ref in store.dependents(uid):
                dep = store.get(*dep_ref)
                if dep is None:
                    continue
                if not dep["metadata"].get("deletionTimestamp"):
                    self.queue.add((_DEP, dep_ref))
                refs = [o for o in dep["metadata"].get("ownerReferences") or [] if o.get("uid") == uid]
                if any(o.get("blockOwnerDeletion") for o in refs):
                    blocking = True
            if not blocking:
                self._core.remove_finalizer(info, obj, "foregroundDeletion")
