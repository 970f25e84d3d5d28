"""The scheduler's side of queues: the hooks the scheduling cycle, the scheduling queue and the preemptor call.

* `admit` (before placement): an unknown queue or a limit the gang would break leaves the gang Unschedulable with
  a reason naming the queue; it is not placed and nothing is preempted for it;
* `rank` (the scheduling queue's order): the gang's queue's distance to its fair share, lowest first; priority and
  age break ties as before;
* `victims` (the preemptor's candidate choice): with queues on, a gang may preempt lower-priority gangs of its own
  queue (KAI's preempt), and, when its queue stays within its fair share with the gang, reclaim whole gangs of
  queues above theirs, never taking one below its fair share or quota (`policy.reclaimable`);
* `forget`: the gang bound or is gone.
With no Queue in the cluster every hook is neutral.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from grove_sched.gangs import GangKey, ReadyGang
from grove_sched.model import Code, Status
from grove_sched.placement import Snapshot
from grove_sched.preemption import VictimGang
from grove_sched.tenancy.book import QueueBook, gang_ask, queue_of
from grove_sched.tenancy.policy import Candidate, gang_vector, reclaimable, under_fair_share
from grove_sched.tenancy.spec import zero

__all__ = ["QueueEvents", "QueueGate"]

Obj = Mapping[str, Any]


class QueueGate:
    """Binds a `QueueBook` to the scheduler's hooks."""

    def __init__(self, book: QueueBook) -> None:
        self.book = book
        self._snapshot: Snapshot | None = None
        self.podgang_of: Callable[[GangKey], Obj | None] = lambda _key: None
        """GangKey → PodGang object or None (set by the app; the preemptor's gangs carry no PodGang)."""

    def admit(self, gang: ReadyGang, podgang: Obj | None, snapshot: Snapshot) -> Status | None:
        """None when the gang may be placed; else the Unschedulable status naming its queue."""
        if not self.book.active:
            return None
        self._snapshot = snapshot
        self.book.observe(snapshot)
        _queue, why = self.book.admit(gang, podgang)
        return Status(Code.UNSCHEDULABLE, (why,)) if why else None

    def rank(self, key: GangKey) -> float:
        """The gang's queue's distance to its fair share (0 for gangs not seen yet, or without queues)."""
        return self.book.rank(key)

    def forget(self, key: GangKey) -> None:
        """The gang bound or is gone."""
        self.book.forget(key)

    def victims(self, gang: ReadyGang, found: list[VictimGang]) -> list[VictimGang]:
        """The preemptor's candidates among every running gang (`found`, any priority)."""
        priority = gang.request.priority
        if not self.book.active:
            return [v for v in found if v.priority < priority]
        book = self.book
        queue = queue_of(self.podgang_of(gang.key), gang.pods.values(), book.default_queue)
        holdings = book.holdings()
        same = [v for v in found if v.priority < priority and holdings.get(v.key, ("", zero()))[0] == queue]
        figures = book.figures()
        ask = gang_ask(gang)
        if queue not in book.queues or not under_fair_share(
            figures.allocated.get(queue, zero()), figures.fair.get(queue, zero()), ask
        ):
            return same
        others = []
        for index, victim in enumerate(found):
            owner = holdings.get(victim.key)
            if owner is None or owner[0] == queue:
                continue
            holds = gang_vector([pod.requests for pod in victim.pods])
            others.append(Candidate(index, owner[0], victim.priority, holds))
        allowed = reclaimable(book.queues, figures.allocated, figures.fair, queue, others, figures.contended)
        reclaim = [dataclasses.replace(found[c.key], reclaim=True) for c in allowed]
        return same + reclaim


class QueueEvents:
    """Queue informer handler: keep the book current and wake waiting gangs (a queue appeared, a limit rose)."""

    def __init__(self, book: QueueBook, wake: Callable[[], object]) -> None:
        self.book = book
        self.wake = wake

    def on_add(self, obj: Obj) -> None:
        """A new Queue."""
        self.book.set_queue(obj)
        self.wake()

    def on_update(self, old: Obj, new: Obj) -> None:
        """A changed Queue."""
        self.book.set_queue(new)
        self.wake()

    def on_delete(self, obj: Obj) -> None:
        """A deleted Queue."""
        self.book.delete_queue(obj)
        self.wake()
