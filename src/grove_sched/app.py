"""Wiring: the one place that assembles grove-scheduler from runtime parts and the configuration.

Why: the CLI, the end-to-end tests and the demo all need "a scheduler against this API server"; building it here
once keeps them identical. Lifecycle (owned by the runtime `Manager`): health/metrics server → informers for
pods, nodes, PodGangs, PriorityClasses, ClusterTopologyBindings, Queues and Koordinator Reservations (synced; their
events already fill the queue) → leader election on the Lease → recovery of partially bound gangs → the scheduling
loop and the PodGang status controller (and the Queue status writer).
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from grove_runtime.cache import Cache
from grove_runtime.client import Client, KubeClient
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.controller import Controller
from grove_runtime.events import EventRecorder
from grove_runtime.health import Address
from grove_runtime.leaderelection import unfenced
from grove_runtime.manager import Manager
from grove_runtime.metrics import ControllerMetrics
from grove_runtime.resources import NODES, PODS, PRIORITYCLASSES
from grove_sched.binder import Binder
from grove_sched.cache import SchedulerCache
from grove_sched.config import SchedulerConfig
from grove_sched.events import GangEvents
from grove_sched.gangs import GangKey
from grove_sched.handlers import NodeEvents, PodEvents, PodGangEvents, PriorityClassEvents, TopologyEvents
from grove_sched.metrics import SchedulerMetrics
from grove_sched.pod_status import PodStatusWriter
from grove_sched.podcache import slim_pod
from grove_sched.podgang_status import PODGANGS, PodGangStatusReconciler, StatusBook
from grove_sched.postfilter import NoPostFilter, PostFilter
from grove_sched.preemption import (
    DefragOptions,
    DefragReport,
    DeleteVictims,
    EvictVictims,
    PreemptionOptions,
    Preemptor,
    VictimRemover,
)
from grove_sched.queue import SchedulingQueue
from grove_sched.recovery import RecoveryReport, recover
from grove_sched.reservations import RESERVATIONS, ReservationEvents, Reservations
from grove_sched.scheduler import Scheduler
from grove_sched.source import GANG_INDEX, GangSource, gang_index
from grove_sched.tenancy import QUEUES, QueueBook, QueueEvents, QueueGate, QueueMetrics, QueueStatusWriter
from grove_sched.topology import CLUSTERTOPOLOGYBINDINGS

__all__ = ["SchedulerApp", "SchedulingRunnable", "build"]


class SchedulingRunnable:
    """Leader-only: recover partially bound gangs once, then run the scheduling loop."""

    name = "grove-scheduler"

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.recovery: RecoveryReport | None = None

    async def run(self) -> None:
        """Recovery, then the loop, until cancelled."""
        self.recovery = await recover(self.scheduler)
        await self.scheduler.run()


@dataclass(frozen=True, slots=True)
class SchedulerApp:
    """The assembled scheduler: run `manager.run()`; the other fields are for tests and the demo."""

    manager: Manager
    scheduler: Scheduler
    runnable: SchedulingRunnable
    status: Controller
    metrics: SchedulerMetrics


def build(
    config: SchedulerConfig,
    client: Client,
    *,
    clock: Clock | None = None,
    post_filter: PostFilter | None = None,
    victim_remover: VictimRemover | None = None,
) -> SchedulerApp:
    """Assemble a scheduler process against `client` (`post_filter`: what runs after an Unschedulable placement;
    by default preemption, unless `config.preemption` is off, wrapped by the defragmentation report when
    `config.defrag_report` is on; `victim_remover`: how it removes victims, by default
    as `config.preemption_eviction` says)."""
    clock = clock or LoopClock()
    registry = CollectorRegistry()
    informers = Cache(client, clock=clock)
    pods = informers.informer(PODS, transform=slim_pod)
    nodes = informers.informer(NODES)
    podgangs = informers.informer(PODGANGS)
    priorityclasses = informers.informer(PRIORITYCLASSES)
    # Kinds whose CRDs a cluster may lack (next to upstream Grove, without KAI or Koordinator): empty until served.
    topologies = informers.informer(CLUSTERTOPOLOGYBINDINGS, optional=True)
    queues = informers.informer(QUEUES, optional=True)
    informers.add_index(PODS, GANG_INDEX, gang_index)
    reservation_informer = informers.informer(RESERVATIONS, optional=True) if config.reservations else None
    metrics = SchedulerMetrics(registry)
    recorders = {name: EventRecorder(client, name, clock=clock) for name in config.scheduler_names}
    recorder = recorders[config.scheduler_name]
    book = StatusBook()
    elector = config.lease.elector(client, clock) if config.leader_elect else None
    leading = elector.leading if elector is not None else unfenced
    source = GangSource(informers, SchedulerCache(config.assumed_ttl), config.scheduler_names)
    events = GangEvents(recorder, recorders)
    pod_status = PodStatusWriter(client, clock)
    queue_book = QueueBook(config.default_queue)
    gate = QueueGate(queue_book)
    gate.podgang_of = source.podgang
    preemptor: Preemptor | None = None
    if post_filter is None and config.preemption:
        remover = victim_remover or _remover(config, client)
        options = PreemptionOptions(placement=config.placement)
        post_filter = preemptor = Preemptor(source, remover, events, pod_status, metrics, options=options, clock=clock)
        preemptor.victim_policy = gate.victims
    if config.defrag_report:
        defrag = DefragOptions(placement=config.placement)
        post_filter = DefragReport(
            post_filter or NoPostFilter(),
            source,
            events,
            metrics,
            options=defrag,
            interval=config.defrag_interval,
            clock=clock,
        )
    scheduler = Scheduler(
        source,
        Binder(client, config.bind_concurrency, leading),
        events,
        queue=SchedulingQueue(
            clock=clock,
            initial_backoff=config.initial_backoff,
            max_backoff=config.max_backoff,
            flush_after=config.unschedulable_flush,
            rank=gate.rank,
            ranked=lambda: queue_book.active,
        ),
        book=book,
        metrics=metrics,
        options=config.placement,
        clock=clock,
        inline_solve_limit=config.inline_solve_limit,
        lookahead_gangs=config.lookahead_gangs,
        post_filter=post_filter,
        pod_status=pod_status,
        gate=gate,
        reservations=Reservations(informers, client, clock, recorder) if config.reservations else None,
    )
    reconciler = PodGangStatusReconciler(
        client,
        book,
        lambda key: source.podgang(GangKey(key.namespace, key.name)),
        source.pods_of_podgang,
        source.scheduler_name,
        clock,
        leading,
        config.status_settle,
    )
    status = Controller(
        "podgang-status",
        reconciler,
        workers=config.status_workers,
        clock=clock,
        metrics=ControllerMetrics("grove_scheduler", registry),
    )
    scheduler.set_status_trigger(status.enqueue)
    if preemptor is not None:
        preemptor.on_preempted = scheduler.record_preempted
    pods.add_handler(PodEvents(scheduler, status.enqueue))
    nodes.add_handler(NodeEvents(scheduler))
    podgangs.add_handler(PodGangEvents(scheduler, status.enqueue))
    priorityclasses.add_handler(PriorityClassEvents(scheduler))
    topologies.add_handler(TopologyEvents(scheduler))
    queues.add_handler(QueueEvents(queue_book, scheduler.queue.move_all))
    if reservation_informer is not None and scheduler.reservations is not None:
        scheduler.reservations.wake = lambda key: scheduler.queue.add(key)
        reservation_informer.add_handler(
            ReservationEvents(scheduler.reservations, scheduler.queue.add, scheduler.queue.move_all)
        )
    metrics_address = Address(config.metrics_host, config.metrics_port) if config.metrics_port is not None else None
    manager = Manager(
        client,
        cache=informers,
        elector=elector,
        registry=registry,
        health_host=config.metrics_host if config.probes_with_metrics else config.health_host,
        health_port=config.metrics_port if config.probes_with_metrics else config.health_port,
        metrics="with-probes" if config.probes_with_metrics else metrics_address,
    )
    runnable = SchedulingRunnable(scheduler)
    manager.add(runnable)
    manager.add(status)
    manager.add(
        QueueStatusWriter(
            client,
            queue_book,
            QueueMetrics(registry),
            interval=config.queue_status_interval,
            clock=clock,
            leading=leading,
            refresh=lambda: queue_book.observe(scheduler.cache.snapshot()),
        )
    )
    return SchedulerApp(manager, scheduler, runnable, status, metrics)


def _remover(config: SchedulerConfig, client: Client) -> VictimRemover:
    """Graceful DELETE, or the Eviction API when configured (it needs the raw request of `KubeClient`)."""
    if config.preemption_eviction == "evict" and isinstance(client, KubeClient):
        return EvictVictims(client)
    return DeleteVictims(client)
