"""Nominations: capacity freed by a preemption, held for the preemptor until it binds or goes away.

Why (kube-scheduler's `nominatedNodeName` and its nominator): victims take their grace period to terminate, and
the capacity they free would otherwise go to whichever gang the queue pops first, often a lower-priority one that
was waiting too, and the preemptor would preempt again (a loop). So the preemptor's planned placement is recorded
here and every other gang of lower or equal priority is placed on a snapshot where those pods already sit
(`reserved_for`). A gang of higher priority does not see the reservation (it may take the capacity, as in
Kubernetes). The preemptor itself does not see its own, so it places on the freed capacity normally.

A nomination also remembers its victims: while any victim pod still exists the preemptor waits instead of choosing
new victims, and a gang once preempted for a preemptor is never chosen again for it (`preempted`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from grove_sched.gangs import GangKey
from grove_sched.model import BoundPod

__all__ = ["Nomination", "Nominations"]


@dataclass(frozen=True, slots=True)
class Nomination:
    """A preemptor's reserved placement and the victims it waits for."""

    gang: GangKey
    priority: int
    pods: tuple[BoundPod, ...]
    victim_pods: tuple[str, ...]
    """`namespace/name` of every victim pod (the preemptor binds once none is left)."""
    victim_gangs: tuple[GangKey, ...]
    since: float

    @property
    def nodes(self) -> dict[str, str]:
        """Pod name → nominated node (what the preemptor's pods show as `status.nominatedNodeName`)."""
        return {pod.name: pod.node for pod in self.pods}


class Nominations:
    """The live nominations by preemptor, and the gangs already preempted for each preemptor."""

    def __init__(self) -> None:
        self._live: dict[GangKey, Nomination] = {}
        self._preempted: dict[GangKey, set[GangKey]] = {}

    def __len__(self) -> int:
        return len(self._live)

    def nominate(self, nomination: Nomination) -> None:
        """Hold `nomination.pods` for its gang (replacing an earlier nomination of the same gang)."""
        self._live[nomination.gang] = nomination
        self._preempted.setdefault(nomination.gang, set()).update(nomination.victim_gangs)

    def get(self, gang: GangKey) -> Nomination | None:
        """The gang's live nomination."""
        return self._live.get(gang)

    def release(self, gang: GangKey) -> Nomination | None:
        """Stop holding the gang's capacity (its victims are gone and it is re-evaluated, or it bound)."""
        return self._live.pop(gang, None)

    def forget(self, gang: GangKey) -> Nomination | None:
        """The gang bound or is gone: release it and drop its history."""
        self._preempted.pop(gang, None)
        return self._live.pop(gang, None)

    def gangs(self) -> frozenset[GangKey]:
        """The gangs holding a nomination."""
        return frozenset(self._live)

    def preempted(self, gang: GangKey) -> frozenset[GangKey]:
        """Gangs already preempted for this preemptor (never chosen again for it)."""
        return frozenset(self._preempted.get(gang, ()))

    def reserved_for(self, gang: GangKey, priority: int) -> list[BoundPod]:
        """Pods of other gangs' nominations that a gang of this priority must treat as placed."""
        return [pod for n in self._sorted() if n.gang != gang and n.priority >= priority for pod in n.pods]

    def ages(self, now: float) -> Iterable[float]:
        """Seconds each live nomination has been held."""
        return (now - n.since for n in self._live.values())

    def _sorted(self) -> list[Nomination]:
        return [self._live[key] for key in sorted(self._live)]
