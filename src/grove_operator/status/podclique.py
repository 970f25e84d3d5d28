"""PodClique status: pod counts and the PodCliqueScheduled / MinAvailableBreached / PodCliqueAvailable conditions.

The counts drive `kubectl get pclq`, the PCSG and PCS availability rollups and gang termination, so they follow
upstream exactly: `replicas` counts non-terminating pods, `scheduledReplicas` pods with PodScheduled=True, and the
breach check subtracts crash-looping and started-but-not-ready pods from the scheduled ones (§3.6). `updatedReplicas`
counts pods on the newest template of the clique. `PodCliqueAvailable` is Grove's addition: it remembers whether the
PodClique has been available once since it was created, which gang termination needs (`lifecycle.termination`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from grove_api import (
    CONDITION_MIN_AVAILABLE_BREACHED,
    CONDITION_PODCLIQUE_AVAILABLE,
    CONDITION_PODCLIQUE_SCHEDULED,
    PodClique,
)
from grove_api import labels as glabels
from grove_operator.desired.layout import is_terminating
from grove_operator.status._conditions import find_condition, set_condition

__all__ = [
    "REASON_AVAILABLE",
    "REASON_INSUFFICIENT_READY_PODS",
    "REASON_INSUFFICIENT_SCHEDULED_PODS",
    "REASON_NOT_YET_AVAILABLE",
    "REASON_SCHEDULED_BELOW_MIN_AVAILABLE",
    "REASON_SUFFICIENT_READY_PODS",
    "REASON_SUFFICIENT_SCHEDULED_PODS",
    "REASON_UPDATE_IN_PROGRESS",
    "PodCounts",
    "compute_podclique_status",
    "count_pods",
    "update_in_progress",
]

REASON_SUFFICIENT_SCHEDULED_PODS = "SufficientScheduledPods"
REASON_INSUFFICIENT_SCHEDULED_PODS = "InsufficientScheduledPods"
REASON_UPDATE_IN_PROGRESS = "UpdateInProgress"
REASON_SCHEDULED_BELOW_MIN_AVAILABLE = "ScheduledReplicasBelowMinAvailable"
REASON_INSUFFICIENT_READY_PODS = "InsufficientReadyPods"
REASON_SUFFICIENT_READY_PODS = "SufficientReadyPods"
REASON_AVAILABLE = "MinAvailableReady"
REASON_NOT_YET_AVAILABLE = "NotYetAvailable"


def _condition_true(pod: Mapping[str, Any], type_: str) -> bool:
    return any(
        c.get("type") == type_ and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or ()
    )


def _gated(pod: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "SchedulingGated"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def _unhealthy(pod: Mapping[str, Any]) -> bool:
    """Not ready and either crashed before (non-zero last exit code) or started but not ready."""
    if _condition_true(pod, "Ready"):
        return False
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        terminated = (cs.get("lastState") or {}).get("terminated") or {}
        if terminated.get("exitCode", 0) != 0:
            return True
        if cs.get("started") is True and cs.get("ready") is False:
            return True
    return False


class PodCounts:
    """The per-pod tallies a PodClique status is made of."""

    def __init__(self, pods: Sequence[Mapping[str, Any]], target_hash: str | None) -> None:
        live = [p for p in pods if not is_terminating(p)]
        self.replicas = len(live)
        self.ready = sum(1 for p in live if _condition_true(p, "Ready"))
        scheduled = [p for p in live if _condition_true(p, "PodScheduled")]
        self.scheduled = len(scheduled)
        self.gated = sum(1 for p in live if _gated(p))
        self.updated = sum(
            1
            for p in live
            if target_hash is not None
            and (p.get("metadata") or {}).get("labels", {}).get(glabels.LABEL_POD_TEMPLATE_HASH) == target_hash
        )
        self.ready_or_starting = self.scheduled - sum(1 for p in scheduled if _unhealthy(p))


def count_pods(pods: Sequence[Mapping[str, Any]], target_hash: str | None) -> PodCounts:
    """Tally the PodClique's pods (non-terminating ones only)."""
    return PodCounts(pods, target_hash)


def update_in_progress(pclq: PodClique) -> bool:
    """True while a rolling update of this PodClique has started and not ended."""
    progress = pclq.status.update_progress if pclq.status is not None else None
    return progress is not None and progress.update_ended_at is None


def _availability(pclq: PodClique, ready: int, min_available: int) -> tuple[str, str, str]:
    """(status, reason, message) of `PodCliqueAvailable`; False stays `NotYetAvailable` until it was True once."""
    if ready >= min_available:
        return ("True", REASON_AVAILABLE, f"{ready} Ready pods >= minAvailable {min_available}")
    previous = find_condition(pclq.status.conditions if pclq.status else None, CONDITION_PODCLIQUE_AVAILABLE)
    if previous is None or (previous.status != "True" and previous.reason == REASON_NOT_YET_AVAILABLE):
        return (
            "False",
            REASON_NOT_YET_AVAILABLE,
            f"{ready} Ready pods < minAvailable {min_available}; never available since it was created, so gang "
            "termination leaves it alone until it is",
        )
    return ("False", REASON_INSUFFICIENT_READY_PODS, f"{ready} Ready pods < minAvailable {min_available}")


def compute_podclique_status(
    pclq: PodClique,
    pods: Sequence[Mapping[str, Any]],
    now: datetime,
    pcs_generation_hash: str | None = None,
    template_hash: str | None = None,
) -> dict[str, Any]:
    """The complete status of `pclq` given its pods (plain dicts), the generation hash of its PodCliqueSet's template
    and the newest pod-template hash of its clique (`template_hash`; None: the PodClique's own label or progress)."""
    status = pclq.status.model_dump(by_alias=True, exclude_none=True, mode="json") if pclq.status is not None else {}
    labels = pclq.metadata.labels or {}
    progress = pclq.status.update_progress if pclq.status is not None else None
    target_hash = template_hash
    if target_hash is None and progress is not None:
        target_hash = progress.pod_template_hash
    if target_hash is None:
        target_hash = labels.get(glabels.LABEL_POD_TEMPLATE_HASH)
    counts = count_pods(pods, target_hash)
    min_available = pclq.spec.effective_min_available()
    status.update(
        replicas=counts.replicas,
        readyReplicas=counts.ready,
        scheduledReplicas=counts.scheduled,
        scheduleGatedReplicas=counts.gated,
        updatedReplicas=counts.updated,
    )
    if glabels.LABEL_PCSG not in labels and labels.get(glabels.LABEL_PART_OF):
        status["hpaPodSelector"] = glabels.pclq_hpa_pod_selector(
            labels[glabels.LABEL_PART_OF], pclq.metadata.name or ""
        )
    else:
        status.pop("hpaPodSelector", None)
    in_update = update_in_progress(pclq)
    if not in_update and counts.updated == counts.replicas and target_hash is not None:
        status["currentPodTemplateHash"] = target_hash
        generation = pcs_generation_hash
        if generation is None and progress is not None:
            generation = progress.pod_clique_set_generation_hash
        if generation is not None:
            status["currentPodCliqueSetGenerationHash"] = generation
    observed = pclq.status.observed_generation if pclq.status is not None else None
    if observed is None:
        return status
    previous = pclq.status.conditions if pclq.status is not None else None
    conditions: list[dict[str, Any]] = []
    ours = (CONDITION_PODCLIQUE_SCHEDULED, CONDITION_MIN_AVAILABLE_BREACHED, CONDITION_PODCLIQUE_AVAILABLE)
    others = [c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in previous or () if c.type not in ours]
    scheduled_ok = counts.scheduled >= min_available
    set_condition(
        conditions,
        previous,
        CONDITION_PODCLIQUE_SCHEDULED,
        "True" if scheduled_ok else "False",
        REASON_SUFFICIENT_SCHEDULED_PODS if scheduled_ok else REASON_INSUFFICIENT_SCHEDULED_PODS,
        f"{counts.scheduled} of at least {min_available} pods scheduled",
        now,
        observed,
    )
    if in_update:
        breach = ("Unknown", REASON_UPDATE_IN_PROGRESS, "rolling update in progress")
    elif not scheduled_ok:
        breach = ("True", REASON_SCHEDULED_BELOW_MIN_AVAILABLE, f"{counts.scheduled} scheduled < {min_available}")
    elif counts.ready_or_starting < min_available:
        breach = (
            "True",
            REASON_INSUFFICIENT_READY_PODS,
            f"{counts.ready_or_starting} ready or starting < {min_available}",
        )
    else:
        breach = (
            "False",
            REASON_SUFFICIENT_READY_PODS,
            f"{counts.ready_or_starting} ready or starting >= {min_available}",
        )
    set_condition(conditions, previous, CONDITION_MIN_AVAILABLE_BREACHED, *breach, now, observed)
    availability = _availability(pclq, counts.ready, min_available)
    set_condition(conditions, previous, CONDITION_PODCLIQUE_AVAILABLE, *availability, now, observed)
    status["conditions"] = others + conditions
    return status
