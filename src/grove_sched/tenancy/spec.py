"""Queues as plain values: the tree, per-resource quota / limit / over-quota weight, read from Queue objects.

Why plain values: fair share, admission and reclaim are pure functions over these (an import contract keeps
`grove_sched.tenancy`'s decision modules free of I/O), so they can be property-tested on random trees.

Units are KAI's: GPUs in devices, CPU in millicores, memory in megabytes (10^6 bytes). `UNLIMITED` (-1) as a
limit is no cap; as a quota it means "deserves all it asks" (KAI's default queues are written with it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_sched.model import CPU, GPU, MEMORY

__all__ = [
    "KAI_RESOURCES",
    "RESOURCES",
    "UNLIMITED",
    "QueueSpec",
    "ResourceShare",
    "Vector",
    "parse_queue",
    "vector_of",
    "zero",
]

RESOURCES = ("gpu", "cpu", "memory")
"""The resources queues account, in KAI's names; a `Vector` holds one float per name, in this order."""
KAI_RESOURCES = {GPU: "gpu", CPU: "cpu", MEMORY: "memory"}
"""Pod resource name → queue resource name."""
_SCALE = {GPU: 1.0, CPU: 1.0, MEMORY: 1e-6}  # requests: devices, millicores, bytes → devices, millicores, MB
UNLIMITED = -1.0

Vector = tuple[float, float, float]


def zero() -> Vector:
    """No resources."""
    return (0.0, 0.0, 0.0)


def vector_of(requests: Mapping[str, int]) -> Vector:
    """A pod's (or gang's) requests as a queue vector."""
    values = [0.0, 0.0, 0.0]
    for name, queue_name in KAI_RESOURCES.items():
        values[RESOURCES.index(queue_name)] = float(requests.get(name, 0)) * _SCALE[name]
    return (values[0], values[1], values[2])


@dataclass(frozen=True, slots=True)
class ResourceShare:
    """One resource's settings: quota (-1: all it asks), limit (-1: none), weight of the over-quota split."""

    quota: float = 0.0
    limit: float = UNLIMITED
    weight: float = 1.0

    def cap(self) -> float:
        """The hard cap (inf when unlimited)."""
        return math.inf if self.limit < 0 else self.limit


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A queue: its parent (None: a root), priority among siblings, and one `ResourceShare` per resource."""

    name: str
    parent: str | None = None
    priority: int = 0
    shares: tuple[ResourceShare, ResourceShare, ResourceShare] = field(
        default_factory=lambda: (ResourceShare(), ResourceShare(), ResourceShare())
    )


def _number(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return default
    return float(value)


def _share(raw: Any) -> ResourceShare:
    if not isinstance(raw, Mapping):
        return ResourceShare()
    quota = _number(raw.get("quota"), 0.0)
    limit = _number(raw.get("limit"), UNLIMITED)
    weight = max(0.0, _number(raw.get("overQuotaWeight"), 1.0))
    return ResourceShare(UNLIMITED if quota < 0 else quota, UNLIMITED if limit < 0 else limit, weight)


def parse_queue(obj: Mapping[str, Any]) -> QueueSpec:
    """A Queue object (as the API server stores it) → `QueueSpec`; missing or malformed fields take KAI's defaults."""
    name = str((obj.get("metadata") or {}).get("name", ""))
    raw_spec = obj.get("spec")
    spec: Mapping[str, Any] = raw_spec if isinstance(raw_spec, Mapping) else {}
    parent = spec.get("parentQueue")
    priority = spec.get("priority")
    raw_resources = spec.get("resources")
    resources: Mapping[str, Any] = raw_resources if isinstance(raw_resources, Mapping) else {}
    gpu, cpu, memory = (_share(resources.get(r)) for r in RESOURCES)
    return QueueSpec(
        name=name,
        parent=str(parent) if isinstance(parent, str) and parent and parent != name else None,
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        shares=(gpu, cpu, memory),
    )
