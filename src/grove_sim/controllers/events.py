"""Core ``v1`` Events written by the simulator's controllers, aggregated as client-go's recorder does.

A repeated event (same object, type, reason and message) bumps ``count`` and ``lastTimestamp`` on the Event
already written instead of creating another, so ``kubectl describe`` and ``kubectl get events`` read as against a
real cluster; the memory of what was written is bounded.
"""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict
from typing import Any

from grove_sim.machinery import errors
from grove_sim.registry.core import Core, clone, now_rfc3339
from grove_sim.registry.resources import ResourceInfo

__all__ = ["EventRecorder"]

_EVENTS = ("", "events")
_REMEMBERED = 4096
_log = logging.getLogger(__name__)


class EventRecorder:
    """Writes Events about objects on behalf of one component (``default-scheduler``, ``deployment-controller``)."""

    def __init__(self, core: Core, component: str) -> None:
        self._core = core
        self.component = component
        self._written: OrderedDict[tuple[str, str, str, str], tuple[str, str]] = OrderedDict()

    def emit(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """Record that ``reason`` happened to ``obj`` (never raises: an event is best effort, as upstream)."""
        info = self._core.registry.get("", "v1", "events")
        assert info is not None
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        key = (str(meta.get("uid", "")), type_, reason, message)
        now = now_rfc3339()
        try:
            if self._bump(info, key, now):
                return
            event = {
                "metadata": {"name": f"{meta.get('name', '')}.{secrets.token_hex(8)}", "namespace": namespace},
                "involvedObject": {
                    "kind": obj.get("kind", ""),
                    "apiVersion": obj.get("apiVersion", ""),
                    "namespace": meta.get("namespace", ""),
                    "name": meta.get("name", ""),
                    "uid": meta.get("uid", ""),
                    "resourceVersion": meta.get("resourceVersion", ""),
                },
                "reason": reason,
                "message": message,
                "type": type_,
                "source": {"component": self.component},
                "reportingComponent": self.component,
                "reportingInstance": "",
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            }
            created = self._core.create(info, namespace, event)
        except errors.ApiError as exc:
            _log.debug("event %s on %s/%s not written: %s", reason, namespace, meta.get("name"), exc)
            return
        self._written[key] = (namespace, created["metadata"]["name"])
        while len(self._written) > _REMEMBERED:
            self._written.popitem(last=False)

    def _bump(self, info: ResourceInfo, key: tuple[str, str, str, str], now: str) -> bool:
        where = self._written.get(key)
        if where is None:
            return False
        stored = self._core.store.get(_EVENTS, *where)
        if stored is None:
            del self._written[key]
            return False
        new = clone(stored)
        new["count"] = int(stored.get("count") or 1) + 1
        new["lastTimestamp"] = now
        self._core.replace(info, stored, new)
        self._written.move_to_end(key)
        return True
