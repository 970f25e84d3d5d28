"""The defragmentation report (`--defrag-report`): after the post-filter, say which lower-priority gangs, moved,
would let an unschedulable gang fit, where people look: a Normal `DefragmentationPlan` Event, the structured
log and metrics. It acts on nothing (no eviction, no move): acting on a plan comes with preemption.

It wraps the post-filter (preemption, or none) and runs only when that left the gang Unschedulable without a
nomination (preemption did not already make room for it). Candidates are the gangs of strictly lower priority
running in the snapshot, as preemption would evict, except gangs whose PodGang (or, for a gang of one pod, the
pod) carries `grove.io/movable: "false"`, a pod of no controller (a gang of one that nothing would recreate),
gangs with a binding in flight, gangs not served by this scheduler and pods only layered onto the snapshot (a
nomination's). Each is asked to be placed again whole: every pod it runs now, with its own constraints (assembled
as if its pods were unbound). The plan itself is `grove_sched.preemption.defrag`'s, bounded there, computed in a
worker thread.

A gang is searched at most once per `interval` seconds (10 by default, on the scheduler's clock): a waiting gang is
tried again at every cluster event that could help it, and each search costs up to its bound. Repeats aggregate:
the Event's message names only the gangs and their GPUs, so the same plan gives the same
message, and it is recorded (and counted in `defrag_plans_total`) only when a gang's plan changes; both records
are dropped when the gang binds or goes away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from grove_api.labels import ANNOTATION_MOVABLE
from grove_runtime.clock import Clock, LoopClock
from grove_sched.events import GangEvents
from grove_sched.gangs import GangKey, ReadyGang
from grove_sched.metrics import SchedulerMetrics
from grove_sched.model import BoundPod, Code, GangRequest, Status
from grove_sched.placement import Snapshot
from grove_sched.postfilter import PostFilter
from grove_sched.preemption.defrag import (
    DefragOptions,
    DefragPlan,
    Movable,
    aggregate_room,
    nearest_to_room,
    plan_defragmentation,
)
from grove_sched.preemption.preemptor import running_gangs
from grove_sched.preemption.victims import VictimGang
from grove_sched.source import GangSource

__all__ = ["DefragReport", "plan_message"]

log = structlog.get_logger("grove_sched.defrag")
Obj = Mapping[str, Any]


class DefragReport:
    """A `PostFilter` that runs `inner`, then reports a defragmentation plan for a gang still left waiting."""

    def __init__(
        self,
        inner: PostFilter,
        source: GangSource,
        events: GangEvents,
        metrics: SchedulerMetrics,
        *,
        options: DefragOptions | None = None,
        interval: float = 10.0,
        clock: Clock | None = None,
    ) -> None:
        self.inner = inner
        self.source = source
        self.events = events
        self.metrics = metrics
        self.options = options or DefragOptions()
        self.interval = interval
        """Seconds before the same gang is searched again (its attempts may come at every cluster event)."""
        self.clock = clock or LoopClock()
        self._reported: dict[GangKey, str] = {}
        self._searched: dict[GangKey, float] = {}

    # --- the PostFilter protocol (delegated) --------------------------------------------------------------------

    async def post_filter(self, gang: ReadyGang, snapshot: Snapshot, status: Status) -> Status:
        """The inner post-filter's status, unchanged; a plan is reported when the gang is left waiting."""
        status = await self.inner.post_filter(gang, snapshot, status)
        if status.code is Code.UNSCHEDULABLE and not self.inner.nominated(gang.key):
            await self.report(gang, snapshot)
        return status

    def reserved(self, gang: GangKey, priority: int) -> Sequence[BoundPod]:
        """What the inner post-filter holds."""
        return self.inner.reserved(gang, priority)

    def nominated(self, gang: GangKey) -> Mapping[str, str]:
        """The inner post-filter's nominations."""
        return self.inner.nominated(gang)

    def forget(self, gang: GangKey) -> None:
        """The gang bound or is gone: its reported plan is forgotten too."""
        self._reported.pop(gang, None)
        self._searched.pop(gang, None)
        self.inner.forget(gang)

    # --- the report ---------------------------------------------------------------------------------------------

    async def report(self, gang: ReadyGang, snapshot: Snapshot) -> DefragPlan | None:
        """Search a plan for `gang` on `snapshot` and report it when it is new; the plan, or None."""
        key = gang.key
        now = self.clock.monotonic()
        last = self._searched.get(key)
        if last is not None and now - last < self.interval:
            self.metrics.defrag_searches.labels(result="skipped").inc()
            return None
        self._searched[key] = now
        placement = self.options.placement
        if aggregate_room(snapshot, gang.request, placement) is None:
            self.metrics.defrag_searches.labels(result="not_fragmented").inc()
            return None
        movable = self.movable(gang, snapshot)
        plan = await asyncio.to_thread(plan_defragmentation, snapshot, gang.request, movable, self.options)
        if plan is None:
            self.metrics.defrag_searches.labels(result="no_plan").inc()
            log.debug("no defragmentation plan", gang=str(key), candidates=len(movable))
            return None
        self.metrics.defrag_searches.labels(result="plan").inc()
        message = plan_message(plan)
        if self._reported.get(key) == message:
            return plan
        self._reported[key] = message
        self.metrics.defrag_plans.inc()
        self.metrics.defrag_plan_gangs.observe(len(plan.moved))
        log.info(
            "defragmentation plan",
            gang=str(key),
            moved=[str(m.key) for m in plan.moved],
            gpus=plan.gpus,
            domain=plan.domain,
            placement=dict(plan.placement.assignments),
            moves={str(k): dict(p.assignments) for k, p in plan.moves.items()},
            searches=plan.searches,
            checks=plan.checks,
        )
        podgang = None if key.single else self.source.podgang(key)
        await self.events.defragmentation_plan(podgang, gang.pods.values(), message)
        return plan

    def movable(self, gang: ReadyGang, snapshot: Snapshot) -> list[Movable]:
        """The gangs the plan may move (see the module docstring), at most the planner's `max_candidates`, those
        whose move would leave a node emptiest first; each with the request that places its pods again."""
        candidates: list[VictimGang] = []
        for owner, running in running_gangs(self.source, snapshot, {gang.key}):
            objs = [self.source.pod(p.namespace, p.name) for p in running]
            if any(
                obj is None or (obj.get("spec") or {}).get("nodeName") != p.node
                for obj, p in zip(objs, running, strict=True)
            ):
                continue  # layered onto the snapshot (a nomination's), or gone meanwhile
            priority = self.source.gang_priority(owner, objs[0])
            if priority < gang.request.priority and self._movable(owner, objs[0]):
                candidates.append(VictimGang(owner, priority, tuple(running)))
        found: list[Movable] = []
        for candidate in nearest_to_room(snapshot, candidates, self.options.max_candidates):
            request = self._request(candidate.key, candidate.pods)
            if request is not None:
                found.append(Movable(candidate.key, candidate.pods, request))
        return found

    def _movable(self, owner: GangKey, pod: Obj | None) -> bool:
        """Not opted out, and (a gang of one) owned by a controller that would recreate the pod."""
        holder = pod if owner.single else self.source.podgang(owner)
        meta = (holder or {}).get("metadata") or {}
        if str((meta.get("annotations") or {}).get(ANNOTATION_MOVABLE, "")).lower() == "false":
            return False
        return not owner.single or bool(meta.get("ownerReferences"))

    def _request(self, owner: GangKey, running: Sequence[BoundPod]) -> GangRequest | None:
        """The request placing the running pods again, all of them (assembled with the pods shown unbound, each
        PodGroup's minimum = its running pods); None when the gang does not assemble so (not ours, odd)."""
        names = {p.name for p in running}
        pods: dict[str, Obj] = {}
        for name in names:
            obj = self.source.pod(owner.namespace, name)
            if obj is not None:
                spec = {k: v for k, v in (obj.get("spec") or {}).items() if k != "nodeName"}
                pods[name] = {**obj, "spec": spec}
        podgang = None if owner.single else self.source.podgang(owner)
        if podgang is not None:
            groups = []
            for raw in (podgang.get("spec") or {}).get("podgroups") or ():
                refs = [r for r in raw.get("podReferences") or () if str(r.get("name")) in names]
                if refs:
                    groups.append({**raw, "podReferences": refs, "minReplicas": len(refs)})
            podgang = {**podgang, "spec": {**(podgang.get("spec") or {}), "podgroups": groups}}
        assembly = self.source.assemble_with(owner, podgang, pods)
        return assembly.request if isinstance(assembly, ReadyGang) else None


def plan_message(plan: DefragPlan) -> str:
    """The Event message: the same plan gives the same words (so repeats aggregate), within 1,024 characters."""
    names = ", ".join(f"{m.key.namespace}/{m.key.name} ({m.gpus} GPUs)" for m in plan.moved)
    message = (
        f"moving {len(plan.moved)} lower-priority gang(s) holding {plan.gpus} GPUs elsewhere would let this gang fit "
        f"(free capacity is there, but scattered): {names}; not acted on"
    )
    return message if len(message) <= 1024 else message[:1021] + "..."
