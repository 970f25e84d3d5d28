"""Start-up recovery: no gang stays bound below its minimum, even after the scheduler died in the middle of a bind.

Why: the binding cycle rolls back on failure, but a process that is killed between two binding POSTs cannot (nor
does one that lost its lease mid-gang: its binder is fenced). On start, before the first scheduling cycle, every
PodGang that has bound pods, misses the minimum of some group and was never marked `Scheduled=True` (so it is not
a placed gang that merely lost a pod later, which is the operator's business) is either **completed**, if its
remaining pods still fit on the nodes the placement would choose (assembly pins them to the domains the bound pods
already occupy), or **rolled back** by deleting its bound pods (the operator recreates them, gated, and the gang is
scheduled afresh). Completion goes through the scheduler's own solve, `assume` and `bind`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from grove_api.podgang import CONDITION_SCHEDULED
from grove_sched.gangs import GangKey, ReadyGang, is_ours, min_replicas
from grove_sched.model import Placement
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
        below = below or bound < min_replicas(group)
    return any_bound and below


async def recover(scheduler: Scheduler) -> RecoveryReport:
    """Complete or roll back every partially bound gang; runs once, before the scheduling loop."""
    source = scheduler.source
    completed: list[GangKey] = []
    rolled: list[GangKey] = []
    for podgang in source.podgangs():
        meta = podgang["metadata"]
        key = GangKey(str(meta["namespace"]), str(meta["name"]))
        pods = source.pods_of(key, podgang)
        if not is_ours(podgang, pods, source.scheduler_name) or not partially_bound(podgang, pods):
            continue
        if await _complete(scheduler, key):
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


async def _complete(scheduler: Scheduler, key: GangKey) -> bool:
    """Place and bind the rest of a partially bound gang; on failure the binder has rolled back this attempt."""
    assembly, _ = scheduler.source.assemble(key)
    if not isinstance(assembly, ReadyGang):
        return False
    result = await scheduler.solver.solve(scheduler.cache.snapshot(), assembly.request)
    if not isinstance(result, Placement):
        return False
    outcome = await scheduler.bind(scheduler.assume(assembly, result))
    return outcome.ok
