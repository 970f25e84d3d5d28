"""The queue book: the scheduler's running view of queues (specs from the Queue informer, what each queue's bound
pods hold, what its pending gangs ask) and the decisions it feeds to the scheduling cycle.

Why a book beside the cycle rather than inside it: the cycle asks three small questions (may this gang be placed
now? which gang first? whom may this gang reclaim from?) and the answers all derive from the same figures, which
change only when the snapshot, the pending set or a Queue changes; the book recomputes fair shares only then.

Queues are on when the cluster has at least one Queue object: with none, every gang is admitted and ordered as
before (priority, then age), so clusters that never heard of queues behave as they did. With queues, a gang's
queue is the `kai.scheduler/queue` label of its PodGang, else of its first pod that has one, else the default
queue (`--default-queue`, KAI's `default-queue`). A bound pod counts for its queue when it carries the label or
belongs to a PodGang (then the default queue); other pods (system pods, other schedulers' plain pods) are capacity
used by nobody's queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from grove_api.labels import LABEL_KAI_QUEUE, LABEL_PODGANG
from grove_sched.gangs import GangKey, ReadyGang
from grove_sched.model import BoundPod
from grove_sched.placement import Snapshot
from grove_sched.tenancy.fairshare import fair_shares
from grove_sched.tenancy.held import HeldCounter
from grove_sched.tenancy.policy import add, distance, gang_vector, limit_breach, rollup
from grove_sched.tenancy.spec import KAI_RESOURCES, RESOURCES, QueueSpec, Vector, parse_queue, vector_of, zero

__all__ = ["DEFAULT_QUEUE", "Figures", "QueueBook", "gang_ask", "queue_of"]

DEFAULT_QUEUE = "default-queue"
Obj = Mapping[str, Any]


def gang_ask(gang: ReadyGang) -> Vector:
    """What a gang's pods request, as a queue vector."""
    return gang_vector([ref.requests or group.requests for group in gang.request.groups for ref in group.pods])


def queue_of(podgang: Obj | None, pods: Iterable[Obj], default: str) -> str:
    """The gang's queue: its PodGang's label, else the first pod's that has one, else `default`."""
    for obj in (podgang, *pods):
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        name = labels.get(LABEL_KAI_QUEUE)
        if isinstance(name, str) and name:
            return name
    return default


@dataclass(frozen=True, slots=True)
class Figures:
    """One consistent set of per-queue figures (rolled up to ancestors)."""

    allocated: Mapping[str, Vector]
    requested: Mapping[str, Vector]
    fair: Mapping[str, Vector]
    pending_gangs: Mapping[str, int]
    capacity: Vector
    contended: tuple[bool, bool, bool]
    """Per resource: the root queues ask more than the cluster has."""


class QueueBook:
    """Queue specs, pending asks and the figures derived from them; cheap to ask, recomputed on change."""

    def __init__(self, default_queue: str = DEFAULT_QUEUE) -> None:
        self.default_queue = default_queue
        self.queues: dict[str, QueueSpec] = {}
        self._pending: dict[GangKey, tuple[str, Vector]] = {}
        self._snapshot: Snapshot | None = None
        self._held: dict[str, Vector] = {}
        self._held_by_gang: dict[GangKey, tuple[str, Vector]] | None = None
        self._counter = HeldCounter(self.pod_queue)
        self._capacity: Vector = zero()
        self._figures: Figures | None = None
        self.version = 0
        """Bumped whenever the figures may have changed (the status writer compares it)."""

    @property
    def active(self) -> bool:
        """Queues are on: at least one Queue exists."""
        return bool(self.queues)

    # --- input --------------------------------------------------------------------------------------------------

    def set_queue(self, obj: Obj) -> None:
        """A Queue was added or changed."""
        spec = parse_queue(obj)
        if spec.name and self.queues.get(spec.name) != spec:
            self.queues[spec.name] = spec
            self._changed()

    def delete_queue(self, obj: Obj) -> None:
        """A Queue was deleted."""
        name = str((obj.get("metadata") or {}).get("name", ""))
        if self.queues.pop(name, None) is not None:
            self._changed()

    def pending(self, key: GangKey, queue: str, ask: Vector) -> None:
        """The gang is waiting in `queue` asking `ask` (its pending pods)."""
        if self._pending.get(key) != (queue, ask):
            self._pending[key] = (queue, ask)
            self._changed()

    def forget(self, key: GangKey) -> None:
        """The gang bound or is gone: it asks nothing more."""
        if self._pending.pop(key, None) is not None:
            self._changed()

    def observe(self, snapshot: Snapshot) -> None:
        """Recount what each queue's bound pods hold, when the snapshot is a new one (incrementally: `held`)."""
        if snapshot is self._snapshot:
            return
        self._snapshot = snapshot
        self._held_by_gang = None
        held = self._counter.count(snapshot)
        schedulable = snapshot.allocatable[~snapshot.unschedulable]
        columns = {name: snapshot.resource_index(name) for name in KAI_RESOURCES}
        capacity = vector_of({name: int(schedulable[:, c].sum()) for name, c in columns.items() if c is not None})
        if held != self._held or capacity != self._capacity:
            self._held, self._capacity = held, capacity
            self._changed()

    def pod_queue(self, pod: BoundPod) -> str | None:
        """The queue a bound pod counts for, or None."""
        name = pod.labels.get(LABEL_KAI_QUEUE)
        if name:
            return name
        return self.default_queue if pod.labels.get(LABEL_PODGANG) else None

    # --- figures ------------------------------------------------------------------------------------------------

    def figures(self) -> Figures:
        """Allocated, requested and fair share per queue (rolled up), recomputed only after a change."""
        if self._figures is None:
            own_requested = dict(self._held)
            counts: dict[str, int] = {}
            for queue, ask in self._pending.values():
                own_requested[queue] = add(own_requested.get(queue, zero()), ask)
                counts[queue] = counts.get(queue, 0) + 1
            known = {q: v for q, v in own_requested.items() if q in self.queues}
            asked = [sum(v[r] for v in known.values()) for r in range(len(RESOURCES))]
            self._figures = Figures(
                allocated=rollup(self.queues, {q: v for q, v in self._held.items() if q in self.queues}),
                requested=rollup(self.queues, known),
                fair=fair_shares(self.queues, known, self._capacity),
                pending_gangs=counts,
                capacity=self._capacity,
                contended=(
                    asked[0] > self._capacity[0] + 1e-9,
                    asked[1] > self._capacity[1] + 1e-9,
                    asked[2] > self._capacity[2] + 1e-9,
                ),
            )
        return self._figures

    def holdings(self) -> Mapping[GangKey, tuple[str, Vector]]:
        """Per running gang of the last observed snapshot: its queue and what it holds (computed when asked: only
        reclaim needs it)."""
        if self._held_by_gang is None:
            by_gang: dict[GangKey, tuple[str, Vector]] = {}
            live = self._snapshot.live_pods if self._snapshot is not None else ()
            for pod in live:
                queue = self.pod_queue(pod)
                if queue is None:
                    continue
                gang = pod.labels.get(LABEL_PODGANG)
                key = GangKey(pod.namespace, gang) if gang else GangKey(pod.namespace, pod.name, single=True)
                prior = by_gang.get(key, (queue, zero()))
                by_gang[key] = (prior[0], add(prior[1], vector_of(pod.requests)))
            self._held_by_gang = by_gang
        return self._held_by_gang

    # --- decisions ----------------------------------------------------------------------------------------------

    def admit(self, gang: ReadyGang, podgang: Obj | None) -> tuple[str, str | None]:
        """The gang's queue, and why it may not be placed now (unknown queue, a limit), or None."""
        queue = queue_of(podgang, gang.pods.values(), self.default_queue)
        ask = gang_ask(gang)
        self.pending(gang.key, queue, ask)
        if queue not in self.queues:
            return queue, (
                f"queue {queue!r} does not exist (create a scheduling.run.ai/v2 Queue named {queue!r}, or label the "
                f"gang kai.scheduler/queue with an existing queue)"
            )
        return queue, limit_breach(self.queues, self.figures().allocated, queue, ask)

    def rank(self, key: GangKey) -> float:
        """How far the gang's queue is from its fair share (lower first); gangs not seen yet rank first."""
        entry = self._pending.get(key)
        if entry is None or not self.active:
            return 0.0
        figures = self.figures()
        return distance(figures.allocated.get(entry[0], zero()), figures.fair.get(entry[0], zero()))

    def _changed(self) -> None:
        self._figures = None
        self.version += 1
