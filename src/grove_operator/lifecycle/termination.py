"""Gang termination (grove-reference §3.7): which broken gangs have waited out `terminationDelay`.

A gang below its minimum holds its GPUs without serving; after `terminationDelay` it is rebuilt from scratch so
the scheduler can place it again whole. The exact rule (also in docs/architecture.md):

* A PodClique is *once-available* when it has had at least `minAvailable` Ready pods at some moment since it was
  created: its `PodCliqueAvailable` condition is True, or False with another reason than `NotYetAvailable`.
* A breach *counts* when `MinAvailableBreached=True` is on a once-available PodClique. A rebuild creates new
  PodCliques, so a rebuilt replica whose pods are still pending, or started but not yet Ready, is never
  terminated again before it has been available once: a workload the cluster cannot run is not recycled forever.
* Scaling-group level: a scaling-group replica with a counting member breach is recreated alone once the earliest
  such breach is older than the delay, provided the group keeps `minAvailable` replicas without one; otherwise
  the PodCliqueSet level decides.
* PodCliqueSet level: a replica is rebuilt (every PodClique of it deleted) once a standalone PodClique's counting
  breach, or a scaling group's `MinAvailableBreached=True` with a counting member breach and no
  `GangTerminationInProgress`, is older than the delay. The replica a rolling update is working on is left alone.
* Age is measured from the condition's `lastTransitionTime`; while a breach is younger, the owner is requeued after
  exactly the time left (`wait`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from grove_api import (
    CONDITION_GANG_TERMINATION_IN_PROGRESS,
    CONDITION_MIN_AVAILABLE_BREACHED,
    CONDITION_PODCLIQUE_AVAILABLE,
    DEFAULT_TERMINATION_DELAY,
    Condition,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueSet,
)
from grove_operator._fieldchecks import go_duration_seconds
from grove_operator.status._conditions import find_condition
from grove_operator.status.podclique import REASON_NOT_YET_AVAILABLE

__all__ = [
    "Breach",
    "GroupTermination",
    "ReplicaTermination",
    "group_breach",
    "once_available",
    "pclq_breach",
    "plan_group_termination",
    "plan_replica_termination",
    "termination_delay",
]


def termination_delay(pcs: PodCliqueSet) -> float:
    """`terminationDelay` in seconds (the 4h default when unset or unreadable)."""
    text = pcs.spec.template.termination_delay or DEFAULT_TERMINATION_DELAY
    seconds = go_duration_seconds(text)
    if seconds is None or seconds < 0:
        seconds = go_duration_seconds(DEFAULT_TERMINATION_DELAY)
    return float(seconds or 0.0)


@dataclass(frozen=True, slots=True)
class Breach:
    """A counting breach: which object, since when, and what its condition says."""

    name: str
    since: datetime
    reason: str
    message: str

    def wait(self, delay: float, now: datetime) -> float:
        """Seconds until the breach is older than `delay` (zero or less: it is)."""
        return delay - (now - self.since).total_seconds()

    def describe(self) -> str:
        """`<name> (<reason>: <message>)`, for Events."""
        return f"{self.name} has MinAvailableBreached=True since {self.since:%H:%M:%S} ({self.reason}: {self.message})"


def _breached(conditions: Iterable[Condition] | None) -> Condition | None:
    found = find_condition(conditions, CONDITION_MIN_AVAILABLE_BREACHED)
    return found if found is not None and found.status == "True" else None


def once_available(pclq: PodClique) -> bool:
    """The PodClique has had `minAvailable` Ready pods at some moment since it was created."""
    found = find_condition(pclq.status.conditions if pclq.status else None, CONDITION_PODCLIQUE_AVAILABLE)
    return found is not None and (found.status == "True" or found.reason != REASON_NOT_YET_AVAILABLE)


def pclq_breach(pclq: PodClique) -> Breach | None:
    """The PodClique's breach if it counts (MinAvailableBreached=True and once-available)."""
    if pclq.metadata.deletion_timestamp is not None or not once_available(pclq):
        return None
    found = _breached(pclq.status.conditions if pclq.status else None)
    if found is None:
        return None
    return Breach(pclq.metadata.name or "", found.last_transition_time, found.reason, found.message)


def group_breach(pcsg: PodCliqueScalingGroup, members: Iterable[PodClique]) -> Breach | None:
    """The scaling group's own breach if it counts at the PodCliqueSet level."""
    conditions = pcsg.status.conditions if pcsg.status else None
    found = _breached(conditions)
    if found is None or pcsg.metadata.deletion_timestamp is not None:
        return None
    in_progress = find_condition(conditions, CONDITION_GANG_TERMINATION_IN_PROGRESS)
    if in_progress is not None and in_progress.status == "True":
        return None
    if not any(pclq_breach(m) is not None for m in members):
        return None
    return Breach(pcsg.metadata.name or "", found.last_transition_time, found.reason, found.message)


def _split(breaches: Iterable[Breach], delay: float, now: datetime) -> tuple[Breach | None, float | None]:
    """The breach that expired first (if any) and the smallest positive wait of the others."""
    expired: Breach | None = None
    wait: float | None = None
    for breach in breaches:
        left = breach.wait(delay, now)
        if left <= 0:
            if expired is None or breach.since < expired.since:
                expired = breach
        elif wait is None or left < wait:
            wait = left
    return expired, wait


@dataclass(frozen=True)
class ReplicaTermination:
    """PodCliqueSet-level decision: replicas to rebuild now (with the breach that expired first) and the wait."""

    rebuild: dict[int, Breach] = field(default_factory=dict)
    breached: frozenset[int] = frozenset()
    """Replicas with a counting breach still inside its delay."""
    wait: float | None = None


def plan_replica_termination(
    breaches: Mapping[int, Sequence[Breach]], delay: float, now: datetime, exempt: Iterable[int] = ()
) -> ReplicaTermination:
    """Which PCS replicas to rebuild, given each replica's counting breaches (`exempt`: left alone)."""
    skip = set(exempt)
    rebuild: dict[int, Breach] = {}
    breached: set[int] = set()
    wait: float | None = None
    for index, found in breaches.items():
        if index in skip or not found:
            continue
        expired, left = _split(found, delay, now)
        if expired is not None:
            rebuild[index] = expired
        else:
            breached.add(index)
            if left is not None and (wait is None or left < wait):
                wait = left
    return ReplicaTermination(rebuild, frozenset(breached), wait)


@dataclass(frozen=True)
class GroupTermination:
    """Scaling-group-level decision: replicas to recreate now, the wait, or defer to the PodCliqueSet level."""

    recreate: dict[int, Breach] = field(default_factory=dict)
    wait: float | None = None
    deferred: bool = False


def plan_group_termination(
    breaches: Mapping[int, Breach], replicas: int, min_available: int, delay: float, now: datetime
) -> GroupTermination:
    """Which scaling-group replicas to recreate, given the counting breach of each broken replica."""
    if not breaches:
        return GroupTermination()
    if replicas - len(breaches) < min_available:
        return GroupTermination(deferred=True)
    recreate: dict[int, Breach] = {}
    wait: float | None = None
    for index, breach in breaches.items():
        left = breach.wait(delay, now)
        if left <= 0:
            recreate[index] = breach
        elif wait is None or left < wait:
            wait = left
    return GroupTermination(recreate, wait)
