"""The preemption post-filter: evicts lower-priority whole gangs so an unschedulable gang fits, and holds the
freed capacity for it.

One attempt (after placement said Unschedulable, on the same snapshot):

1. a preemptor whose priority class says `preemptionPolicy: Never` waits like any other gang;
2. a preemptor with a live nomination whose victims still exist waits for them (no second preemption, no loop);
   once they are gone and it still does not fit, its nomination is released and it is evaluated afresh (so too
   after `victim_timeout` seconds, when a victim's removal was refused, e.g. by a disruption budget; gangs already
   preempted for it are never chosen again);
3. candidates are the gangs with bound pods of strictly lower priority (no gang with a binding in flight, none
   already preempted for this preemptor), each whole and, where it runs pods above a PodGroup's `minReplicas`,
   also those extras alone; `select_victims` chooses (see `victims`);
4. the preemptor is nominated (`Nominations`) before any victim is touched, then each victim pod gets the
   `DisruptionTarget` condition and is removed through the `VictimRemover` (graceful DELETE, or the Eviction API),
   victims get a `Preempted` Event naming the preemptor (and their PodGang `Scheduled=False`, reason Preempted,
   through `on_preempted`), the preemptor a `Preempting` Event listing its victims.

The status returned stays Unschedulable (the preemptor waits for the victims' deletions, which wake it), with the
preemption among the reasons, so the PodGang condition and the pods' `PodScheduled` say what happens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import structlog

from grove_api.labels import LABEL_PODGANG
from grove_runtime.clock import Clock, LoopClock
from grove_sched.cache import PodKey
from grove_sched.events import GangEvents
from grove_sched.gangs import GangKey, ReadyGang
from grove_sched.metrics import SchedulerMetrics
from grove_sched.model import BoundPod, Code, Status
from grove_sched.placement import Snapshot, assumed_pods
from grove_sched.pod_status import PodStatusWriter
from grove_sched.preemption.eviction import VictimRemover
from grove_sched.preemption.nominations import Nomination, Nominations
from grove_sched.preemption.victims import PreemptionOptions, Selection, VictimGang, select_victims
from grove_sched.source import GangSource

__all__ = ["Preemptor", "running_gangs"]

log = structlog.get_logger("grove_sched.preemption")
Obj = Mapping[str, Any]


class Preemptor:
    """The `PostFilter` that preempts (wired by `grove_sched.app` unless preemption is disabled)."""

    def __init__(
        self,
        source: GangSource,
        remover: VictimRemover,
        events: GangEvents,
        pod_status: PodStatusWriter | None,
        metrics: SchedulerMetrics,
        *,
        options: PreemptionOptions | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.source = source
        self.remover = remover
        self.events = events
        self.pod_status = pod_status
        self.metrics = metrics
        self.options = options or PreemptionOptions()
        self.clock = clock or LoopClock()
        self.nominations = Nominations()
        self.metrics.oldest_reservation.set_function(
            lambda: max(self.nominations.ages(self.clock.monotonic()), default=0.0)
        )
        self.on_preempted: Callable[[GangKey, str], None] = lambda _key, _message: None
        """Called per victim gang (the app records its PodGang's `Scheduled=False`, reason Preempted)."""
        self.victim_policy: Callable[[ReadyGang, list[VictimGang]], list[VictimGang]] | None = None
        """When set (queues, `grove_sched.tenancy`), it chooses the candidates among every running gang, whatever
        its priority; else candidates are the gangs of strictly lower priority."""

    # --- the PostFilter protocol --------------------------------------------------------------------------------

    def reserved(self, gang: GangKey, priority: int) -> Sequence[BoundPod]:
        """Capacity other preemptors hold that a gang of this priority must not take."""
        return self.nominations.reserved_for(gang, priority)

    def nominated(self, gang: GangKey) -> Mapping[str, str]:
        """Pod → nominated node of the gang's live nomination (empty when it has none)."""
        nomination = self.nominations.get(gang)
        return nomination.nodes if nomination is not None else {}

    def forget(self, gang: GangKey) -> None:
        """The gang bound or is gone: its reservation ends."""
        self._ended(self.nominations.forget(gang))

    async def post_filter(self, gang: ReadyGang, snapshot: Snapshot, status: Status) -> Status:
        """Preempt for `gang` if that can make it fit; the status to report (still Unschedulable)."""
        key = gang.key
        if self.source.preemption_policy(key, next(iter(gang.pods.values()), None)) == "Never":
            self.metrics.preemption_attempts.labels(result="not_allowed").inc()
            return _with(status, "preemption is not allowed: the gang's preemptionPolicy is Never")
        live = self.nominations.get(key)
        if live is not None:
            left = [p for p in live.victim_pods if self._exists(p)]
            if left and self.clock.monotonic() - live.since < self.options.victim_timeout:
                self.metrics.preemption_attempts.labels(result="waiting").inc()
                gangs = ", ".join(str(g) for g in live.victim_gangs)
                return _with(status, f"waiting for {len(left)} pod(s) of preempted gang(s) {gangs} to terminate")
            self._ended(self.nominations.release(key))
        candidates = self._candidates(gang, snapshot)
        selection = await asyncio.to_thread(select_victims, snapshot, gang.request, candidates, self.options)
        if selection is None:
            self.metrics.preemption_attempts.labels(result="no_victims").inc()
            return _with(status, "preemption cannot help: evicting every lower-priority gang would not make it fit")
        await self._preempt(gang, selection)
        self.metrics.preemption_attempts.labels(result="preempted").inc()
        names = ", ".join(str(v.key) for v in selection.victims)
        return Status(
            Code.UNSCHEDULABLE,
            (*status.reasons, f"preempting {len(selection.victims)} lower-priority gang(s) ({names}); "
             f"waiting for their pods to terminate"),
        )  # fmt: skip

    # --- steps --------------------------------------------------------------------------------------------------

    def _candidates(self, gang: ReadyGang, snapshot: Snapshot) -> list[VictimGang]:
        """Gangs of lower priority with bound pods in the snapshot, grouped by their `grove.io/podgang` label (a pod
        without one is a gang of its own). Left out: gangs with a pod still assumed (a binding in flight: evicting
        its bound pods could leave it partial), gangs already preempted for this preemptor, the preemptor itself,
        and nominated gangs (their reserved pods are in the snapshot, not on nodes); a Reservation's hold (a pod
        of no namespace, `grove_sched.reservations`) is never preempted. One informer read per gang."""
        skip = self.nominations.preempted(gang.key) | self.nominations.gangs() | {gang.key}
        found: list[VictimGang] = []
        for owner, running in running_gangs(self.source, snapshot, skip):
            priority = self.source.gang_priority(owner, self.source.pod(running[0].namespace, running[0].name))
            if priority >= gang.request.priority and self.victim_policy is None:
                continue
            found.append(VictimGang(owner, priority, tuple(running)))
            extras = self._extras(owner, running)
            if extras:
                found.append(VictimGang(owner, priority, extras, whole=False))
        return found if self.victim_policy is None else self.victim_policy(gang, found)

    def _extras(self, owner: GangKey, bound: list[BoundPod]) -> tuple[BoundPod, ...]:
        """A gang's bound pods above each PodGroup's minReplicas (the highest names), which it can lose alone."""
        if owner.single:
            return ()
        extras: list[BoundPod] = []
        for group in ((self.source.podgang(owner) or {}).get("spec") or {}).get("podgroups") or ():
            names = {str(ref.get("name")) for ref in group.get("podReferences") or ()}
            members = sorted((p for p in bound if p.name in names), key=lambda p: p.name)
            minimum = group.get("minReplicas")
            if isinstance(minimum, int) and not isinstance(minimum, bool) and 0 <= minimum < len(members):
                extras.extend(members[minimum:])
        return tuple(extras)

    async def _preempt(self, gang: ReadyGang, selection: Selection) -> None:
        """Nominate the preemptor, then mark, announce and remove every victim pod."""
        key = gang.key
        reserved = assumed_pods(gang.request, selection.placement)
        victim_pods = tuple(p for v in selection.victims for p in v.pod_keys)
        nomination = Nomination(
            key, gang.request.priority, reserved, victim_pods, tuple(v.key for v in selection.victims),
            self.clock.monotonic(),
        )  # fmt: skip
        self.nominations.nominate(nomination)
        self.metrics.reservations.set(len(self.nominations))
        self.metrics.preemption_victims.labels(kind="gangs").inc(len(selection.victims))
        self.metrics.preemption_victims.labels(kind="pods").inc(len(victim_pods))
        self.metrics.preemption_gpus.inc(selection.cost.gpus)
        log.info(
            "preempting",
            gang=str(key),
            victims=[str(v.key) for v in selection.victims],
            gpus=selection.cost.gpus,
            domain=selection.domain,
            path=selection.path,
        )
        why = (
            f"preempted by {key.namespace}/{key.name} (priority {gang.request.priority}) to free "
            f"{selection.domain} for its gang"
        )
        work = []
        for victim in selection.victims:
            objs = [o for o in (self.source.pod(p.namespace, p.name) for p in victim.pods) if o is not None]
            what = "this gang" if victim.whole else "these pods above this gang's minimum"
            work.append(self._remove(victim, objs, f"{why}; {what} had priority {victim.priority}"))
        names = ", ".join(
            f"{v.key} ({len(v.pods)} {'pod(s)' if v.whole else 'extra pod(s)'}, priority {v.priority})"
            for v in selection.victims
        )
        podgang = None if key.single else self.source.podgang(key)
        work.append(
            self.events.preempting(
                podgang,
                gang.pods.values(),
                f"preempting {len(selection.victims)} gang(s) in {selection.domain}: {names}",
            )
        )
        await asyncio.gather(*work)

    async def _remove(self, victim: VictimGang, pods: list[Obj], message: str) -> None:
        podgang = None
        if victim.whole:
            self.on_preempted(victim.key, message)
            podgang = None if victim.key.single else self.source.podgang(victim.key)
        await self.events.preempted(podgang, pods, message)
        for pod in pods:
            if self.pod_status is not None:
                await self.pod_status.disruption_target(pod, message)
        await asyncio.gather(*(self.remover.remove(pod) for pod in pods))

    def _exists(self, pod_key: str) -> bool:
        namespace, _, name = pod_key.partition("/")
        return self.source.pod(namespace, name) is not None

    def _ended(self, nomination: Nomination | None) -> None:
        if nomination is None:
            return
        self.metrics.reservation_age.observe(max(self.clock.monotonic() - nomination.since, 0.0))
        self.metrics.reservations.set(len(self.nominations))


def running_gangs(
    source: GangSource, snapshot: Snapshot, skip: Collection[GangKey]
) -> list[tuple[GangKey, list[BoundPod]]]:
    """The snapshot's bound pods by gang (their `grove.io/podgang` label; a pod without one is a gang of its own),
    by key, leaving out the gangs in `skip`, gangs with a pod still assumed (a binding in flight: moving or evicting
    its bound pods could leave it partial) and a Reservation's hold (a pod of no namespace)."""
    pods: dict[GangKey, list[BoundPod]] = {}
    busy: set[GangKey] = set()
    for bound, alive in zip(snapshot.pods, snapshot.pod_alive, strict=True):
        if not alive or not bound.namespace:
            continue  # a departed row (snapshots keep them, marked), or a Reservation's hold: never a victim
        label = bound.labels.get(LABEL_PODGANG)
        owner = GangKey(bound.namespace, label) if label else GangKey(bound.namespace, bound.name, single=True)
        if owner in skip:
            continue
        if source.cache.is_assumed(PodKey(bound.namespace, bound.name)):
            busy.add(owner)
        pods.setdefault(owner, []).append(bound)
    return [(owner, running) for owner, running in sorted(pods.items()) if owner not in busy]


def _with(status: Status, reason: str) -> Status:
    return Status(status.code, (*status.reasons, reason))
