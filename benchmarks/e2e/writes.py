"""API writes during an end-to-end run, counted from the outside by resource, verb and writer.

Why: every write is stored once and decoded again by every watcher, so writes per bound pod is what a pipeline
costs the API server beyond its floor (a bind and the kubelet's status write per pod). The programs are not
instrumented for this: one watch per resource in the benchmark namespace sees every write that changed an object
(a create is ADDED, an update or patch MODIFIED, a delete DELETED; a write that changes nothing produces no event,
as on kube-apiserver, and costs no watcher anything). Each change is classified by comparing the object with its
previous version: for pods, `spec.nodeName` set is the scheduler's bind, `schedulingGates` shrinking is the
operator lifting the gate, a `status`-only change is the kubelet (grove-sim); for PodGangs a change of the
`Scheduled` condition, `placementScore` or `phase` (beyond Pending) is the scheduler, of anything else the
operator; Events name
their writer (`source.component`). Leases are not counted (the e2e programs run without leader election).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import (
    EVENTS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    ResourceType,
)

__all__ = ["WriteCounter", "counting_writes", "per_bound_pod"]

PODGANGS = ResourceType("scheduler.grove.io", "v1alpha1", "podgangs", "PodGang")
GROVE = tuple(
    ResourceType("grove.io", "v1alpha1", plural, kind)
    for plural, kind in (
        ("podcliquesets", "PodCliqueSet"),
        ("podcliques", "PodClique"),
        ("podcliquescalinggroups", "PodCliqueScalingGroup"),
    )
)
WATCHED = (PODS, EVENTS, PODGANGS, *GROVE, SERVICES, SERVICEACCOUNTS, ROLES, ROLEBINDINGS, SECRETS)
SCHEDULER = "scheduler"
KUBELET = "kubelet"
OPERATOR = "operator"
Obj = Mapping[str, Any]


def _without_meta(obj: Obj) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    return {**obj, "metadata": meta}


def _condition(obj: Obj, kind: str) -> Any:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == kind), None)


def classify(resource: str, verb: str, old: Obj | None, new: Obj) -> tuple[str, str]:
    """(what, writer) of one observed write, e.g. ("pods/binding", "scheduler")."""
    if resource == "events":
        source = (new.get("source") or {}).get("component") or new.get("reportingComponent") or ""
        writer = SCHEDULER if "sched" in str(source) else OPERATOR
        return f"events {verb}", writer
    if verb != "update" or old is None:
        return f"{resource} {verb}", OPERATOR
    if resource == "pods":
        if not (old.get("spec") or {}).get("nodeName") and (new.get("spec") or {}).get("nodeName"):
            return "pods/binding", SCHEDULER
        if len((new.get("spec") or {}).get("schedulingGates") or ()) < len(
            (old.get("spec") or {}).get("schedulingGates") or ()
        ):
            return "pods update (scheduling gate removed)", OPERATOR
        if old.get("spec") == new.get("spec") and old.get("status") != new.get("status"):
            return "pods/status", KUBELET
        return "pods update", OPERATOR
    if old.get("status") != new.get("status") and old.get("spec") == new.get("spec"):
        if resource == "podgangs":  # the operator writes only its Initialized condition and phase Pending
            before, after = old.get("status") or {}, new.get("status") or {}
            mine = before.get("placementScore") != after.get("placementScore")
            mine = mine or (before.get("phase") != after.get("phase") and after.get("phase") != "Pending")
            mine = mine or _condition(old, "Scheduled") != _condition(new, "Scheduled")
            return "podgangs/status", SCHEDULER if mine else OPERATOR
        return f"{resource}/status", OPERATOR
    return f"{resource} update", OPERATOR


@dataclass
class WriteCounter:
    """Counts writes per (what, writer) while running; `snapshot()` freezes the counts seen so far."""

    client: KubeClient
    namespace: str
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    errors: int = 0
    _last: dict[tuple[str, str], Obj] = field(default_factory=dict)
    _synced: int = 0
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, rt: ResourceType) -> None:
        """List then watch one resource, forever; cancel the task to stop."""
        first = True
        while True:
            try:
                listing = await self.client.list(rt, self.namespace)
                for obj in listing["items"]:
                    self._last[(rt.plural, str(obj["metadata"]["name"]))] = obj
                if first:
                    first = False
                    self._synced += 1
                    if self._synced == len(WATCHED):
                        self._ready.set()
                rv = listing["metadata"]["resourceVersion"]
                async with self.client.watch(rt, self.namespace, resource_version=rv, timeout_seconds=3600) as events:
                    async for event in events:
                        self.observe(rt.plural, str(event.get("type")), event.get("object") or {})
            except (TimeoutError, errors.ApiError, aiohttp.ClientError, KeyError, OSError, ValueError):
                self.errors += 1
                await asyncio.sleep(0.2)

    def observe(self, resource: str, kind: str, obj: Obj) -> None:
        """One watch event."""
        verb = {"ADDED": "create", "MODIFIED": "update", "DELETED": "delete"}.get(kind)
        if verb is None:
            return
        key = (resource, str((obj.get("metadata") or {}).get("name", "")))
        old = self._last.get(key)
        if verb == "update" and old is not None and _without_meta(old) == _without_meta(obj):
            what, writer = f"{resource} update (no change)", OPERATOR
        else:
            what, writer = classify(resource, verb, old, obj)
        self.counts[(what, writer)] += 1
        if verb == "delete":
            self._last.pop(key, None)
        else:
            self._last[key] = obj

    def snapshot(self) -> dict[str, int]:
        """`"what by writer": count`, largest first."""
        return {f"{what} by {writer}": n for (what, writer), n in self.counts.most_common()}


def per_bound_pod(counts: Mapping[str, int], bound: int) -> dict[str, float | None]:
    """Writes per bound pod: all, the floor (bind + kubelet status), the scheduler's part (floor + its Events and
    PodGang status writes, the issue's measure) and the operator's."""
    if not bound:
        return {"all": None, "floor": None, "scheduler_part": None, "operator": None}
    by_writer: Counter[str] = Counter()
    for name, n in counts.items():
        by_writer[name.rsplit(" by ", 1)[1]] += n
    floor = counts.get(f"pods/binding by {SCHEDULER}", 0) + counts.get(f"pods/status by {KUBELET}", 0)
    return {
        "all": round(sum(counts.values()) / bound, 3),
        "floor": round(floor / bound, 3),
        "scheduler_part": round((by_writer[SCHEDULER] + by_writer[KUBELET]) / bound, 3),
        "operator": round(by_writer[OPERATOR] / bound, 3),
    }


@contextlib.asynccontextmanager
async def counting_writes(client: KubeClient, namespace: str) -> AsyncIterator[WriteCounter]:
    """A running `WriteCounter` over every watched resource for the duration of the block (synced first)."""
    counter = WriteCounter(client, namespace)
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(counter.run(rt)) for rt in WATCHED]
    try:
        await counter._ready.wait()
        yield counter
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
