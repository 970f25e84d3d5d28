"""Queues and fair share (KAI's `scheduling.run.ai/v2` Queue semantics) for grove-scheduler.

* `spec`: Queue objects as plain values (per-resource quota, limit, over-quota weight; the tree);
* `fairshare`: the pure, hierarchical, per-resource fair-share division;
* `policy`: the pure per-decision rules (limits, distance to fair share, which gangs may be reclaimed);
* `book`: the running figures (allocated, requested, fair share per queue), recomputed on change;
* `gate`: the hooks the scheduling cycle, the scheduling queue and the preemptor call;
* `status`: Queue status and `grove_queue_*` metrics, rate-limited.
"""

from grove_sched.tenancy.book import DEFAULT_QUEUE, Figures, QueueBook, queue_of
from grove_sched.tenancy.fairshare import fair_shares, water_fill
from grove_sched.tenancy.gate import QueueEvents, QueueGate
from grove_sched.tenancy.policy import Candidate, distance, limit_breach, reclaimable
from grove_sched.tenancy.spec import QueueSpec, ResourceShare, parse_queue
from grove_sched.tenancy.status import QUEUES, QueueMetrics, QueueStatusWriter

__all__ = [
    "DEFAULT_QUEUE",
    "QUEUES",
    "Candidate",
    "Figures",
    "QueueBook",
    "QueueEvents",
    "QueueGate",
    "QueueMetrics",
    "QueueSpec",
    "QueueStatusWriter",
    "ResourceShare",
    "distance",
    "fair_shares",
    "limit_breach",
    "parse_queue",
    "queue_of",
    "reclaimable",
    "water_fill",
]
