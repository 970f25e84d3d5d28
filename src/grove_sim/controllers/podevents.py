"""The Events a kubelet records about a pod's containers (``kubectl describe pod`` shows them), aggregated.

A kubelet reports ``Started``, ``Killing``, ``Unhealthy`` (a failed probe) and ``BackOff`` as ``v1`` Events with
``source.component: kubelet``. The same report about the same container is one Event whose ``count`` and
``lastTimestamp`` grow, as client-go's event correlator does, so a crash loop or a probe failing every second
keeps a bounded number of Events however long it lasts. Logged too, with the pod's namespace and name.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from grove_sim.machinery import errors
from grove_sim.registry.core import Core, clone, now_rfc3339

__all__ = ["PodEvents"]

_EVENTS = ("", "events")
_log = logging.getLogger(__name__)


class PodEvents:
    """Records kubelet Events about pods' containers."""

    def __init__(self, core: Core) -> None:
        self._core = core

    def record(self, pod: dict[str, Any], container: str, type_: str, reason: str, message: str) -> None:
        """One report about ``container`` of ``pod`` (``type_``: Normal or Warning)."""
        meta = pod.get("metadata") or {}
        namespace, name, uid = str(meta.get("namespace", "")), str(meta.get("name", "")), str(meta.get("uid", ""))
        _log.info("pod %s/%s container %s: %s %s", namespace, name, container, reason, message)
        digest = hashlib.sha256(f"{uid}/{container}/{reason}/{message}".encode()).hexdigest()[:16]
        event_name = f"{name}.{digest}"
        info = self._core.registry.get("", "v1", "events")
        assert info is not None
        now = now_rfc3339()
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        try:
            current = self._core.store.get(_EVENTS, namespace, event_name)
            if current is not None:
                updated = clone(current)
                updated["count"] = int(current.get("count") or 1) + 1
                updated["lastTimestamp"] = now
                self._core.replace(info, current, updated)
                return
            event = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": event_name, "namespace": namespace},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name,
                                   "uid": uid, "fieldPath": f"spec.containers{{{container}}}"},
                "reason": reason,
                "message": message,
                "type": type_,
                "source": {"component": "kubelet", "host": node},
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
                "reportingComponent": "kubelet",
                "reportingInstance": node,
            }  # fmt: skip
            self._core.create(info, namespace, event)
        except errors.ApiError as exc:
            _log.debug("event for pod %s/%s not recorded: %s", namespace, name, exc.message)
