"""The scheduler's configuration: one frozen value built by the CLI (or a test) and read by every component.

Why one dataclass: the knobs (scheduler name, lease, ports, concurrency, backoff, placement limits) are few, and
keeping them together makes the wiring in `grove_sched.app` the only place that interprets them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from grove_runtime.leaderelection import LeaseSettings
from grove_sched.model import PlacementOptions

__all__ = ["SchedulerConfig"]


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Everything `grove-scheduler` can be told; the defaults are the production ones."""

    scheduler_name: str = "grove-scheduler"
    """The first `schedulerName` served: the Events' reporting component for gangs of no other served name."""
    extra_scheduler_names: tuple[str, ...] = ()
    """Further `schedulerName`s served by this process (`kai-scheduler`, `koord-scheduler` where those are not
    installed), so workloads written for them run unchanged."""
    kubeconfig: str | None = None
    metrics_port: int | None = 8080
    metrics_host: str = "127.0.0.1"
    probes_with_metrics: bool = True
    """/healthz and /readyz on the metrics listener (kube-scheduler's single port); False: on their own listener
    at health_host:health_port (None: no probes)."""
    health_host: str = "127.0.0.1"
    health_port: int | None = None
    leader_elect: bool = True
    lease: LeaseSettings = field(default_factory=lambda: LeaseSettings(name="grove-scheduler"))
    bind_concurrency: int = 32
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    unschedulable_flush: float = 30.0
    assumed_ttl: float = 30.0
    status_workers: int = 4
    status_settle: float = 1.0
    """Seconds a PodGang status that is still moving (scheduled, not yet Running) waits before it is written, so
    that one write carries the gang's outcome (`grove_sched.podgang_status`)."""
    inline_solve_limit: float = 0.02
    lookahead_gangs: int = 0
    """Queued gangs each placement looks ahead over (`grove_sched.placement.place_ahead`; 0: off). Placement then
    costs up to four greedy rollouts of that many gangs, well above the single-gang latency bound."""
    log_level: str = "INFO"
    placement: PlacementOptions = field(default_factory=PlacementOptions)
    preemption: bool = True
    """Preempt lower-priority whole gangs for an unschedulable gang (kube-scheduler's DefaultPreemption is on)."""
    reservations: bool = True
    """Place and honour Koordinator Reservations (`crds/scheduling.koordinator.sh_reservations`; without the CRD
    there are none)."""
    preemption_eviction: Literal["delete", "evict"] = "delete"
    """How victims are removed: graceful DELETE (as kube-scheduler), or the Eviction API (PodDisruptionBudgets)."""
    default_queue: str = "default-queue"
    """The queue of gangs without a `kai.scheduler/queue` label (KAI's default queue), once any Queue exists."""
    defrag_report: bool = False
    """Report a defragmentation plan (Event `DefragmentationPlan`, log, metrics) for a gang that does not fit only
    because free capacity is scattered; nothing is moved (`grove_sched.preemption.defrag_report`)."""
    defrag_interval: float = 10.0
    """Seconds before the defragmentation report searches the same waiting gang again."""
    queue_status_interval: float = 2.0
    """Seconds between Queue status writes (only queues whose status changed are written)."""

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        """Every served `schedulerName`, the first one first, each once."""
        return tuple(dict.fromkeys((self.scheduler_name, *self.extra_scheduler_names)))
