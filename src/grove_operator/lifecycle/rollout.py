"""The PodCliqueSet's rolling update, one replica at a time (grove-reference §3.8): start, next replica, end.

The state lives in the API (`status.currentGenerationHash`, `status.updateProgress`) and in the pods (`lane`), so
an operator killed at any moment resumes where the API says it was. The rule:

* A template change (the template's generation hash differs from `currentGenerationHash`) starts an update:
  `updateStartedAt` is now; under OnDelete `updateEndedAt` too, since nothing is replaced automatically. A second
  change during an update restarts the clock and retargets it; the replica being updated stays current, so no
  second replica is taken down (upstream #400).
* Under RollingRecreate an update also starts when some replica still runs an older template although none is in
  progress (after a switch from OnDelete); switching to OnDelete ends an update in progress.
* The current replica is done when nothing of it runs an older template and it is whole again: every pod of it
  exists and is Ready (`lane.Unit.settled`). So the next replica loses nothing before the last replacement of the
  previous one is Ready, and a replica that cannot become whole on the new template holds the update there rather
  than spreading a template that does not run.
* The next replica: first those with no scheduled pod, then those in breach (delay not expired), then by index;
  replicas being rebuilt by gang termination are skipped. None left: `updateEndedAt`, `currentlyUpdating` cleared.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from grove_api import PodCliqueSetReplicaUpdateProgress, PodCliqueSetUpdateProgress, UpdateStrategyType
from grove_operator.lifecycle.lane import Unit

__all__ = [
    "REASON_REPLICA_UPDATED",
    "REASON_UPDATE_COMPLETED",
    "REASON_UPDATE_RECORDED",
    "REASON_UPDATE_STARTED",
    "REASON_UPDATING_REPLICA",
    "ReplicaState",
    "RolloutStep",
    "current_replica",
    "plan_rollout",
    "replica_state",
    "update_open",
]

REASON_UPDATE_STARTED = "RollingUpdateStarted"
REASON_UPDATING_REPLICA = "UpdatingReplica"
REASON_REPLICA_UPDATED = "ReplicaUpdated"
REASON_UPDATE_COMPLETED = "RollingUpdateCompleted"
REASON_UPDATE_RECORDED = "TemplateChanged"


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """What the rollout needs to know of one PodCliqueSet replica."""

    index: int
    stale: bool
    """Some pod or PodClique of it is on an older template."""
    settled: bool
    """Every pod of it exists and is Ready, none is going."""
    scheduled_pods: int


def replica_state(index: int, lane: Sequence[Unit]) -> ReplicaState:
    """The replica's state from its lane."""
    return ReplicaState(
        index,
        stale=any(u.stale for u in lane),
        settled=all(u.settled for u in lane),
        scheduled_pods=sum(u.scheduled_pods for u in lane),
    )


def update_open(progress: PodCliqueSetUpdateProgress | None) -> bool:
    """An update has started and not ended."""
    return progress is not None and progress.update_started_at is not None and progress.update_ended_at is None


def current_replica(progress: PodCliqueSetUpdateProgress | None) -> int | None:
    """The replica index a RollingRecreate update is working on, if any."""
    if not update_open(progress) or progress is None or not progress.currently_updating:
        return None
    return progress.currently_updating[0].replica_index


@dataclass
class RolloutStep:
    """The new `updateProgress` (None: none yet) and the Events that tell what happened."""

    progress: PodCliqueSetUpdateProgress | None
    events: list[tuple[str, str]] = field(default_factory=list)

    @property
    def in_progress(self) -> bool:
        """The update goes on (the owner should look again soon)."""
        return update_open(self.progress)


def _order(state: ReplicaState, breached: Collection[int]) -> tuple[bool, bool, int]:
    return (state.scheduled_pods != 0, state.index not in breached, state.index)


def plan_rollout(
    strategy: UpdateStrategyType,
    stored_hash: str | None,
    target_hash: str,
    progress: PodCliqueSetUpdateProgress | None,
    replicas: Mapping[int, ReplicaState],
    now: datetime,
    *,
    breached: Collection[int] = (),
    rebuilding: Collection[int] = (),
) -> RolloutStep:
    """The next step of the PodCliqueSet's update; `replicas` are the states of the replicas that have children."""
    changed = stored_hash is not None and stored_hash != target_hash
    if strategy == "OnDelete":
        if changed:
            step = RolloutStep(PodCliqueSetUpdateProgress(update_started_at=now, update_ended_at=now))
            step.events.append((REASON_UPDATE_RECORDED, "template changed; OnDelete: pods are replaced when deleted"))
            return step
        if update_open(progress) and progress is not None:
            ended = progress.model_copy(update={"update_ended_at": now, "currently_updating": None})
            return RolloutStep(ended, [(REASON_UPDATE_COMPLETED, "update strategy is OnDelete: rolling update ended")])
        return RolloutStep(progress)
    stale = sorted((s for s in replicas.values() if s.stale and s.index not in rebuilding), key=lambda s: s.index)
    step = RolloutStep(progress)
    if changed or (not update_open(progress) and stale):
        keep = progress.currently_updating if update_open(progress) and progress is not None else None
        step.progress = PodCliqueSetUpdateProgress(update_started_at=now, currently_updating=keep)
        why = "template changed" if changed else "replicas run an older template"
        step.events.append((REASON_UPDATE_STARTED, f"{why}; updating {len(stale)} replica(s) one at a time"))
    if not update_open(step.progress) or step.progress is None:
        return step
    current = current_replica(step.progress)
    if current is not None:
        state = replicas.get(current)
        if state is not None and (state.stale or not state.settled):
            return step
        if state is not None:
            step.events.append((REASON_REPLICA_UPDATED, f"replica {current} runs the new template, every pod Ready"))
    pending = [s for s in stale if s.index != current]
    if pending:
        chosen = min(pending, key=lambda s: _order(s, breached))
        entry = PodCliqueSetReplicaUpdateProgress(replica_index=chosen.index, update_started_at=now)
        step.progress = step.progress.model_copy(update={"currently_updating": [entry]})
        step.events.append((REASON_UPDATING_REPLICA, f"updating replica {chosen.index} ({len(pending)} left)"))
        return step
    step.progress = step.progress.model_copy(update={"update_ended_at": now, "currently_updating": None})
    step.events.append((REASON_UPDATE_COMPLETED, "every replica runs the new template"))
    return step
