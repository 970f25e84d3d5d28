"""PodCliqueScalingGroup status: per-replica scheduled/available/updated and MinAvailableBreached (§3.6).

A PCSG replica only counts when all its member PodCliques (by expected name) exist; the breach condition is what
PCSG- and PCS-level gang termination key on. A replica is "not in breach" when every member reports
`MinAvailableBreached` False (or Unknown, while it is being updated); upstream also counts members that report
nothing yet, which made a freshly rebuilt group look healthy for a moment and clear `GangTerminationInProgress`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from grove_api import (
    CONDITION_GANG_TERMINATION_IN_PROGRESS,
    CONDITION_MIN_AVAILABLE_BREACHED,
    CONDITION_PODCLIQUE_SCHEDULED,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueSet,
)
from grove_api import labels as glabels
from grove_operator import hashing
from grove_operator.desired.layout import replica_indices
from grove_operator.desired.scalinggroup import member_podclique_names
from grove_operator.status._conditions import condition_status, set_condition

__all__ = [
    "REASON_INSUFFICIENT_AVAILABLE_REPLICAS",
    "REASON_SUFFICIENT_AVAILABLE_REPLICAS",
    "compute_scaling_group_status",
    "pclq_fully_updated",
]

REASON_INSUFFICIENT_AVAILABLE_REPLICAS = "InsufficientAvailablePodCliqueScalingGroupReplicas"
REASON_SUFFICIENT_AVAILABLE_REPLICAS = "SufficientAvailablePodCliqueScalingGroupReplicas"
_REASON_UPDATE_IN_PROGRESS = "UpdateInProgress"


def pclq_fully_updated(pclq: PodClique, template_hash: str | None, pcs_generation_hash: str | None) -> bool:
    """True when the PodClique carries the newest template of its clique (`template_hash`; None: its own label),
    all its pods run it, and it reports the PodCliqueSet's generation hash."""
    status = pclq.status
    if status is None:
        return False
    label_hash = (pclq.metadata.labels or {}).get(glabels.LABEL_POD_TEMPLATE_HASH)
    wanted = template_hash if template_hash is not None else label_hash
    if label_hash != wanted or status.current_pod_template_hash is None or status.current_pod_template_hash != wanted:
        return False
    return pcs_generation_hash is None or status.current_pod_clique_set_generation_hash == pcs_generation_hash


def _ready_enough(pclq: PodClique) -> bool:
    ready = pclq.status.ready_replicas if pclq.status is not None else 0
    return ready >= pclq.spec.effective_min_available()


def compute_scaling_group_status(
    pcs: PodCliqueSet, pcsg: PodCliqueScalingGroup, pclqs: Iterable[PodClique], now: datetime
) -> dict[str, Any]:
    """The complete status of `pcsg` from its member PodCliques (any others in `pclqs` are ignored)."""
    status = pcsg.status.model_dump(by_alias=True, exclude_none=True, mode="json") if pcsg.status is not None else {}
    by_name: Mapping[str, PodClique] = {
        p.metadata.name or "": p for p in pclqs if p.metadata.deletion_timestamp is None
    }
    template = pcs.spec.template
    pcs_hash = hashing.generation_hash(template)
    name = pcsg.metadata.name or ""
    expected_hashes = hashing.clique_hashes(template)
    scheduled = available = updated = not_in_breach = complete_replicas = updated_members = 0
    all_converged = True
    # Only replicas with member PodCliques can count: walk those, never `range(spec.replicas)`.
    for j in sorted(replica_indices(name, by_name, pcsg.spec.replicas)):
        members = [by_name.get(n) for n in member_podclique_names(name, pcsg.spec.clique_names, j)]
        present = [m for m in members if m is not None]
        complete = len(present) == len(members)
        complete_replicas += int(complete)
        fresh = [
            m is not None and pclq_fully_updated(m, expected_hashes.get(c), pcs_hash)
            for m, c in zip(members, pcsg.spec.clique_names, strict=True)
        ]
        updated_members += sum(fresh)
        all_converged = all_converged and all(fresh)
        # A member not reporting yet (just created, by a rebuild say) is not healthy: only False (or Unknown, during
        # its update) counts, so the breach does not flip to False, and clear GangTerminationInProgress, meanwhile.
        if complete and all(
            condition_status(m.status.conditions if m.status else None, CONDITION_MIN_AVAILABLE_BREACHED)
            in ("False", "Unknown")
            for m in present
        ):
            not_in_breach += 1
        if not complete or not all(
            condition_status(m.status.conditions if m.status else None, CONDITION_PODCLIQUE_SCHEDULED) == "True"
            for m in present
        ):
            continue
        scheduled += 1
        if not all(_ready_enough(m) for m in present):
            continue
        available += 1
        updated += int(all(fresh))
    all_converged = all_converged and complete_replicas == pcsg.spec.replicas
    status.update(
        replicas=pcsg.spec.replicas,
        scheduledReplicas=scheduled,
        availableReplicas=available,
        updatedReplicas=updated,
        selector=glabels.pcsg_selector(pcs.metadata.name or "", name),
    )
    progress = pcsg.status.update_progress if pcsg.status is not None else None
    in_update = progress is not None and progress.update_ended_at is None
    if all_converged and not in_update:
        status["currentPodCliqueSetGenerationHash"] = pcs_hash
    if "updateProgress" in status:
        status["updateProgress"].update(
            updatedPodCliquesCount=updated_members,
            totalPodCliquesCount=pcsg.spec.replicas * len(pcsg.spec.clique_names),
        )
    previous = pcsg.status.conditions if pcsg.status is not None else None
    min_available = pcsg.spec.effective_min_available()
    if in_update:
        breach = ("Unknown", _REASON_UPDATE_IN_PROGRESS, "rolling update in progress")
    elif not_in_breach < min_available:
        breach = ("True", REASON_INSUFFICIENT_AVAILABLE_REPLICAS, f"{not_in_breach} healthy replicas < {min_available}")
    else:
        breach = ("False", REASON_SUFFICIENT_AVAILABLE_REPLICAS, f"{not_in_breach} healthy replicas >= {min_available}")
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, previous, CONDITION_MIN_AVAILABLE_BREACHED, *breach, now, pcsg.metadata.generation)
    for old in previous or ():
        if old.type == CONDITION_MIN_AVAILABLE_BREACHED:
            continue
        if old.type == CONDITION_GANG_TERMINATION_IN_PROGRESS and breach[0] == "False":
            continue
        conditions.append(old.model_dump(by_alias=True, exclude_none=True, mode="json"))
    status["conditions"] = conditions
    return status
