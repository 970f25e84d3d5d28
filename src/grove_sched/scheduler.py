"""The scheduling loop: one gang at a time through placement, then its binds in the background.

Why this shape (kube-scheduler's `ScheduleOne`): decisions must be serial, since each placement has to see the
capacity the previous one took, but binding is I/O and may run concurrently. So the cycle is:

1. pop the best gang from the queue;
2. assemble it from the informer caches (`gangs.assemble`), treating assumed pods as bound;
3. take the cache's immutable snapshot and `place` it (see "where the solver runs" below);
4. `assume` the placement in the scheduler cache, so the next cycle already sees the capacity as used;
5. spawn the binding cycle and go back to 1.

The binding cycle binds through `Binder` (all-or-rollback on the minimum), then on success records the verdict
and the `Scheduled` events; on failure it forgets the assumption and puts the gang into backoff. The gang stays
"in flight" in the queue until its binding cycle ends, so no second attempt can race the first.

Where the solver runs: a greedy placement costs a few ms of CPU, but handed to a worker thread it took ~10x that
in wall time in a busy scheduler: the thread and the event loop (binds, Events, watch decoding of the previous
gangs) fight over the GIL, and the result then waits its turn in the loop's ready queue (measured at 1,000 nodes:
3.5 ms CPU, 11 ms in the thread, 23 ms until the cycle resumed). So `place` runs on the loop thread while solves
stay short: whenever the previous solve took at most `inline_solve_limit` seconds of CPU. After a longer one
(CP-SAT, which releases the GIL while it searches) the solves run in a worker thread until one is short again,
so a run of long solves blocks the loop at most once. CPU time, not wall time, decides, so a solve slowed by a
busy machine does not flip the mode. Each cycle first yields to the loop, so binds and informer events of
earlier gangs keep flowing between cycles.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import structlog

from grove_api.labels import LABEL_PODGANG
from grove_runtime.cache import Cache
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import PODS, PRIORITYCLASSES
from grove_sched.binder import Binder, BindPlan
from grove_sched.cache import PodKey, SchedulerCache
from grove_sched.events import GangEvents
from grove_sched.gangs import Assembly, AssemblyContext, GangKey, Malformed, ReadyGang, Waiting, assemble
from grove_sched.metrics import SchedulerMetrics
from grove_sched.model import GangRequest, Placement, PlacementOptions, Unschedulable
from grove_sched.placement import Snapshot, assumed_pods, place
from grove_sched.podgang_status import (
    PODGANGS,
    REASON_INVALID,
    REASON_SCHEDULED,
    REASON_UNSCHEDULABLE,
    ScheduledState,
    StatusBook,
)
from grove_sched.queue import Outcome, QueueClosed, SchedulingQueue

__all__ = ["GANG_INDEX", "Scheduler", "gang_index"]

log = structlog.get_logger("grove_sched.scheduler")
Obj = Mapping[str, Any]
GANG_INDEX = "grove-sched-podgang"


def gang_index(pod: Obj) -> tuple[str, ...]:
    """Pod index value `namespace/podgang` for pods labelled with a PodGang."""
    meta = pod.get("metadata") or {}
    gang = (meta.get("labels") or {}).get(LABEL_PODGANG)
    return (f"{meta.get('namespace', '')}/{gang}",) if gang else ()


class Scheduler:
    """Owns the queue, the scheduler cache and the binding cycles; reads objects from the shared informer cache."""

    def __init__(
        self,
        informers: Cache,
        binder: Binder,
        events: GangEvents,
        *,
        scheduler_name: str = "grove-scheduler",
        queue: SchedulingQueue[GangKey] | None = None,
        cache: SchedulerCache | None = None,
        book: StatusBook | None = None,
        metrics: SchedulerMetrics | None = None,
        options: PlacementOptions | None = None,
        clock: Clock | None = None,
        inline_solve_limit: float = 0.02,
    ) -> None:
        self.informers = informers
        self.binder = binder
        self.events = events
        self.scheduler_name = scheduler_name
        self.clock = clock or LoopClock()
        self.queue: SchedulingQueue[GangKey] = queue or SchedulingQueue(clock=self.clock)
        self.cache = cache or SchedulerCache()
        self.book = book or StatusBook()
        self.metrics = metrics or SchedulerMetrics()
        self.options = options or PlacementOptions()
        self._status_changed: Callable[[ObjectKey], None] = lambda _key: None
        self._ready_since: dict[GangKey, float] = {}
        self._last_reasons: dict[GangKey, tuple[str, ...]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._inline_limit = inline_solve_limit
        self._last_solve_cpu = 0.0

    def set_status_trigger(self, trigger: Callable[[ObjectKey], None]) -> None:
        """Called with a PodGang's key whenever its recorded verdict changes (the status controller's enqueue)."""
        self._status_changed = trigger

    def forget_gang(self, key: GangKey) -> None:
        """The gang is gone (PodGang or lone pod deleted): drop it from the queue and every per-gang record."""
        self.queue.remove(key)
        self._ready_since.pop(key, None)
        self._last_reasons.pop(key, None)
        if not key.single:
            self.book.drop(ObjectKey(key.namespace, key.name))

    # --- reading the world --------------------------------------------------------------------------------------

    def podgang(self, key: GangKey) -> Obj | None:
        """The PodGang of a (non-single) gang from the informer cache."""
        return None if key.single else self.informers.get(PODGANGS, ObjectKey(key.namespace, key.name))

    def pods_of(self, key: GangKey, podgang: Obj | None) -> dict[str, Obj]:
        """Referenced and labelled pods of a gang by name; assumed pods appear bound to their assumed node."""
        found: dict[str, Obj] = {}
        if key.single:
            pod = self.informers.get(PODS, ObjectKey(key.namespace, key.name))
            if pod is not None:
                found[key.name] = pod
        else:
            for pod in self.informers.by_index(PODS, GANG_INDEX, f"{key.namespace}/{key.name}"):
                found[str(pod["metadata"]["name"])] = pod
            for group in ((podgang or {}).get("spec") or {}).get("podgroups") or ():
                for ref in group.get("podReferences") or ():
                    name = str(ref.get("name"))
                    if name not in found:
                        referenced = self.informers.get(PODS, ObjectKey(key.namespace, name))
                        if referenced is not None:
                            found[name] = referenced
        for name, member in list(found.items()):
            node = self.cache.assumed_node(PodKey(key.namespace, name))
            if node is not None and not (member.get("spec") or {}).get("nodeName"):
                found[name] = {**member, "spec": {**(member.get("spec") or {}), "nodeName": node}}
        return found

    def priority_of(self, name: str) -> int | None:
        """Value of a PriorityClass, if the informer knows it."""
        try:
            pc = self.informers.get(PRIORITYCLASSES, ObjectKey("", name))
        except KeyError:
            return None
        return int(pc.get("value") or 0) if pc is not None else None

    def gang_priority(self, key: GangKey, pod: Obj | None = None) -> int:
        """PriorityClass value of the PodGang's class, else of the pod's class, else the pod's `spec.priority`."""
        if pod is None and key.single:
            pod = self.informers.get(PODS, ObjectKey(key.namespace, key.name))
        pod_spec = (pod or {}).get("spec") or {}
        for name in (
            ((self.podgang(key) or {}).get("spec") or {}).get("priorityClassName"),
            pod_spec.get("priorityClassName"),
        ):
            value = self.priority_of(str(name)) if name else None
            if value is not None:
                return value
        return int(pod_spec.get("priority") or 0)

    def refresh_priorities(self) -> None:
        """Re-resolve every queued gang's priority (PriorityClasses may have synced after the gangs were queued)."""
        for key in self.queue.held():
            self.queue.set_priority(key, self.gang_priority(key))

    def assemble(self, key: GangKey) -> tuple[Assembly, Obj | None]:
        """Assemble one gang from the current caches."""
        podgang = self.podgang(key)
        ctx = AssemblyContext(
            scheduler_name=self.scheduler_name,
            node_label_keys=self.cache.node_label_keys,
            node_labels=self.cache.node_labels,
            priority_of=self.priority_of,
        )
        return assemble(key, podgang, self.pods_of(key, podgang), ctx), podgang

    # --- the loop -----------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Schedule until cancelled; in-flight binding cycles are awaited (not cancelled) on the way out."""
        self.refresh_priorities()
        try:
            while True:
                await asyncio.sleep(0)  # let binds and informer events of earlier gangs run between cycles
                try:
                    key = await self.queue.pop()
                except QueueClosed:
                    return
                self._publish_pending()
                try:
                    await self.schedule_one(key)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("scheduling cycle failed", gang=str(key))
                    self.metrics.attempts.labels(result="error").inc()
                    self.queue.done(key, Outcome.ERROR)
                self._publish_pending()
        finally:
            self.queue.close()
            await self.drain()

    async def drain(self) -> None:
        """Wait for every running binding cycle (a cancelled bind would leave a partial gang behind)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def schedule_one(self, key: GangKey) -> None:
        """One scheduling cycle for `key` (popped from the queue)."""
        now = self.clock.monotonic()
        self.cache.cleanup_expired(now)
        assembly, podgang = self.assemble(key)
        if isinstance(assembly, Waiting):
            log.debug("gang not ready", gang=str(key), reason=assembly.reason)
            self._ready_since.pop(key, None)
            self.queue.done(key, Outcome.SCHEDULED)
            return
        if isinstance(assembly, Malformed):
            self.metrics.attempts.labels(result="invalid").inc()
            pods = list(self.pods_of(key, podgang).values())
            self._report_failure(key, podgang, pods, assembly.reasons, REASON_INVALID)
            self.queue.done(key, Outcome.UNSCHEDULABLE)
            return
        self._ready_since.setdefault(key, now)
        snapshot = self.cache.snapshot()
        start = self.clock.monotonic()
        result = await self._solve(snapshot, assembly.request)
        self.metrics.solve_time.observe(self.clock.monotonic() - start)
        if isinstance(result, Unschedulable) and assembly.required_pods == 0:
            log.debug("no extra pod of the gang fits now", gang=str(key), reasons=list(result.reasons))
            self.queue.done(key, Outcome.UNSCHEDULABLE)
            return
        if isinstance(result, Unschedulable):
            self.metrics.attempts.labels(result="unschedulable").inc()
            self._report_failure(key, podgang, list(assembly.pods.values()), result.reasons, REASON_UNSCHEDULABLE)
            self.queue.done(key, Outcome.UNSCHEDULABLE)
            return
        if not result.assignments:
            log.debug("no extra pod of the gang fits now", gang=str(key))
            self.queue.done(key, Outcome.UNSCHEDULABLE)
            return
        self._assume_and_bind(assembly, podgang, result)

    async def _solve(self, snapshot: Snapshot, request: GangRequest) -> Placement | Unschedulable:
        """`place` on the loop thread while solves are short, else in a worker thread (module docstring)."""
        if self._inline_limit > 0 and self._last_solve_cpu <= self._inline_limit:
            result, self._last_solve_cpu = _timed_place(snapshot, request, self.options)
            if self._last_solve_cpu > self._inline_limit:
                log.debug("long solve on the loop, the next one runs in a worker thread", gang=request.name)
            return result
        result, self._last_solve_cpu = await asyncio.to_thread(_timed_place, snapshot, request, self.options)
        return result

    def _assume_and_bind(self, gang: ReadyGang, podgang: Obj | None, placement: Placement) -> None:
        """Assume the placement and start its binding cycle."""
        uids = {name: str((pod.get("metadata") or {}).get("uid", "")) for name, pod in gang.pods.items()}
        assumed = assumed_pods(gang.request, placement)
        self.cache.assume((pod, uids.get(pod.name, "")) for pod in assumed)
        plan = BindPlan(
            namespace=gang.key.namespace,
            gang=gang.key.name,
            assignments=placement.assignments,
            uids=uids,
            group_of={ref.name: group.name for group in gang.request.groups for ref in group.pods},
            group_min={group.name: group.min_replicas for group in gang.request.groups},
        )
        task = asyncio.get_running_loop().create_task(self._binding_cycle(gang, podgang, placement, plan))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _binding_cycle(self, gang: ReadyGang, podgang: Obj | None, placement: Placement, plan: BindPlan) -> None:
        key = gang.key
        start = self.clock.monotonic()
        try:
            outcome = await self.binder.bind(plan)
        except Exception as exc:
            log.exception("binding cycle crashed", gang=str(key))
            self.cache.forget(PodKey(key.namespace, p) for p in plan.assignments)
            self.metrics.attempts.labels(result="error").inc()
            self._report_failure(
                key, podgang, list(gang.pods.values()), (f"binding failed: {exc!r}",), REASON_UNSCHEDULABLE
            )
            self.queue.done(key, Outcome.ERROR)
            return
        now = self.clock.monotonic()
        self.metrics.bind_time.observe(now - start)
        failed = [PodKey(key.namespace, p) for p in outcome.failed]
        if not outcome.ok:
            self.cache.forget(PodKey(key.namespace, p) for p in plan.assignments)
            self.metrics.attempts.labels(result="bind_failed").inc()
            self.metrics.rollbacks.labels(cause="bind").inc()
            self._report_failure(key, podgang, list(gang.pods.values()), outcome.reasons, REASON_UNSCHEDULABLE)
            self.queue.done(key, Outcome.ERROR)
            return
        self.cache.forget(failed)
        self.cache.finish_binding((PodKey(key.namespace, p) for p in outcome.bound), now)
        self.metrics.attempts.labels(result="scheduled").inc()
        self.metrics.pods_bound.inc(len(outcome.bound))
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
        leftover = len(gang.pods) > len(outcome.bound)
        self.queue.done(key, Outcome.UNSCHEDULABLE if leftover else Outcome.SCHEDULED)
        self._publish_pending()
        await self.events.scheduled(gang.pods, {p: plan.assignments[p] for p in outcome.bound})

    def _report_failure(
        self, key: GangKey, podgang: Obj | None, pods: list[Obj], reasons: tuple[str, ...] | list[str], reason: str
    ) -> None:
        """Condition on the PodGang (via the status book) and FailedScheduling events, once per distinct verdict."""
        reasons = tuple(reasons)
        log.info("gang not scheduled", gang=str(key), reason=reason, reasons=list(reasons))
        if self._last_reasons.get(key) == reasons:
            return
        self._last_reasons[key] = reasons
        if not key.single:
            okey = ObjectKey(key.namespace, key.name)
            self.book.record(okey, ScheduledState(False, reason, "; ".join(reasons)))
            self._status_changed(okey)
        self.spawn(self.events.failed(podgang, pods, reasons))

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a best-effort coroutine in the background (awaited by `drain`)."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _publish_pending(self) -> None:
        self.metrics.set_pending({room.value: n for room, n in self.queue.counts().items()})

    @staticmethod
    def creation_time(obj: Obj) -> float:
        """Creation timestamp as epoch seconds (queue age); 0 when absent or unparsable."""
        raw = (obj.get("metadata") or {}).get("creationTimestamp")
        if not raw:
            return 0.0
        with contextlib.suppress(ValueError):
            return dt.datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
        return 0.0


def _timed_place(
    snapshot: Snapshot, request: GangRequest, options: PlacementOptions
) -> tuple[Placement | Unschedulable, float]:
    """`place` and the CPU seconds it took on the calling thread."""
    start = time.thread_time()
    result = place(snapshot, request, options)
    return result, time.thread_time() - start
