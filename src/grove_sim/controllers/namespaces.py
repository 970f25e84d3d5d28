"""Namespace lifecycle: seeded namespaces, and termination that empties a namespace before it disappears.

Deleting a namespace marks it ``Terminating`` (creates in it are then refused with 403 by the core). This
controller deletes every namespaced object in it (honouring finalizers and graceful pod deletion), re-checks as
those objects go, and once the namespace is empty removes the ``kubernetes`` finalizer through the ``finalize``
subresource, which deletes the namespace itself — the real namespace controller's sequence.
"""

from __future__ import annotations

from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.registry import subresources
from grove_sim.registry.core import Core
from grove_sim.storage.store import Event

__all__ = ["SEEDED_NAMESPACES", "NamespaceController"]

SEEDED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_NAMESPACES = ("", "namespaces")


class NamespaceController:
    """Finishes the deletion of terminating namespaces."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self.queue: WorkQueue[str] = WorkQueue("namespaces", self._process)
        core.store.add_listener(self._on_event)

    def seed(self) -> None:
        """Create the namespaces every cluster starts with."""
        info = self._core.registry.get("", "v1", "namespaces")
        assert info is not None
        for name in SEEDED_NAMESPACES:
            if self._core.store.get(_NAMESPACES, "", name) is None:
                self._core.create(info, "", {"metadata": {"name": name}})

    def _on_event(self, event: Event) -> None:
        meta = event.obj.get("metadata") or {}
        if event.key == _NAMESPACES:
            if event.type != "DELETED" and meta.get("deletionTimestamp"):
                self.queue.add(meta["name"])
            return
        namespace = meta.get("namespace")
        if event.type == "DELETED" and namespace:
            ns = self._core.store.get(_NAMESPACES, "", namespace)
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self.queue.add(namespace)

    def _process(self, name: str) -> None:
        core = self._core
        ns = core.store.get(_NAMESPACES, "", name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        remaining = 0
        for key in core.store.collections():
            info = core.registry.by_key(key)
            if info is None or not info.namespaced:
                continue
            for obj in core.store.list(key, name):
                remaining += 1
                if obj["metadata"].get("deletionTimestamp"):
                    continue
                try:
                    core.delete(info, name, obj["metadata"]["name"], {})
                except errors.ApiError as exc:
                    if exc.code != 404:
                        raise
        empty = remaining == 0 or not any(core.store.count(k, name) for k in core.store.collections())
        finalizers = list((ns.get("spec") or {}).get("finalizers") or [])
        if empty and "kubernetes" in finalizers:
            kept = [f for f in finalizers if f != "kubernetes"]
            subresources.finalize_namespace(core, name, {"spec": {"finalizers": kept}})
