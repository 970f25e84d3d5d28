"""The cache as `lane.Sources`: PodCliques, scaling groups and pods of one namespace, looked up by name.

The one read-only adapter between the informer cache and the pure lifecycle decisions, shared by the three
lifecycle components so they all see a replica the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grove_api import PodClique, PodCliqueScalingGroup
from grove_operator.kinds import INDEX_PODCLIQUE, PODCLIQUES, PODCLIQUESCALINGGROUPS
from grove_operator.lifecycle.lane import Sources
from grove_operator.reconcile.context import SyncContext
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import PODS

__all__ = ["cache_sources"]

Obj = dict[str, Any]


def cache_sources(ctx: SyncContext[Any]) -> Sources:
    """Lookups in the owner's namespace, parsing through the operator's parse memo."""
    namespace = ctx.namespace

    def pclq(name: str) -> PodClique | None:
        raw = ctx.cache.get(PODCLIQUES, ObjectKey(namespace, name))
        return ctx.parsed.parse(PodClique, raw) if raw is not None else None

    def pcsg(name: str) -> PodCliqueScalingGroup | None:
        raw = ctx.cache.get(PODCLIQUESCALINGGROUPS, ObjectKey(namespace, name))
        return ctx.parsed.parse(PodCliqueScalingGroup, raw) if raw is not None else None

    def pods(name: str) -> Sequence[Obj]:
        return ctx.cache.by_index(PODS, INDEX_PODCLIQUE, f"{namespace}/{name}")

    def pending(name: str) -> bool:
        return not ctx.expectations.satisfied(ObjectKey(namespace, name))

    return Sources(pclq, pcsg, pods, pending)
