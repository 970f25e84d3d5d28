"""What the scheduler publishes on a PodGang: `phase`, the `Scheduled` condition and `placementScore`.

Why this needs care (grove-reference §7): the operator writes PodGang status with JSON merge patches that carry
`phase: Pending` and a *one-element* `conditions` list (its `Initialized` condition), which replaces the whole list
until `Initialized=True` has been written. So the scheduler never owns the list either: it reads the current
conditions, replaces only its own `Scheduled` entry, keeps every other condition exactly as found, and writes the
full merged list with a resourceVersion-free merge patch. A PodGang update that lost our condition or reset the
phase simply makes the status reconciler compute a non-empty patch again, so our state is re-applied without ever
overwriting the operator's `Initialized`.

The functions are pure (the PodGang and its pods in, a merge-patch body or None out); `PodGangStatusReconciler`
is the thin level-based reconcile around them.

One status write per gang outcome: a gang's status passes Pending → Starting (minimum bound) → Running (minimum
running) while its verdict arrives, usually within milliseconds of each other. Written as each arrived, that was
~1.6 writes per 4-pod gang, each decoded again by every PodGang watcher. So a write whose state is still moving
(a Scheduled gang not yet Running, or pods bound and even running before the verdict on them is recorded) waits up
to `settle` seconds for it to settle; a settled state (a verdict with Running, or a failed verdict) is written at
once, so in the common case the gang's status is written once, already Running.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grove_api.podgang import CONDITION_SCHEDULED
from grove_runtime import errors
from grove_runtime.client import Client
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.keys import ObjectKey, Result
from grove_runtime.leaderelection import unfenced
from grove_runtime.resources import ResourceType
from grove_sched.gangs import Names, is_ours, min_replicas

__all__ = [
    "PODGANGS",
    "REASON_INVALID",
    "REASON_PREEMPTED",
    "REASON_SCHEDULED",
    "REASON_UNSCHEDULABLE",
    "PodGangStatusReconciler",
    "ScheduledState",
    "StatusBook",
    "compute_phase",
    "format_time",
    "status_patch",
]

Obj = Mapping[str, Any]

PODGANGS = ResourceType("scheduler.grove.io", "v1alpha1", "podgangs", "PodGang")
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_INVALID = "InvalidPodGang"
REASON_PREEMPTED = "Preempted"
_MAX_MESSAGE = 32768


@dataclass(frozen=True, slots=True)
class ScheduledState:
    """The scheduler's latest verdict on a gang: the `Scheduled` condition and the placement score."""

    scheduled: bool
    reason: str
    message: str
    score: float | None = None


class StatusBook:
    """The latest verdict per PodGang, kept in memory so the status reconciler can (re-)apply it."""

    def __init__(self) -> None:
        self._states: dict[ObjectKey, ScheduledState] = {}

    def record(self, key: ObjectKey, state: ScheduledState) -> None:
        """Remember a verdict (a scheduled verdict keeps the previous score when the new one has none)."""
        old = self._states.get(key)
        if state.scheduled and state.score is None and old is not None and old.scheduled:
            state = ScheduledState(state.scheduled, state.reason, state.message, old.score)
        self._states[key] = state

    def get(self, key: ObjectKey) -> ScheduledState | None:
        """The latest verdict, if any."""
        return self._states.get(key)

    def drop(self, key: ObjectKey) -> None:
        """Forget a deleted PodGang."""
        self._states.pop(key, None)


def format_time(now: dt.datetime) -> str:
    """RFC 3339 in UTC with second precision, as metav1.Time serialises."""
    return now.astimezone(dt.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def compute_phase(podgang: Obj, pods: Mapping[str, Obj]) -> str:
    """Pending until every group has `minReplicas` bound pods, Starting until they all run, then Running."""
    groups: Sequence[Obj] = (podgang.get("spec") or {}).get("podgroups") or []
    if not groups:
        return "Pending"
    bound_ok = running_ok = True
    for group in groups:
        minimum = min_replicas(group)
        members = [pods[str(r.get("name"))] for r in group.get("podReferences") or () if str(r.get("name")) in pods]
        live = [p for p in members if not (p.get("metadata") or {}).get("deletionTimestamp")]
        bound = sum(1 for p in live if (p.get("spec") or {}).get("nodeName"))
        running = sum(1 for p in live if (p.get("status") or {}).get("phase") == "Running")
        bound_ok = bound_ok and bound >= minimum
        running_ok = running_ok and running >= minimum
    if bound_ok and running_ok:
        return "Running"
    return "Starting" if bound_ok else "Pending"


def _condition(state: ScheduledState, previous: Obj | None, now: dt.datetime, generation: int | None) -> dict[str, Any]:
    status = "True" if state.scheduled else "False"
    same = previous is not None and previous.get("status") == status
    cond: dict[str, Any] = {
        "type": CONDITION_SCHEDULED,
        "status": status,
        "reason": state.reason,
        "message": state.message[:_MAX_MESSAGE],
        "lastTransitionTime": str(previous.get("lastTransitionTime")) if same and previous else format_time(now),
    }
    if generation is not None:
        cond["observedGeneration"] = generation
    return cond


def _same_condition(a: Obj | None, b: Obj) -> bool:
    if a is None:
        return False
    keys = ("status", "reason", "message", "observedGeneration")
    return all(a.get(k, "" if k == "message" else None) == b.get(k) for k in keys)


def status_patch(podgang: Obj, phase: str, state: ScheduledState | None, now: dt.datetime) -> dict[str, Any] | None:
    """The merge patch that makes the PodGang's status show `phase` and `state`, or None when it already does.

    Every condition other than `Scheduled` (notably the operator's `Initialized`) is copied through unchanged and
    in place; without a verdict (`state` None) the `Scheduled` condition found is kept as is.
    """
    status = podgang.get("status") or {}
    current: list[Obj] = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    generation = (podgang.get("metadata") or {}).get("generation")
    body: dict[str, Any] = {}
    if status.get("phase") != phase:
        body["phase"] = phase
    if state is not None:
        previous = next((c for c in current if c.get("type") == CONDITION_SCHEDULED), None)
        wanted = _condition(state, previous, now, int(generation) if generation is not None else None)
        if not _same_condition(previous, wanted):
            merged = [dict(c) for c in current if c.get("type") != CONDITION_SCHEDULED]
            index = next((i for i, c in enumerate(current) if c.get("type") == CONDITION_SCHEDULED), len(merged))
            merged.insert(index, wanted)
            body["conditions"] = merged
        if state.score is not None and status.get("placementScore") != state.score:
            body["placementScore"] = state.score
    if not body:
        return None
    body.setdefault("phase", phase)
    return {"status": body}


def _moving(phase: str, state: ScheduledState | None) -> bool:
    """Whether a status is about to change again: no verdict yet (the binds' pod events arrive before the verdict
    that follows them, so a gang can look Running without one) or a scheduled gang not yet Running. A failed
    verdict, or a scheduled gang Running, is settled."""
    return state is None or (state.scheduled and phase != "Running")


class PodGangStatusReconciler:
    """Level-based: read the PodGang and its pods from the cache, patch status only when it differs.

    The informer sees our own write only when its watch event arrives, and every pod bound or started in the
    meantime triggers another reconcile. Computed from the stale PodGang it would resend the same patch, and a
    patch pinned to the stale resourceVersion would fail with 409 and retry until the watch caught up (~8 status
    requests per 4-pod gang in a burst instead of ~3). So the reconciler keeps, per PodGang, the resourceVersion
    its last successful patch was computed from and the object the server returned; while the cache still shows
    that version, the returned object (exactly the server's state after our write) stands in for the cached one.
    """

    def __init__(
        self,
        client: Client,
        book: StatusBook,
        get_podgang: Callable[[ObjectKey], Obj | None],
        pods_of: Callable[[Obj], Mapping[str, Obj]],
        scheduler_name: Names,
        clock: Clock | None = None,
        leading: Callable[[], bool] = unfenced,
        settle: float = 1.0,
    ) -> None:
        self._settle = settle
        self._moving_since: dict[ObjectKey, float] = {}
        self._scheduler_name = scheduler_name
        self._leading = leading
        self._client = client
        self._book = book
        self._get = get_podgang
        self._pods_of = pods_of
        self._clock = clock or LoopClock()
        self._written: dict[ObjectKey, tuple[str, Obj]] = {}

    async def reconcile(self, key: ObjectKey) -> Result:
        """Bring one PodGang's status in line with the pods and the latest verdict."""
        podgang = self._get(key)
        if podgang is None:
            self._book.drop(key)
            self._written.pop(key, None)
            self._moving_since.pop(key, None)
            return Result()
        if (podgang.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        based_on = str((podgang.get("metadata") or {}).get("resourceVersion") or "")
        written = self._written.pop(key, None)
        if written is not None and based_on and written[0] == based_on:
            podgang = written[1]  # the informer has not seen our last write yet; the server holds exactly this
            self._written[key] = written
        pods = self._pods_of(podgang)
        if not is_ours(podgang, pods, self._scheduler_name):
            return Result()
        phase = compute_phase(podgang, pods)
        state = self._book.get(key)
        patch = status_patch(podgang, phase, state, self._clock.now())
        if patch is None:
            self._moving_since.pop(key, None)
            return Result()
        if _moving(phase, state):  # let it settle first
            now = self._clock.monotonic()
            waited = now - self._moving_since.setdefault(key, now)
            if waited < self._settle:
                return Result(requeue_after=self._settle - waited)
        self._moving_since.pop(key, None)
        if not self._leading():
            return Result()  # a process past its renew deadline writes nothing; the next leader reconciles anew
        rv = (podgang.get("metadata") or {}).get("resourceVersion")
        if "conditions" in patch["status"] and rv:
            # A merge patch replaces the whole list: pin the version read so a condition the operator wrote
            # meanwhile (Initialized) is never overwritten from a stale cache; a conflict retries on fresh data.
            patch["metadata"] = {"resourceVersion": rv}
        try:
            result = await self._client.patch(PODGANGS, key.name, patch, key.namespace, subresource="status")
        except errors.Conflict:
            self._written.pop(key, None)
            return Result(requeue_after=0.05)
        if based_on and (result.get("metadata") or {}).get("resourceVersion"):
            self._written[key] = (based_on, result)
        return Result()
