"""Queue status and `grove_queue_*` metrics, written from the queue book: rate-limited and only on change.

Why a periodic writer rather than a write per decision: a queue's figures move with every bind, and at hundreds of
binds a second one PATCH each would swamp the API server for numbers people read by eye. So every `interval`
seconds (leader only) the writer looks at the book's version; if it moved, it recomputes each queue's status and
merge-patches `queues/status` of the queues whose status differs from what it last wrote. Metrics (gauges, by
queue and resource) are set at the same moment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Gauge

from grove_runtime.client import Client
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.errors import NotFound
from grove_runtime.resources import ResourceType
from grove_sched.tenancy.book import Figures, QueueBook
from grove_sched.tenancy.spec import KAI_RESOURCES, RESOURCES, Vector, zero

__all__ = ["QUEUES", "QueueMetrics", "QueueStatusWriter", "queue_status"]

log = structlog.get_logger("grove_sched.tenancy")
QUEUES = ResourceType("scheduling.run.ai", "v2", "queues", "Queue", namespaced=False)
_LIST_NAMES = {queue_name: name for name, queue_name in KAI_RESOURCES.items()}


def _quantity(resource: str, amount: float) -> str:
    """A Kubernetes quantity for a queue amount (GPUs as a number, CPU in millicores, memory in megabytes)."""
    if resource == "cpu":
        return f"{round(amount)}m"
    if resource == "memory":
        return f"{round(amount)}M"
    return f"{amount:g}"


def _resource_list(amount: Vector) -> dict[str, str]:
    return {_LIST_NAMES[r]: _quantity(r, amount[i]) for i, r in enumerate(RESOURCES)}


def queue_status(name: str, figures: Figures, children: list[str]) -> dict[str, Any]:
    """The status body of one queue."""
    allocated = figures.allocated.get(name, zero())
    requested = figures.requested.get(name, zero())
    fair = figures.fair.get(name, zero())
    status: dict[str, Any] = {
        "allocated": _resource_list(allocated),
        "requested": _resource_list(requested),
        "fairShare": _resource_list(fair),
        "allocatedGpus": round(allocated[0], 3),
        "requestedGpus": round(requested[0], 3),
        "fairShareGpus": round(fair[0], 3),
        "pendingGangs": figures.pending_gangs.get(name, 0),
    }
    if children:
        status["childQueues"] = children
    return status


class QueueMetrics:
    """`grove_queue_allocated`, `grove_queue_fair_share` (labels queue, resource) and `grove_queue_pending_gangs`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.allocated = Gauge(
            "grove_queue_allocated", "Resources held by a queue's bound pods (GPUs, CPU millicores, memory MB).",
            ["queue", "resource"], registry=registry,
        )  # fmt: skip
        self.fair_share = Gauge(
            "grove_queue_fair_share", "A queue's computed fair share (GPUs, CPU millicores, memory MB).",
            ["queue", "resource"], registry=registry,
        )  # fmt: skip
        self.pending = Gauge(
            "grove_queue_pending_gangs", "Gangs of a queue waiting to be placed.", ["queue"], registry=registry
        )
        self._seen: set[str] = set()

    def publish(self, figures: Figures, queues: list[str]) -> None:
        """Set every gauge from `figures`; drop the series of queues that are gone."""
        for gone in self._seen - set(queues):
            for resource in RESOURCES:
                for gauge in (self.allocated, self.fair_share):
                    gauge.remove(gone, resource)
            self.pending.remove(gone)
        self._seen = set(queues)
        for name in queues:
            for i, resource in enumerate(RESOURCES):
                self.allocated.labels(name, resource).set(figures.allocated.get(name, zero())[i])
                self.fair_share.labels(name, resource).set(figures.fair.get(name, zero())[i])
            self.pending.labels(name).set(figures.pending_gangs.get(name, 0))


class QueueStatusWriter:
    """Leader-only runnable: every `interval` seconds, if the book changed, patch the statuses that differ."""

    name = "queue-status"

    def __init__(
        self,
        client: Client,
        book: QueueBook,
        metrics: QueueMetrics,
        *,
        interval: float = 2.0,
        clock: Clock | None = None,
        leading: Callable[[], bool] = lambda: True,
        refresh: Callable[[], None] = lambda: None,
    ) -> None:
        self.client = client
        self.book = book
        self.metrics = metrics
        self.interval = interval
        self.clock = clock or LoopClock()
        self.leading = leading
        self.refresh = refresh
        """Brings the book up to the scheduler cache's latest snapshot (binds since the last cycle count too)."""
        self._version = -1
        self._written: dict[str, Mapping[str, Any]] = {}

    async def run(self) -> None:
        """Until cancelled."""
        while True:
            await self.clock.sleep(self.interval)
            if self.leading():
                await self.sync()

    async def sync(self) -> None:
        """One round: publish metrics and write changed statuses (errors are logged, retried next round)."""
        if self.book.active:
            self.refresh()
        if self.book.version == self._version:
            return
        self._version = self.book.version
        figures = self.book.figures()
        names = sorted(self.book.queues)
        self.metrics.publish(figures, names)
        for name in names:
            children = sorted(q for q, spec in self.book.queues.items() if spec.parent == name)
            body = queue_status(name, figures, children)
            if self._written.get(name) == body:
                continue
            try:
                await self.client.patch(QUEUES, name, {"status": body}, subresource="status")
            except NotFound:
                continue
            except Exception as exc:  # the next round retries
                log.warning("queue status not written", queue=name, error=str(exc))
                self._version = -1
                continue
            self._written[name] = body
        for gone in set(self._written) - set(names):
            del self._written[gone]
