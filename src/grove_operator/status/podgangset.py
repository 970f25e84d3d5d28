"""PodGangSet status: pod counts, whether the gang is placed, and the Scheduled / Ready conditions saying why not.

`Scheduled` repeats what the scheduler said on the PodGang (its reason and message, "0/64 nodes are available:
...") until at least `minAvailable` pods are bound, so `kubectl get pgs -o wide` and `kubectl describe pgs` answer
"why is it pending" without a look at the PodGang. The counts follow the PodClique's: `replicas` counts live pods,
`scheduledReplicas` bound ones, `readyReplicas` those with Ready=True.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from grove_api import CONDITION_READY, CONDITION_SCHEDULED, PodGang, PodGangSet
from grove_api import dynamo_v1 as v1
from grove_operator.desired.gates import has_grove_gate
from grove_operator.desired.layout import is_terminating
from grove_operator.status._conditions import find_condition, set_condition

__all__ = [
    "REASON_GANG_SCHEDULED",
    "REASON_MIN_AVAILABLE_READY",
    "REASON_NOT_READY",
    "REASON_PODS_GATED",
    "REASON_PODS_PENDING",
    "compute_podgangset_status",
]

REASON_GANG_SCHEDULED = "GangScheduled"
REASON_PODS_GATED = "PodsGated"
REASON_PODS_PENDING = "PodsPending"
REASON_MIN_AVAILABLE_READY = "MinAvailableReady"
REASON_NOT_READY = "InsufficientReadyPods"


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _scheduled(live: Sequence[Mapping[str, Any]], gang: PodGang | None, bound: int, minimum: int) -> tuple[str, str]:
    """(reason, message) of a gang that is not placed: the scheduler's words when it has spoken."""
    said = find_condition(gang.status.conditions if gang is not None and gang.status else None, CONDITION_SCHEDULED)
    if said is not None and said.status == "False":
        return said.reason, said.message
    gated = sum(1 for p in live if has_grove_gate(p))
    if gated:
        return REASON_PODS_GATED, f"{gated} of {len(live)} pods wait for the PodGang to reference them"
    return REASON_PODS_PENDING, f"{bound} of {minimum} pods the gang needs are bound"


def compute_podgangset_status(
    pgs: PodGangSet, pods: Sequence[Mapping[str, Any]], gang: PodGang | None, now: datetime
) -> dict[str, Any]:
    """The complete status (without `lastErrors` and `observedGeneration`, which the skeleton adds)."""
    live = [p for p in pods if not is_terminating(p)]
    bound = sum(1 for p in live if (p.get("spec") or {}).get("nodeName"))
    ready = sum(1 for p in live if _ready(p))
    minimum = pgs.spec.effective_min_available()
    previous = pgs.status.conditions if pgs.status is not None else None
    generation = pgs.metadata.generation
    conditions: list[dict[str, Any]] = []
    placed = bound >= minimum and len(live) > 0
    if placed:
        reason, message = REASON_GANG_SCHEDULED, f"{bound} pods bound (the gang needs {minimum})"
    else:
        reason, message = _scheduled(live, gang, bound, minimum)
    verdict = "True" if placed else "False"
    set_condition(conditions, previous, CONDITION_SCHEDULED, verdict, reason, message, now, generation)
    enough = ready >= minimum and len(live) > 0
    set_condition(
        conditions,
        previous,
        CONDITION_READY,
        "True" if enough else "False",
        REASON_MIN_AVAILABLE_READY if enough else REASON_NOT_READY,
        f"{ready} of {len(live)} pods ready (the gang needs {minimum})",
        now,
        generation,
    )
    return {
        "replicas": len(live),
        "readyReplicas": ready,
        "scheduledReplicas": bound,
        "scheduled": placed,
        "selector": f"{v1.LABEL_PODGANGSET}={pgs.metadata.name or ''}",
        "conditions": conditions,
    }
