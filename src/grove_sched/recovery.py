"""Start-up recovery: no gang stays bound below its minimum, even after the scheduler died in the middle of a bind.

Why: the binding cycle rolls back on failure, but a process that is killed between two binding POSTs cannot. On
start, before the first scheduling cycle, every PodGang that has bound pods, misses the minimum of some group and
was never marked `Scheduled=True` (so it is not a placed gang that merely lost a pod later, which is the
operator's business) is either **completed**, if its remaining pods still fit on the nodes the placement would
choose (assembly pins them to the domains the bound pods already occupy), or **rolled back** by deleting its bound
pods (the operator recreates them, gated, and the gang is scheduled afresh).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from grove_api.podgang import CONDITION_SCHEDULED
from grove_sched.binder import BindPlan
from grove_sched.cache import PodKey
from grove_sched.gangs import GangKey, ReadyGang, is_ours
from grove_sched.model import Placement
from grove_sched.placement import assumed_pods, place
from grove_sched.podgang_status import PODGANGS
from grove_sched.scheduler import Scheduler

__all__ = ["RecoveryReport", "partially_bound", "recover"]

log = structlog.get_logger("grove_sched.recovery")
Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """Which gangs recovery completed and which it rolled back."""

    completed: tuple[GangKey, ...]
    rolled_back: tuple[GangKey, ...]


def partially_bound(podgang: Obj, pods: Mapping[str, Obj]) -> bool:
    """Some pods bound, some group below its minimum, and the gang never reported as scheduled."""
    conditions = (podgang.get("status") or {}).get("conditions") or ()
    if any(c.get("type") == CONDITION_SCHEDULED and c.get("status") == "True" for c in conditions):
        return False
    any_bound = False
    below = False
    for group in (podgang.get("spec") or {}).get("podgroups") or ():
        names = [str(r.get("name")) for r in group.get("podReferences") or ()]
        bound = sum(1 for n in names if n in pods and (pods[n].get("spec") or {}).get("nodeName"))
        any_bound = any_bound or bound > 0
        below = below or bound < int(group.get("minReplicas") or 0)
    return any_bound and below


async def recover(scheduler: Scheduler) -> RecoveryReport:
    """Complete or roll back every partially bound gang; runs once, before the scheduling loop."""
    completed: list[GangKey] = []
    rolled: list[GangKey] = []
    for podgang in sorted(
        scheduler.informers.list(PODGANGS), key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])
    ):
        meta = podgang["metadata"]
        key = GangKey(str(meta["namespace"]), str(meta["name"]))
        pods = scheduler.pods_of(key, podgang)
        if not is_ours(podgang, pods, scheduler.scheduler_name) or not partially_bound(podgang, pods):
            continue
        assembly, _ = scheduler.assemble(key)
        if isinstance(assembly, ReadyGang):
            result = await asyncio.to_thread(place, scheduler.cache.snapshot(), assembly.request, scheduler.options)
            if isinstance(result, Placement) and await _complete(scheduler, assembly, result):
                log.info("recovered partially bound gang by completing it", gang=str(key))
                completed.append(key)
                continue
        bound = {
            name: str((pod.get("metadata") or {}).get("uid", ""))
            for name, pod in pods.items()
            if (pod.get("spec") or {}).get("nodeName")
        }
        _, stuck = await scheduler.binder.delete_pods(key.namespace, bound)
        scheduler.metrics.rollbacks.labels(cause="recovery").inc()
        log.warning(
            "rolled back partially bound gang", gang=str(key), deleted=len(bound) - len(stuck), failed=list(stuck)
        )
        rolled.append(key)
    return RecoveryReport(tuple(completed), tuple(rolled))


async def _complete(scheduler: Scheduler, gang: ReadyGang, placement: Placement) -> bool:
    """Bind the rest of a partially bound gang; on failure the binder has rolled back this attempt's binds."""
    uids = {name: str((pod.get("metadata") or {}).get("uid", "")) for name, pod in gang.pods.items()}
    scheduler.cache.assume((pod, uids.get(pod.name, "")) for pod in assumed_pods(gang.request, placement))
    plan = BindPlan(
        namespace=gang.key.namespace,
        gang=gang.key.name,
        assignments=placement.assignments,
        uids=uids,
        group_of={ref.name: group.name for group in gang.request.groups for ref in group.pods},
        group_min={group.name: group.min_replicas for group in gang.request.groups},
    )
    outcome = await scheduler.binder.bind(plan)
    keys = [PodKey(gang.key.namespace, name) for name in placement.assignments]
    if not outcome.ok:
        scheduler.cache.forget(keys)
        return False
    scheduler.cache.forget(PodKey(gang.key.namespace, name) for name in outcome.failed)
    scheduler.cache.finish_binding((PodKey(gang.key.namespace, n) for n in outcome.bound), scheduler.clock.monotonic())
    scheduler.metrics.pods_bound.inc(len(outcome.bound))
    return True
