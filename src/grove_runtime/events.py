"""An EventRecorder that writes core/v1 Events about objects, aggregating repeats into one Event with a count.

Why aggregation: a reconcile loop that fails every few seconds would otherwise create thousands of Events.
Like client-go's event correlator, a repeat of the same (object, type, reason, message) within the recorder's
memory patches ``count`` and ``lastTimestamp`` of the existing Event instead of creating a new one. Like client-go's
spam filter (:mod:`grove_runtime.eventspam`), Events about one object beyond a burst of 25 (then one per five
minutes) are dropped before they cost a request. Recording is best effort: API failures are logged, never raised
into the reconcile.
"""

from __future__ import annotations

import itertools
import os
import secrets
import socket
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from grove_runtime import errors
from grove_runtime.client import Client, PatchType
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.eventspam import DEFAULT_BURST, DEFAULT_QPS, SpamFilter
from grove_runtime.resources import EVENTS

Obj = dict[str, Any]
NORMAL = "Normal"
WARNING = "Warning"
log = structlog.get_logger("grove_runtime.events")


def involved_object(obj: Mapping[str, Any]) -> Obj:
    """The ``involvedObject`` reference for an object dict."""
    meta = obj.get("metadata") or {}
    ref: Obj = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
    }
    for src, dst in (("uid", "uid"), ("resourceVersion", "resourceVersion")):
        if meta.get(src):
            ref[dst] = meta[src]
    return ref


@dataclass(slots=True)
class _Seen:
    name: str
    namespace: str
    count: int


class EventRecorder:
    """Records Events as ``component`` (``reportingComponent``/``source.component``) from ``instance``."""

    def __init__(
        self,
        client: Client,
        component: str,
        *,
        instance: str | None = None,
        clock: Clock | None = None,
        cache_size: int = 4096,
        spam_burst: int | None = DEFAULT_BURST,
        spam_qps: float = DEFAULT_QPS,
    ) -> None:
        """``spam_burst=None`` turns the spam filter off (every Event is written)."""
        self.client = client
        self.component = component
        self.instance = instance or os.environ.get("POD_NAME") or socket.gethostname()
        self._clock = clock or LoopClock()
        self._cache: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._cache_size = cache_size
        self._spam = (
            SpamFilter(self._clock, burst=spam_burst, qps=spam_qps, cache_size=cache_size)
            if spam_burst is not None
            else None
        )
        self._seq = itertools.count()
        # Recorders in other processes (or threads of this one) write Events too; a random per-recorder token
        # keeps generated names apart without coordination.
        self._token = secrets.token_hex(3)

    def _timestamp(self) -> str:
        return self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")

    async def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, action: str = "") -> None:
        """Record that ``reason``/``message`` happened to ``obj`` (``type_`` is ``Normal`` or ``Warning``)."""
        ref = involved_object(obj)
        namespace = str(ref.get("namespace") or "default")
        key = (str(ref.get("uid") or ""), ref["kind"], namespace, ref["name"], type_, reason, message, action)
        spam_key = (ref["apiVersion"], ref["kind"], namespace, ref["name"], str(ref.get("uid") or ""))
        if self._spam is not None and not self._spam.allow(spam_key):
            log.debug("event dropped by the spam filter", reason=reason, object=ref["name"])
            return
        now = self._timestamp()
        seen = self._cache.get(key)
        try:
            if seen is not None:
                try:
                    await self._bump(seen, now, key)
                    return
                except errors.NotFound:
                    pass
            await self._create(ref, namespace, type_, reason, message, action, now, key)
        except errors.ApiError as exc:
            log.warning("event recording failed", reason=reason, object=ref["name"], error=repr(exc))

    async def normal(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        """Record a ``Normal`` event."""
        await self.event(obj, NORMAL, reason, message)

    async def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        """Record a ``Warning`` event."""
        await self.event(obj, WARNING, reason, message)

    async def _bump(self, seen: _Seen, now: str, key: tuple[str, ...]) -> None:
        try:
            await self.client.patch(
                EVENTS,
                seen.name,
                {"count": seen.count + 1, "lastTimestamp": now},
                seen.namespace,
                patch_type=PatchType.MERGE,
            )
        except errors.NotFound:
            self._cache.pop(key, None)
            raise
        seen.count += 1
        self._cache.move_to_end(key)

    async def _create(
        self,
        ref: Obj,
        namespace: str,
        type_: str,
        reason: str,
        message: str,
        action: str,
        now: str,
        key: tuple[str, ...],
    ) -> None:
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": namespace},
            "involvedObject": ref,
            "type": type_,
            "reason": reason,
            "message": message[:1024],
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": self.component, "host": self.instance},
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
        }
        if action:
            body["action"] = action
        for attempt in range(2):
            name = f"{ref['name']}.{self._clock.now().strftime('%Y%m%d%H%M%S')}{self._token}{next(self._seq):06x}"
            body["metadata"]["name"] = name
            try:
                await self.client.create(EVENTS, body, namespace)
                break
            except errors.AlreadyExists:
                if attempt:
                    raise
                self._token = secrets.token_hex(3)  # another recorder drew the same token: draw again
        self._cache[key] = _Seen(name, namespace, 1)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
