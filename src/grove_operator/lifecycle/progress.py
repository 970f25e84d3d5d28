"""A unit's `status.updateProgress` after one step of its rolling update: the same bookkeeping for a PodClique
(the Ready pod being replaced) and a scaling group (the replica being recreated).

Opened (`updateStartedAt`) when the unit has something on an older template and its progress is for another target
or already ended; the member being replaced recorded as `current`, the previous one moved to `completed`; closed
(`updateEndedAt`) once nothing is old or still going. Upstream's fields, so `kubectl get -o yaml` reads the same.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import datetime
from typing import Any, TypeVar

from grove_api import (
    PodCliqueScalingGroupUpdateProgress,
    PodCliqueUpdateProgress,
    PodsSelectedToUpdate,
    ReplicasSelectedToUpdate,
)
from grove_operator.lifecycle.replacement import Replacement

__all__ = ["group_progress", "podclique_progress"]

P = TypeVar("P", PodCliqueUpdateProgress, PodCliqueScalingGroupUpdateProgress)


def _advance(
    progress: P | None,
    plan: Replacement[Any],
    now: datetime,
    *,
    matches: bool,
    fresh: Callable[[], P],
    field: str,
    selection: Callable[[Hashable, list[Any] | None], Any],
) -> P | None:
    if plan.old == 0:
        if plan.going == 0 and matches and progress is not None and progress.update_ended_at is None:
            return progress.model_copy(update={"update_ended_at": now, field: None})
        return progress
    if not matches or progress is None or progress.update_ended_at is not None:
        progress = fresh()
    if plan.replace is not None:
        selected = getattr(progress, field)
        completed = list(selected.completed or ()) if selected is not None else []
        if selected is not None and selected.current != plan.replace:
            completed.append(selected.current)
        progress = progress.model_copy(update={field: selection(plan.replace, completed or None)})
    return progress


def podclique_progress(
    progress: PodCliqueUpdateProgress | None, generation: str, target: str, plan: Replacement[str], now: datetime
) -> PodCliqueUpdateProgress | None:
    """A PodClique's progress towards pod-template hash `target` (generation `generation`)."""
    matches = (
        progress is not None
        and progress.pod_template_hash == target
        and progress.pod_clique_set_generation_hash == generation
    )
    return _advance(
        progress,
        plan,
        now,
        matches=matches,
        fresh=lambda: PodCliqueUpdateProgress(
            update_started_at=now, pod_clique_set_generation_hash=generation, pod_template_hash=target
        ),
        field="ready_pods_selected_to_update",
        selection=lambda current, completed: PodsSelectedToUpdate(current=str(current), completed=completed),
    )


def group_progress(
    progress: PodCliqueScalingGroupUpdateProgress | None, generation: str, plan: Replacement[int], now: datetime
) -> PodCliqueScalingGroupUpdateProgress | None:
    """A scaling group's progress towards generation `generation`."""
    return _advance(
        progress,
        plan,
        now,
        matches=progress is not None and progress.pod_clique_set_generation_hash == generation,
        fresh=lambda: PodCliqueScalingGroupUpdateProgress(
            update_started_at=now, pod_clique_set_generation_hash=generation
        ),
        field="ready_replica_indices_selected_to_update",
        selection=lambda current, completed: ReplicasSelectedToUpdate(current=int(str(current)), completed=completed),
    )
