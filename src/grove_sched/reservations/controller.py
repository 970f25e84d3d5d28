"""Reservations in the scheduling loop: placed like a gang, held for their owners, ended by ttl or use.

Why in the loop: a reservation takes capacity exactly as a gang does, so it is placed by the same serial cycle
(its queue key is `reservation_key(name)`), against the same snapshot, and the next cycle sees its hold at once:
what the scheduler decides is kept in an overlay until the informer shows the status it wrote. Everything about
who may use what is decided by `grove_sched.reservations.model`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import structlog

from grove_runtime.cache import Cache
from grove_runtime.client import Client
from grove_runtime.clock import Clock
from grove_runtime.errors import ApiError
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import PODS, ResourceType
from grove_sched.events import EventSink
from grove_sched.gangs import GangKey
from grove_sched.model import (
    BoundPod,
    Code,
    GangRequest,
    Placement,
    PlacementResult,
    PodGroup,
    PodRef,
    TopologyConstraint,
)
from grove_sched.placement import Snapshot
from grove_sched.podspec import pod_terms
from grove_sched.reservations.model import (
    PHASE_AVAILABLE,
    PHASE_FAILED,
    PHASE_PENDING,
    PHASE_SUCCEEDED,
    ReservationView,
    holds,
    is_owner,
    owner_usage,
    parse_reservation,
)

__all__ = ["RESERVATIONS", "ReservationEvents", "Reservations", "is_reservation_key", "reservation_key"]

log = structlog.get_logger("grove_sched.reservations")
Obj = Mapping[str, Any]
Solve = Callable[[Snapshot, GangRequest], Awaitable[PlacementResult]]
RESERVATIONS = ResourceType("scheduling.koordinator.sh", "v1alpha1", "reservations", "Reservation", namespaced=False)
_KIND = {"apiVersion": RESERVATIONS.api_version, "kind": RESERVATIONS.kind}


def reservation_key(name: str) -> GangKey:
    """The queue key of a Reservation (no pod lives in the cluster scope, so it never names a gang)."""
    return GangKey("", name, single=True)


def is_reservation_key(key: GangKey) -> bool:
    """Whether a queue key is a Reservation's."""
    return key.single and key.namespace == ""


class Reservations:
    """Reads Reservations from the informer, places them, writes their status, and says what a gang may use."""

    def __init__(self, informers: Cache, client: Client, clock: Clock, sink: EventSink) -> None:
        self._informers = informers
        self._client = client
        self._clock = clock
        self._sink = sink
        self._overlay: dict[str, dict[str, Any]] = {}
        self._parsed: dict[str, tuple[tuple[str, str], ReservationView]] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._writes: set[asyncio.Task[None]] = set()
        """Status patches in flight (kept referenced until done, as asyncio requires of a background task)."""
        self.wake: Callable[[GangKey], None] = lambda _key: None

    def views(self) -> list[ReservationView]:
        """Every Reservation, its status overlaid with what this process wrote and the informer has not shown
        (each read once per resourceVersion and overlay: every scheduling cycle asks)."""
        out = []
        for obj in self._informers.list(RESERVATIONS):
            meta = obj.get("metadata") or {}
            name = str(meta.get("name", ""))
            overlay = self._overlay.get(name, {})
            memo_key = (str(meta.get("resourceVersion", "")), repr(sorted(overlay.items())))
            memo = self._parsed.get(name)
            if memo is None or memo[0] != memo_key:
                memo = (memo_key, parse_reservation({**obj, "status": {**(obj.get("status") or {}), **overlay}}))
                self._parsed[name] = memo
            out.append(memo[1])
        return out

    def observed(self, obj: Obj) -> None:
        """The informer shows a Reservation: drop the overlay its status now carries."""
        name = str((obj.get("metadata") or {}).get("name", ""))
        overlay = self._overlay.get(name)
        status = obj.get("status") or {}
        if overlay is not None and all(status.get(k) == v for k, v in overlay.items()):
            self._overlay.pop(name, None)

    def forget(self, name: str) -> None:
        """The Reservation is gone."""
        self._overlay.pop(name, None)
        self._parsed.pop(name, None)
        task = self._timers.pop(name, None)
        if task is not None:
            task.cancel()

    def _usage(self, views: Sequence[ReservationView]) -> dict[str, dict[str, dict[str, int]]]:
        """What each Available reservation's owners use, reading only their pods (every cycle asks: a list of all
        pods would cost the cycle O(pods)), unless some owner is known by uid alone."""
        live = [v for v in views if v.phase == PHASE_AVAILABLE and v.current_owners]
        return {v.name: owner_usage(v, self._owner_pods(v)) for v in live}

    def _owner_pods(self, view: ReservationView) -> Iterable[Obj]:
        if len(view.owner_pods) < len(view.current_owners):
            return self._informers.list(PODS)
        found = (self._informers.get(PODS, ObjectKey(namespace, name)) for namespace, name in view.owner_pods)
        return [pod for pod in found if pod is not None]

    def all_holds(self) -> list[BoundPod]:
        """What every Available reservation still holds, as phantom pods (for a gang that owns none)."""
        views = self.views()
        usage = self._usage(views)
        return [pod for v in views for pod in holds(v, usage.get(v.name, {}))]

    def for_gang(self, pods: Iterable[Obj], ref: str | None) -> tuple[list[BoundPod], tuple[str, ...], tuple[str, ...]]:
        """For a gang: the holds of the reservations it does not own, and the nodes and names of those it owns."""
        members = list(pods)
        views = [v for v in self.views() if v.phase == PHASE_AVAILABLE]
        usage = self._usage(views)
        held: list[BoundPod] = []
        nodes: list[str] = []
        owned: list[str] = []
        for view in views:
            if is_owner(view, members, ref):
                owned.append(view.name)
                nodes += [n for n in view.nodes if n not in nodes]
            else:
                held += holds(view, usage.get(view.name, {}))
        return held, tuple(nodes), tuple(owned)

    def allocate(self, names: Sequence[str], pods: Mapping[str, Obj], assignments: Mapping[str, str]) -> None:
        """An owner gang was placed: its pods on a reserved node are the reservation's current owners (with
        `allocateOnce` it is then Succeeded)."""
        views = {v.name: v for v in self.views()}
        for name in names:
            view = views.get(name)
            if view is None:
                continue
            placed = [pods[p] for p, node in sorted(assignments.items()) if node in view.nodes and p in pods]
            if not placed:
                continue
            owners = [
                {"namespace": m.get("namespace"), "name": m.get("name"), "uid": m.get("uid")}
                for m in ((p.get("metadata") or {}) for p in placed)
            ]
            known = {o.get("uid") for o in self._current(name)}
            status: dict[str, Any] = {
                "currentOwners": self._current(name) + [o for o in owners if o["uid"] not in known]
            }
            if view.allocate_once:
                status["phase"] = PHASE_SUCCEEDED
            self._write(name, status, "Allocated", f"{len(placed)} owner pod(s) placed into the reservation")

    def _current(self, name: str) -> list[dict[str, Any]]:
        obj = self._informers.get(RESERVATIONS, ObjectKey("", name)) or {}
        status = {**(obj.get("status") or {}), **self._overlay.get(name, {})}
        return [dict(o) for o in status.get("currentOwners") or ()]

    async def schedule_one(self, name: str, snapshot: Snapshot, solve: Solve) -> Code:
        """One cycle for a Reservation: end it when expired, place it when Pending; the queue code."""
        view = next((v for v in self.views() if v.name == name), None)
        if view is None or view.phase in (PHASE_SUCCEEDED, PHASE_FAILED):
            return Code.SUCCESS
        now = self._clock.now().timestamp()
        if view.expired(now):
            self._write(name, {"phase": PHASE_FAILED}, "Expired", "the reservation's ttl or expiry time passed")
            return Code.SUCCESS
        self._arm_expiry(view, now)
        if view.phase == PHASE_AVAILABLE:
            return Code.SUCCESS
        if view.problems or view.unschedulable:
            reasons = view.problems or ("spec.unschedulable is true",)
            self._write(name, {"phase": PHASE_PENDING}, "Invalid", "; ".join(reasons))
            return Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        result = await solve(snapshot, self.request(view))
        if not isinstance(result, Placement) or len(result.assignments) < view.replicas:
            message = "; ".join(getattr(result, "reasons", ())) or "the reservation does not fit"
            self._write(name, {"phase": PHASE_PENDING}, "Unschedulable", message)
            return Code.UNSCHEDULABLE
        nodes = [result.assignments[f"{name}-{i}"] for i in range(view.replicas)]
        allocatable = {r: str(v * view.replicas) for r, v in sorted(view.requests.items())}
        status = {"phase": PHASE_AVAILABLE, "nodeName": nodes[0], "nodeNames": nodes, "allocatable": allocatable}
        self._write(name, status, "Scheduled", f"reserved on {', '.join(sorted(set(nodes)))}")
        return Code.SUCCESS

    @staticmethod
    def request(view: ReservationView) -> GangRequest:
        """The reservation as a gang: `replicas` copies of its template, all or none, packed by its pack key."""
        terms = pod_terms({"metadata": view.template.get("metadata") or {}, "spec": view.template.get("spec") or {}})
        pods = tuple(PodRef(f"{view.name}-{i}") for i in range(view.replicas))
        group = PodGroup(
            name=view.name,
            pods=pods,
            min_replicas=view.replicas,
            requests=view.requests,
            node_selector=terms.node_selector,
            required_node_terms=terms.required_node_terms,
            tolerations=terms.tolerations,
        )
        topology = TopologyConstraint(required_key=view.pack_key)
        return GangRequest(f"reservation-{view.name}", "", (group,), topology=topology)

    def _arm_expiry(self, view: ReservationView, now: float) -> None:
        if view.expires_at is None or view.name in self._timers:
            return
        with contextlib.suppress(RuntimeError):
            loop = asyncio.get_running_loop()
            self._timers[view.name] = loop.create_task(self._expire(view.name, view.expires_at - now))

    async def _expire(self, name: str, after: float) -> None:
        await self._clock.sleep(max(0.0, after))
        self._timers.pop(name, None)
        self.wake(reservation_key(name))

    def _write(self, name: str, status: dict[str, Any], reason: str, message: str) -> None:
        """Record the status now (overlay) and patch it and an Event in the background."""
        self._overlay[name] = {**self._overlay.get(name, {}), **status}
        condition = {"type": "Scheduled", "status": "True" if status.get("phase") == PHASE_AVAILABLE else "False"}
        condition |= {"reason": reason, "message": message[:1024], "lastTransitionTime": _stamp(self._clock)}
        body = {"status": {**status, "conditions": [condition]}}
        log.info("reservation", reservation=name, reason=reason, message=message, phase=status.get("phase"))
        with contextlib.suppress(RuntimeError):
            task = asyncio.get_running_loop().create_task(self._patch(name, body, reason, message))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)

    async def _patch(self, name: str, body: Obj, reason: str, message: str) -> None:
        try:
            obj = await self._client.patch(RESERVATIONS, name, body, subresource="status")
        except ApiError as err:
            log.warning("reservation status not written", reservation=name, error=str(err))
            return
        warning = reason in ("Unschedulable", "Invalid", "Expired")
        await (self._sink.warning if warning else self._sink.normal)({**obj, **_KIND}, reason, message)

    def close(self) -> None:
        """Stop the expiry timers."""
        for name in list(self._timers):
            self._timers.pop(name).cancel()


def _stamp(clock: Clock) -> str:
    return clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


class ReservationEvents:
    """Informer handler: a new or changed Reservation gets a scheduling cycle; one that stops holding capacity
    (ended, deleted) lets every waiting gang try again."""

    def __init__(self, reservations: Reservations, add: Callable[[GangKey], None], move_all: Callable[[], object]):
        self._r = reservations
        self._add = add
        self._move_all = move_all

    def on_add(self, obj: Obj) -> None:
        """A new Reservation (or one seen at start-up)."""
        self._r.observed(obj)
        self._add(reservation_key(str(obj["metadata"]["name"])))

    def on_update(self, old: Obj, new: Obj) -> None:
        """A changed Reservation: its spec may need a new cycle; a phase left Available frees capacity."""
        self._r.observed(new)
        if old.get("spec") != new.get("spec") or old.get("metadata", {}).get("annotations") != new.get(
            "metadata", {}
        ).get("annotations"):
            self._add(reservation_key(str(new["metadata"]["name"])))
        if (old.get("status") or {}).get("phase") != (new.get("status") or {}).get("phase"):
            self._move_all()

    def on_delete(self, obj: Obj) -> None:
        """The Reservation is gone: its capacity is free."""
        self._r.forget(str(obj["metadata"]["name"]))
        self._move_all()
