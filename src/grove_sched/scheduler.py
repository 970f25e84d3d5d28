"""The scheduling loop: one gang at a time through placement, then its binds in the background.

Why this shape (kube-scheduler's `ScheduleOne`): decisions must be serial, since each placement has to see the
capacity the previous one took, but binding is I/O and may run concurrently. So the cycle is:

1. pop the best gang from the queue;
2. assemble it through the `GangSource` (informer caches, assumed pods shown as bound);
3. take the cache's immutable snapshot and `place` it (inline or in a worker thread: `grove_sched.solver`); capacity the
   post-filter holds for another gang of higher or equal priority (a preemptor waiting for its victims) and the
   capacity of Koordinator Reservations the gang does not own (`grove_sched.reservations`) are layered onto the
   snapshot first, so no other gang takes it; a gang is placed on its own Reservations' nodes first, then in its
   Koordinator `network-topology-zone`, then anywhere (`grove_sched.koordinator`);
4. on an Unschedulable status, run the post-filter (where preemption lives; `grove_sched.postfilter`); a gang
   past its Koordinator `gang-timeout` is then timed out instead (`grove_sched.koordinator.timeouts`);
5. else `assume` the placement in the scheduler cache, so the next cycle already sees the capacity as used (what
   the post-filter held for this gang is released);
6. spawn the binding cycle and go back to 1.

Every attempt ends with one `Status` (`grove_sched.model`): its code alone decides where the queue puts the gang
(`SchedulingQueue.done`), and a failure's reasons become the PodGang's `Scheduled` condition, the
`FailedScheduling` Events and the pending pods' `PodScheduled=False` condition (once per distinct verdict). The
binding cycle binds through `Binder` (all-or-rollback on the minimum), then on success records the verdict and the
`Scheduled` events; on failure it forgets the assumption and ends with an Error status (backoff). The gang stays
"in flight" in the queue until its binding cycle ends, so no second attempt can race the first. `assume` and
`bind` are the one path from a placement to bound pods: start-up recovery (`grove_sched.recovery`) completes
partially bound gangs through them too.

Leadership: the binder is fenced (`Binder.leading`). Once the fence says this process no longer leads, the loop
starts no new cycle, and on the way out the running binding cycles are cancelled instead of awaited.

Where the solver runs (inline on the loop or in a worker thread) is `grove_sched.solver`'s choice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

import structlog

from grove_runtime.clock import Clock, LoopClock
from grove_runtime.keys import ObjectKey
from grove_runtime.leaderelection import LeadershipLost
from grove_sched.binder import Binder, BindOutcome, BindPlan
from grove_sched.cache import PodKey
from grove_sched.events import GangEvents
from grove_sched.gangs import GangKey, Malformed, ReadyGang, Waiting
from grove_sched.koordinator import REASON_GANG_TIMEOUT, GangHints, GangTimeouts, gang_hints, place_preferring_zone
from grove_sched.metrics import SchedulerMetrics
from grove_sched.model import (
    BoundPod,
    Code,
    GangRequest,
    Placement,
    PlacementOptions,
    PlacementResult,
    Status,
    Unschedulable,
)
from grove_sched.placement import Snapshot, assumed_pods
from grove_sched.pod_status import PodStatusWriter
from grove_sched.podgang_status import (
    REASON_INVALID,
    REASON_PREEMPTED,
    REASON_SCHEDULED,
    REASON_UNSCHEDULABLE,
    ScheduledState,
    StatusBook,
)
from grove_sched.postfilter import NoPostFilter, PostFilter
from grove_sched.queue import QueueClosed, SchedulingQueue
from grove_sched.reservations import Reservations, is_reservation_key
from grove_sched.solver import Solver
from grove_sched.source import GangSource
from grove_sched.tenancy import QueueGate

__all__ = ["Scheduler"]

log = structlog.get_logger("grove_sched.scheduler")
Obj = Mapping[str, Any]
_ATTEMPT = {Code.UNSCHEDULABLE: "unschedulable", Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "unresolvable"}


class Scheduler:
    """Owns the queue, the scheduler cache and the binding cycles; reads gangs through its `GangSource`."""

    def __init__(
        self,
        source: GangSource,
        binder: Binder,
        events: GangEvents,
        *,
        queue: SchedulingQueue[GangKey] | None = None,
        book: StatusBook | None = None,
        metrics: SchedulerMetrics | None = None,
        options: PlacementOptions | None = None,
        clock: Clock | None = None,
        inline_solve_limit: float = 0.02,
        lookahead_gangs: int = 0,
        post_filter: PostFilter | None = None,
        pod_status: PodStatusWriter | None = None,
        gate: QueueGate | None = None,
        reservations: Reservations | None = None,
    ) -> None:
        self.source = source
        self.cache = source.cache
        self.binder = binder
        self.events = events
        self.clock = clock or LoopClock()
        # `is not None`: an empty queue is falsy (it has a length), and `or` silently replaced the one given
        self.queue: SchedulingQueue[GangKey] = queue if queue is not None else SchedulingQueue(clock=self.clock)
        self.book = book or StatusBook()
        self.metrics = metrics or SchedulerMetrics()
        self.solver = Solver(options, inline_solve_limit, lookahead_gangs)
        self.post_filter: PostFilter = post_filter or NoPostFilter()
        self.pod_status = pod_status
        self.gate = gate
        """Queues and fair share (`grove_sched.tenancy`): admission before placement; None without queues."""
        self.reservations = reservations
        self._status_changed: Callable[[ObjectKey], None] = lambda _key: None
        self._ready_since: dict[GangKey, float] = {}
        self._last_reasons: dict[GangKey, tuple[str, ...]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._running = False
        self.timeouts: GangTimeouts[GangKey] = GangTimeouts(self.clock, self._wake)

    def set_status_trigger(self, trigger: Callable[[ObjectKey], None]) -> None:
        """Called with a PodGang's key whenever its recorded verdict changes (the status controller's enqueue)."""
        self._status_changed = trigger

    def forget_gang(self, key: GangKey) -> None:
        """The gang is gone (PodGang or lone pod deleted): drop it from the queue and every per-gang record."""
        self.queue.remove(key)
        self.post_filter.forget(key)
        if self.gate is not None:
            self.gate.forget(key)
        self.timeouts.forget(key)
        self._ready_since.pop(key, None)
        self._last_reasons.pop(key, None)
        if not key.single:
            self.book.drop(ObjectKey(key.namespace, key.name))

    def record_preempted(self, key: GangKey, message: str) -> None:
        """A gang was preempted: its PodGang's `Scheduled` condition turns False with reason Preempted."""
        self._last_reasons.pop(key, None)
        if not key.single:
            okey = ObjectKey(key.namespace, key.name)
            self.book.record(okey, ScheduledState(False, REASON_PREEMPTED, message))
            self._status_changed(okey)

    def node_set_aside(self, node: Obj, reason: str) -> None:
        """The cache set a node aside: log it, and record a Warning Event on it while this process schedules."""
        log.warning("node set aside", node=(node.get("metadata") or {}).get("name"), reason=reason)
        if self._running:
            self.spawn(self.events.node_set_aside(node, reason))

    def refresh_priorities(self) -> None:
        """Re-resolve every queued gang's priority (PriorityClasses may have synced after the gangs were queued)."""
        for key in self.queue.held():
            self.queue.set_priority(key, self.source.gang_priority(key))

    # --- the loop -----------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Schedule until cancelled, or raise `LeadershipLost` once the fence says this process no longer leads
        (the manager then exits as for a lost lease). On the way out binding cycles are awaited (a cancelled bind
        would leave a partial gang behind), unless leadership is lost: then they are cancelled."""
        self.refresh_priorities()
        self._running = True
        for name, reason in sorted(self.cache.set_aside.items()):  # set aside before this process led
            self.spawn(self.events.node_set_aside({"metadata": {"name": name}}, reason))
        try:
            while self.binder.leading():
                await asyncio.sleep(0)  # let binds and informer events of earlier gangs run between cycles
                try:
                    key = await self.queue.pop()
                except QueueClosed:
                    return
                if not self.binder.leading():
                    break
                self._publish_pending()
                try:
                    await self.schedule_one(key)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("scheduling cycle failed", gang=str(key))
                    self._count(key, "error")
                    self.queue.done(key, Code.ERROR)
                self._publish_pending()
            raise LeadershipLost("the renew deadline passed: no further scheduling cycles")
        finally:
            self._running = False
            self.timeouts.close()
            if self.reservations is not None:
                self.reservations.close()
            self.queue.close()
            if not self.binder.leading():
                for task in list(self._tasks):
                    task.cancel()
            await self.drain()

    async def drain(self) -> None:
        """Wait for every running binding cycle."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def schedule_one(self, key: GangKey) -> None:
        """One scheduling cycle for `key` (popped from the queue)."""
        now = self.clock.monotonic()
        self.cache.cleanup_expired(now)
        if self.reservations is not None and is_reservation_key(key):
            snapshot = self._snapshot_for(key, 0, self.reservations.all_holds())
            self.queue.done(key, await self.reservations.schedule_one(key.name, snapshot, self.solver.solve))
            return
        assembly, podgang = self.source.assemble(key)
        if isinstance(assembly, Waiting):
            log.debug("gang not ready", gang=str(key), reason=assembly.reason)
            self._ready_since.pop(key, None)
            self.timeouts.forget(key)
            self.queue.done(key, Code.SUCCESS)  # nothing to do until the gang's pods or PodGang change
            return
        if isinstance(assembly, Malformed):
            self._count(key, "invalid", podgang)
            pods = list(self.source.pods_of(key, podgang).values())
            self._failed(
                key, podgang, pods, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, assembly.reasons), REASON_INVALID
            )
            return
        self._ready_since.setdefault(key, now)
        hints = gang_hints(podgang, assembly.pods.values())
        if hints.problems:
            log.warning("Koordinator annotation ignored", gang=str(key), problems=list(hints.problems))
        held, reserved_nodes, owned = (
            self.reservations.for_gang(assembly.pods.values(), hints.reservation_ref)
            if self.reservations is not None
            else ([], (), ())
        )
        snapshot = self._snapshot_for(key, assembly.request.priority, held)
        refused = self.gate.admit(assembly, podgang, snapshot) if self.gate is not None else None
        if refused is not None:  # unknown queue, or a queue limit: not placed, nothing preempted for it
            self._count(key, "queue", podgang, assembly.pods)
            self._failed(key, podgang, list(assembly.pods.values()), refused, REASON_UNSCHEDULABLE)
            return
        start = self.clock.monotonic()
        self.solver.queue = self._queued_behind()
        try:
            result = await self._solve(snapshot, assembly.request, hints, reserved_nodes)
        finally:
            self.solver.queue = ()
        self.metrics.solve_time.observe(self.clock.monotonic() - start)
        if isinstance(result, Placement) and result.assignments:
            self.timeouts.forget(key)
            self._assume_and_bind(assembly, podgang, result, owned)
            return
        status = result.status if isinstance(result, Unschedulable) else Status(Code.UNSCHEDULABLE)
        if assembly.required_pods == 0:
            log.debug("no extra pod of the gang fits now", gang=str(key), reasons=list(status.reasons))
            self.queue.done(key, Code.UNSCHEDULABLE)
            return
        if status.code is Code.UNSCHEDULABLE:
            status = await self.post_filter.post_filter(assembly, snapshot, status)
        if self.timeouts.expired(key, hints.gang_timeout, now):
            self._gang_timed_out(assembly, podgang, status, hints.gang_timeout or 0.0)
            return
        self._count(key, _ATTEMPT.get(status.code, status.code.value.lower()), podgang, assembly.pods)
        reason = REASON_GANG_TIMEOUT if self.timeouts.timed_out(key) else REASON_UNSCHEDULABLE
        self._failed(key, podgang, list(assembly.pods.values()), status, reason)

    def _queued_behind(self) -> list[GangRequest]:
        """The ready gangs next in the queue, as placement requests, when placement looks ahead (else none)."""
        requests: list[GangRequest] = []
        for key in self.queue.peek(self.solver.lookahead):
            if self.reservations is not None and is_reservation_key(key):
                continue
            assembly, _ = self.source.assemble(key)
            if isinstance(assembly, ReadyGang):
                requests.append(assembly.request)
        return requests

    async def _solve(
        self, snapshot: Snapshot, request: GangRequest, hints: GangHints, reserved: Sequence[str] = ()
    ) -> PlacementResult:
        """Place the gang: on the nodes of the Reservations it owns first, then inside its Koordinator
        `network-topology-zone` (`grove_sched.koordinator.zone`), then anywhere."""
        levels = request.topology_levels or self.solver.options.default_levels
        return await place_preferring_zone(self.solver.solve, snapshot, request, hints.zone, levels, reserved)

    def _gang_timed_out(self, gang: ReadyGang, podgang: Obj | None, status: Status, timeout: float) -> None:
        """Koordinator's gang timeout (`grove_sched.koordinator.timeouts`): condition and Event `GangTimeout`,
        the capacity held for the gang released, and a retry after backoff."""
        key = gang.key
        self.post_filter.forget(key)
        message = f"the gang was not placed within its gang-timeout of {timeout:g}s"
        if status.reasons:
            message += ": " + status.message
        self._count(key, "gang_timeout", podgang, gang.pods)
        self._last_reasons[key] = (message,)
        log.info("gang timed out", gang=str(key), timeout=timeout, reasons=list(status.reasons))
        if not key.single:
            okey = ObjectKey(key.namespace, key.name)
            self.book.record(okey, ScheduledState(False, REASON_GANG_TIMEOUT, message))
            self._status_changed(okey)
        self.spawn(self.events.gang_timeout(podgang, gang.pods.values(), message))
        self.queue.done(key, Code.ERROR)

    def _wake(self, key: GangKey) -> None:
        """A gang's timeout deadline passed: give it an attempt now, whatever room it waits in."""
        if self._running:
            self.queue.add(key, self.source.gang_priority(key))

    def _snapshot_for(self, key: GangKey, priority: int, held: Sequence[BoundPod] = ()) -> Snapshot:
        """The cycle's snapshot, with the capacity held for other gangs this one must not take (a preemptor's
        nomination, a Reservation it does not own: `held`)."""
        snapshot = self.cache.snapshot()
        reserved = [*self.post_filter.reserved(key, priority), *held]
        if not reserved:
            return snapshot
        try:
            return snapshot.with_assumed(reserved)
        except KeyError:  # a reservation asks a resource no node offers any more: it holds nothing
            return snapshot

    # --- from a placement to bound pods (the binding cycle and recovery) ----------------------------------------

    def assume(self, gang: ReadyGang, placement: Placement) -> BindPlan:
        """Count the placement against capacity in the scheduler cache; returns what `bind` must bind."""
        uids = {name: str((pod.get("metadata") or {}).get("uid", "")) for name, pod in gang.pods.items()}
        self.cache.assume((pod, uids.get(pod.name, "")) for pod in assumed_pods(gang.request, placement))
        return BindPlan(
            namespace=gang.key.namespace,
            gang=gang.key.name,
            assignments=placement.assignments,
            uids=uids,
            group_of={ref.name: group.name for group in gang.request.groups for ref in group.pods},
            group_min={group.name: group.min_replicas for group in gang.request.groups},
        )

    async def bind(self, plan: BindPlan) -> BindOutcome:
        """Bind an assumed plan: if the gang misses its minimum (or binding raises) the whole assumption is
        forgotten; else only the pods that failed, and the bound ones await the informer's confirmation."""
        keys = [PodKey(plan.namespace, pod) for pod in plan.assignments]
        try:
            outcome = await self.binder.bind(plan)
        except BaseException:
            self.cache.forget(keys)
            raise
        if not outcome.ok:
            self.cache.forget(keys)
            return outcome
        self.cache.forget(PodKey(plan.namespace, pod) for pod in outcome.failed)
        self.cache.finish_binding((PodKey(plan.namespace, pod) for pod in outcome.bound), self.clock.monotonic())
        first = self.source.pod(plan.namespace, outcome.bound[0]) if outcome.bound else None
        name = self.source.name_of(GangKey(plan.namespace, plan.gang), None, {"pod": first} if first else {})
        self.metrics.pods_bound.labels(scheduler_name=name).inc(len(outcome.bound))
        return outcome

    def _assume_and_bind(
        self, gang: ReadyGang, podgang: Obj | None, placement: Placement, owned: Sequence[str] = ()
    ) -> None:
        """Assume the placement and start its binding cycle (capacity held for the gang is no longer needed: its
        assumed pods now hold it)."""
        plan = self.assume(gang, placement)
        self.post_filter.forget(gang.key)
        if self.gate is not None:
            self.gate.forget(gang.key)
        self.spawn(self._binding_cycle(gang, podgang, placement, plan, owned))

    async def _binding_cycle(
        self, gang: ReadyGang, podgang: Obj | None, placement: Placement, plan: BindPlan, owned: Sequence[str] = ()
    ) -> None:
        key = gang.key
        start = self.clock.monotonic()
        try:
            outcome = await self.bind(plan)
        except LeadershipLost as exc:
            log.warning("binding cycle stopped: leadership lost", gang=str(key), reason=str(exc))
            return
        except Exception as exc:
            log.exception("binding cycle crashed", gang=str(key))
            self._count(key, "error", podgang, gang.pods)
            self._failed(key, podgang, list(gang.pods.values()), Status(Code.ERROR, (f"binding failed: {exc!r}",)))
            return
        now = self.clock.monotonic()
        self.metrics.bind_time.observe(now - start)
        if not outcome.ok:
            self._count(key, "bind_failed", podgang, gang.pods)
            self.metrics.rollbacks.labels(cause="bind").inc()
            self._failed(key, podgang, list(gang.pods.values()), Status(Code.ERROR, outcome.reasons))
            return
        self._count(key, "scheduled", podgang, gang.pods)
        if self.reservations is not None and owned:  # the Reservations the gang owns now hold its bound pods
            self.reservations.allocate(owned, gang.pods, {p: plan.assignments[p] for p in outcome.bound})
        self.metrics.score.observe(placement.score)
        ready = self._ready_since.pop(key, None)
        if ready is not None:
            self.metrics.gang_latency.observe(now - ready)
        self._last_reasons.pop(key, None)
        nodes = {placement.assignments[p] for p in outcome.bound}
        message = f"placed {len(outcome.bound)} pod(s) on {len(nodes)} node(s) with {placement.stats.path}"
        if placement.domains:
            message += " in " + ", ".join(f"{scope}={value}" for scope, value in sorted(placement.domains.items()))
        if not key.single:
            self.book.record(
                ObjectKey(key.namespace, key.name), ScheduledState(True, REASON_SCHEDULED, message, placement.score)
            )
            self._status_changed(ObjectKey(key.namespace, key.name))
        log.info("gang bound", gang=str(key), pods=len(outcome.bound), nodes=len(nodes), score=placement.score)
        leftover = len(gang.pods) > len(outcome.bound)  # extras that did not fit wait for capacity
        self.queue.done(key, Code.UNSCHEDULABLE if leftover else Code.SUCCESS)
        self._publish_pending()
        await self.events.scheduled(podgang, gang.pods, {p: plan.assignments[p] for p in outcome.bound})

    # --- publishing ---------------------------------------------------------------------------------------------

    def _failed(
        self, key: GangKey, podgang: Obj | None, pods: list[Obj], status: Status, reason: str = REASON_UNSCHEDULABLE
    ) -> None:
        """A failed attempt: report it (condition `reason`, Events) and queue the gang by the status code."""
        self._report_failure(key, podgang, pods, status, reason)
        self.queue.done(key, status.code)

    def _report_failure(self, key: GangKey, podgang: Obj | None, pods: list[Obj], status: Status, reason: str) -> None:
        """Condition on the PodGang (via the status book) and FailedScheduling events, once per distinct verdict."""
        reasons = status.reasons
        log.info("gang not scheduled", gang=str(key), code=status.code.value, reason=reason, reasons=list(reasons))
        if self._last_reasons.get(key) == reasons:
            return
        self._last_reasons[key] = reasons
        if not key.single:
            okey = ObjectKey(key.namespace, key.name)
            self.book.record(okey, ScheduledState(False, reason, status.message))
            self._status_changed(okey)
        self.spawn(self.events.failed(podgang, pods, reasons))
        if self.pod_status is not None and status.code is not Code.ERROR:
            message = status.message or "the gang could not be placed"
            self.spawn(self.pod_status.unschedulable(pods, message, self.post_filter.nominated(key)))

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a coroutine in the background (awaited by `drain`)."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _count(
        self, key: GangKey, result: str, podgang: Obj | None = None, pods: Mapping[str, Obj] | None = None
    ) -> None:
        """One attempt, labelled with its result and the scheduler name the gang addressed."""
        name = self.source.name_of(key, podgang, pods)
        self.metrics.attempts.labels(result=result, scheduler_name=name).inc()

    def _publish_pending(self) -> None:
        self.metrics.set_pending({room.value: n for room, n in self.queue.counts().items()})
