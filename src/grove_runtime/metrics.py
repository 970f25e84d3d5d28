"""Prometheus metrics helpers: the standard controller and workqueue metrics, under a caller-chosen prefix.

Why: every controller should expose the same signals (reconciles by result, reconcile latency, queue depth,
queue latency, retries) so dashboards work across grove-operator and grove-scheduler. Callers choose the prefix
(``grove_operator``, ``grove_scheduler``) and the registry; metric objects are created once per registry.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

RECONCILE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ControllerMetrics:
    """``<prefix>_reconcile_total{controller,result}``, ``<prefix>_reconcile_duration_seconds{controller}``,
    ``<prefix>_workqueue_depth{name}``, ``<prefix>_workqueue_queue_duration_seconds{name}`` and
    ``<prefix>_workqueue_retries_total{name}``."""

    def __init__(self, prefix: str, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.reconcile_total = Counter(
            f"{prefix}_reconcile_total",
            "Reconciles by controller and result (success, requeue_after, error, terminal).",
            ["controller", "result"],
            registry=self.registry,
        )
        self.reconcile_duration = Histogram(
            f"{prefix}_reconcile_duration_seconds",
            "Time spent in one reconcile.",
            ["controller"],
            buckets=RECONCILE_BUCKETS,
            registry=self.registry,
        )
        self.workqueue_depth = Gauge(
            f"{prefix}_workqueue_depth", "Keys ready to be processed.", ["name"], registry=self.registry
        )
        self.workqueue_latency = Histogram(
            f"{prefix}_workqueue_queue_duration_seconds",
            "Time a key waits in the queue before a worker picks it up.",
            ["name"],
            buckets=RECONCILE_BUCKETS,
            registry=self.registry,
        )
        self.workqueue_retries = Counter(
            f"{prefix}_workqueue_retries_total",
            "Rate-limited re-adds (failed reconciles).",
            ["name"],
            registry=self.registry,
        )

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        """Count one reconcile and record its duration."""
        self.reconcile_total.labels(controller=controller, result=result).inc()
        self.reconcile_duration.labels(controller=controller).observe(seconds)

    def queue_depth(self, name: str, depth: int) -> None:
        """Set the depth gauge of queue ``name``."""
        self.workqueue_depth.labels(name=name).set(depth)

    def queue_latency(self, name: str, seconds: float) -> None:
        """Observe how long a key waited in queue ``name``."""
        self.workqueue_latency.labels(name=name).observe(seconds)

    def queue_retry(self, name: str) -> None:
        """Count one retry in queue ``name``."""
        self.workqueue_retries.labels(name=name).inc()
