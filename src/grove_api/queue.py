"""Queue (`scheduling.run.ai/v2`, cluster scoped): KAI-scheduler's queue, so Queue manifests written for KAI apply
unchanged on a cluster where grove-scheduler serves the gangs.

A queue has, per resource (`gpu` in devices, `cpu` in millicores, `memory` in megabytes, as KAI counts them), a
`quota` (guaranteed, the "deserved" share), a `limit` (a hard cap) and an `overQuotaWeight` (its share of what
is left above all quotas). -1 means unlimited for `limit`, and for `quota` "everything it asks" (KAI's default
queues use it). `parentQueue` makes a tree: children share what their parent gets. `status` is written by the
scheduler: what the queue's bound pods hold (`allocated`), what its bound and pending pods ask (`requested`) and
its computed `fairShare`, each a resource list (`nvidia.com/gpu`, `cpu`, `memory`), plus GPU figures as plain
numbers for `kubectl get queues`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from grove_api._meta import Condition, GroveModel, Int64, ObjectMeta

__all__ = [
    "QUEUE_API_VERSION",
    "UNLIMITED",
    "Queue",
    "QueueResource",
    "QueueResources",
    "QueueSpec",
    "QueueStatus",
]

QUEUE_API_VERSION = "scheduling.run.ai/v2"
UNLIMITED = -1.0
"""`quota` or `limit` of -1: no bound."""


class QueueResource(GroveModel):
    """One resource's share settings (KAI's defaults: no quota, no limit, weight 1)."""

    quota: float = 0.0
    limit: float = UNLIMITED
    over_quota_weight: float = 1.0


class QueueResources(GroveModel):
    """Per-resource settings: GPUs (devices), CPU (millicores), memory (megabytes)."""

    gpu: QueueResource | None = None
    cpu: QueueResource | None = None
    memory: QueueResource | None = None


class QueueSpec(GroveModel):
    """A queue's place in the tree, its priority among siblings and its resource settings."""

    parent_queue: str | None = None
    priority: Int64 | None = None
    display_name: str | None = None
    resources: QueueResources | None = None


class QueueStatus(GroveModel):
    """Written by the scheduler: allocated, requested and fair share per resource (resource lists)."""

    allocated: dict[str, str] | None = None
    requested: dict[str, str] | None = None
    fair_share: dict[str, str] | None = None
    allocated_gpus: float | None = None
    requested_gpus: float | None = None
    fair_share_gpus: float | None = None
    pending_gangs: Int64 | None = None
    child_queues: list[str] | None = None
    conditions: list[Condition] | None = None


class Queue(GroveModel):
    """A Queue object as stored by the API server."""

    API_VERSION: ClassVar[str] = QUEUE_API_VERSION
    KIND: ClassVar[str] = "Queue"

    api_version: Literal["scheduling.run.ai/v2"] = "scheduling.run.ai/v2"
    kind: Literal["Queue"] = "Queue"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus | None = None
