"""The queue rules of one scheduling decision, pure: which queue a gang is in, may it be placed (known queue, within
every limit up its tree), how far a queue is from its fair share (the order gangs are tried in), and which gangs
of other queues a starved queue may reclaim.

Why pure: these are the invariants the property tests check on random trees (no queue above its limit, reclaim
never takes a queue below its fair share or quota and never leaves a partial gang); the stateful book
(`grove_sched.tenancy.book`) only feeds them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from grove_sched.tenancy.spec import RESOURCES, QueueSpec, Vector, vector_of, zero

__all__ = [
    "Candidate",
    "add",
    "ancestry",
    "distance",
    "gang_vector",
    "limit_breach",
    "reclaim_floor",
    "reclaimable",
    "rollup",
    "under_fair_share",
]

_EPS = 1e-6


def add(a: Vector, b: Vector) -> Vector:
    """a + b."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def ancestry(queues: Mapping[str, QueueSpec], name: str) -> list[str]:
    """`name` and its ancestors, leaf first (a cycle or an unknown parent ends the walk)."""
    chain: list[str] = []
    current: str | None = name
    while current is not None and current in queues and current not in chain:
        chain.append(current)
        current = queues[current].parent
    return chain


def rollup(queues: Mapping[str, QueueSpec], own: Mapping[str, Vector]) -> dict[str, Vector]:
    """Each queue's amount including its descendants' (`own` keyed by leaf queue)."""
    total = dict.fromkeys(queues, zero())
    for name, amount in own.items():
        for queue in ancestry(queues, name):
            total[queue] = add(total[queue], amount)
    return total


def limit_breach(
    queues: Mapping[str, QueueSpec], allocated: Mapping[str, Vector], queue: str, ask: Vector
) -> str | None:
    """Why placing `ask` in `queue` would break a limit of it or of an ancestor (`allocated` rolled up), or None."""
    for name in ancestry(queues, queue):
        held = allocated.get(name, zero())
        for r, resource in enumerate(RESOURCES):
            cap = queues[name].shares[r].cap()
            if ask[r] > 0 and held[r] + ask[r] > cap + _EPS:
                return (
                    f"queue {name!r} would exceed its {resource} limit {cap:g} "
                    f"(allocated {held[r]:g}, the gang asks {ask[r]:g})"
                )
    return None


def distance(allocated: Vector, fair: Vector) -> float:
    """allocated / fair share on the dominant resource (0 when nothing is allocated; inf when allocated with no
    share): gangs of the queue furthest below its share are tried first."""
    worst = 0.0
    for r in range(len(RESOURCES)):
        if allocated[r] <= _EPS:
            continue
        worst = max(worst, allocated[r] / fair[r] if fair[r] > _EPS else math.inf)
    return worst


def under_fair_share(allocated: Vector, fair: Vector, ask: Vector) -> bool:
    """A queue may reclaim for a gang when, with the gang, it stays within its fair share on every resource the
    gang asks (KAI: a reclaimer must not end above its share)."""
    return any(a > 0 for a in ask) and all(
        ask[r] <= 0 or allocated[r] + ask[r] <= fair[r] + _EPS for r in range(len(RESOURCES))
    )


def reclaim_floor(spec: QueueSpec, fair: Vector, contended: tuple[bool, bool, bool] = (True, True, True)) -> Vector:
    """What a victim queue keeps in any case: on a contended resource (the queues ask more than the cluster has) its
    fair share and never less than its quota; on one that is not, its quota (quota -1: its fair share, which is
    then all it asks). Without the distinction a queue's CPU share (all it asks, when CPU is plentiful) would
    forbid taking any gang from it for GPUs."""
    floors = []
    for r in range(len(RESOURCES)):
        quota = spec.shares[r].quota
        floors.append(max(fair[r], quota) if contended[r] else (fair[r] if quota < 0 else quota))
    return (floors[0], floors[1], floors[2])


@dataclass(frozen=True, slots=True)
class Candidate:
    """A running whole gang of some queue: its key, priority and what it holds."""

    key: int
    """The caller's index of the gang."""
    queue: str
    priority: int
    holds: Vector


def reclaimable(
    queues: Mapping[str, QueueSpec],
    allocated: Mapping[str, Vector],
    fair: Mapping[str, Vector],
    reclaimer: str,
    candidates: Iterable[Candidate],
    contended: tuple[bool, bool, bool] = (True, True, True),
) -> list[Candidate]:
    """The gangs of other queues a starved `reclaimer` may take, chosen so that taking **any subset** of them leaves
    every victim queue (and each of its ancestors that is not an ancestor of the reclaimer) at or above its
    `reclaim_floor`: per queue, cheapest first (lowest priority, then fewest GPUs), a prefix whose sum fits in
    what each queue holds above its floor. Whole gangs only; `allocated` is rolled up; `contended` says per
    resource whether the queues ask more than the cluster has (see `reclaim_floor`)."""
    shared = set(ancestry(queues, reclaimer))
    room: dict[str, list[float]] = {}
    for name in queues:
        if name in shared:
            continue
        floor = reclaim_floor(queues[name], fair.get(name, zero()), contended)
        held = allocated.get(name, zero())
        room[name] = [held[r] - floor[r] for r in range(len(RESOURCES))]
    chosen: list[Candidate] = []
    for cand in sorted(candidates, key=lambda c: (c.priority, c.holds[0], c.key)):
        if cand.queue not in queues or cand.queue in shared:
            continue
        path = [q for q in ancestry(queues, cand.queue) if q not in shared]
        if all(cand.holds[r] <= 0 or room[q][r] - cand.holds[r] >= -_EPS for q in path for r in range(len(RESOURCES))):
            for q in path:
                for r in range(len(RESOURCES)):
                    room[q][r] -= cand.holds[r]
            chosen.append(cand)
    return chosen


def gang_vector(requests: Sequence[Mapping[str, int]]) -> Vector:
    """Sum of pod requests as a queue vector."""
    total = zero()
    for req in requests:
        total = add(total, vector_of(req))
    return total
