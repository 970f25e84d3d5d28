"""Prometheus metrics of the scheduler (`grove_scheduler_*`), on a registry the manager serves at `/metrics`.

Why these: they answer the operational questions about a gang scheduler: how long does a ready gang wait until
its last pod is bound (`gang_scheduling_duration_seconds`), how much of that is the solver (`solve_duration_seconds`)
and the API (`bind_duration_seconds`), how attempts end (`schedule_attempts_total{result}`), how many gangs wait
in each queue room (`pending_gangs{room}`), which served `schedulerName` the attempts and binds were for (the
`scheduler_name` label), how good the placements are (`placement_score`), and what preemption
did (`preemption_attempts_total{result}`, victims and GPUs evicted, how long freed capacity stays reserved), and
what the defragmentation report found (`defrag_searches_total{result}`, `defrag_plans_total`, moved gangs per plan).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["SchedulerMetrics"]

_FAST = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5)
_SLOW = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class SchedulerMetrics:
    """The scheduler's metric objects, created once per registry."""

    def __init__(self, registry: CollectorRegistry | None = None, prefix: str = "grove_scheduler") -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.gang_latency = Histogram(
            f"{prefix}_gang_scheduling_duration_seconds",
            "Time from a gang becoming ready to its last bind.",
            buckets=_SLOW,
            registry=self.registry,
        )
        self.solve_time = Histogram(
            f"{prefix}_solve_duration_seconds",
            "Wall time of one placement (pre-filter, greedy and CP-SAT).",
            buckets=_FAST,
            registry=self.registry,
        )
        self.bind_time = Histogram(
            f"{prefix}_bind_duration_seconds",
            "Wall time of binding one gang (all binding POSTs, plus rollback on failure).",
            buckets=_SLOW,
            registry=self.registry,
        )
        self.attempts = Counter(
            f"{prefix}_schedule_attempts_total",
            "Scheduling attempts by result (scheduled, unschedulable, unresolvable, invalid, queue, bind_failed, "
            "error, gang_timeout) and by the schedulerName the gang addressed.",
            ["result", "scheduler_name"],
            registry=self.registry,
        )
        self.pending = Gauge(
            f"{prefix}_pending_gangs",
            "Gangs in the scheduling queue by room (active, backoff, unschedulable, in_flight).",
            ["room"],
            registry=self.registry,
        )
        self.score = Histogram(
            f"{prefix}_placement_score",
            "Placement score of bound gangs (1.0 = proven best).",
            buckets=(0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0),
            registry=self.registry,
        )
        self.rollbacks = Counter(
            f"{prefix}_gang_rollbacks_total",
            "Gangs whose partial binds were rolled back by deleting the bound pods, by cause (bind, recovery).",
            ["cause"],
            registry=self.registry,
        )
        self.pods_bound = Counter(
            f"{prefix}_pods_bound_total",
            "Pods bound, by the schedulerName they addressed.",
            ["scheduler_name"],
            registry=self.registry,
        )

        self.preemption_attempts = Counter(
            f"{prefix}_preemption_attempts_total",
            "Preemption attempts for unschedulable gangs by result (preempted, waiting, no_victims, not_allowed).",
            ["result"],
            registry=self.registry,
        )
        self.preemption_victims = Counter(
            f"{prefix}_preemption_victims_total",
            "Victims of preemption, counted as gangs and as pods.",
            ["kind"],
            registry=self.registry,
        )
        self.preemption_gpus = Counter(
            f"{prefix}_preemption_evicted_gpus_total",
            "GPUs requested by the pods evicted by preemption.",
            registry=self.registry,
        )
        self.reservations = Gauge(
            f"{prefix}_preemption_reservations",
            "Preemptors holding capacity freed for them (nominations).",
            registry=self.registry,
        )
        self.oldest_reservation = Gauge(
            f"{prefix}_preemption_oldest_reservation_seconds",
            "Age of the oldest reservation still held (0 when none is).",
            registry=self.registry,
        )
        self.reservation_age = Histogram(
            f"{prefix}_preemption_reservation_age_seconds",
            "How long a preemptor held its reserved capacity, observed when the reservation ends.",
            buckets=_SLOW,
            registry=self.registry,
        )

        self.defrag_searches = Counter(
            f"{prefix}_defrag_searches_total",
            "Defragmentation plan searches for unschedulable gangs by result (plan, no_plan, not_fragmented; "
            "skipped: the gang was searched less than the interval ago).",
            ["result"],
            registry=self.registry,
        )
        self.defrag_plans = Counter(
            f"{prefix}_defrag_plans_total",
            "Defragmentation plans reported (a gang's plan counts again only when it changes).",
            registry=self.registry,
        )
        self.defrag_plan_gangs = Histogram(
            f"{prefix}_defrag_plan_moved_gangs",
            "Gangs a reported defragmentation plan would move.",
            buckets=(1, 2, 3, 4, 6, 8),
            registry=self.registry,
        )

    def set_pending(self, counts: dict[str, int]) -> None:
        """Update the pending-gangs gauge from the queue's room counts."""
        for room, value in counts.items():
            self.pending.labels(room=room).set(value)
