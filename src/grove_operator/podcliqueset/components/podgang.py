"""PodGangs of a PodCliqueSet (group 3) and their `Initialized` condition (grove-reference §3.3).

Every expected gang is created or patched at once, even before its pods exist (empty references), so the
scheduler sees the gang before any pod is ungated. Gangs no longer expected (PCS or PCSG scale-in) are deleted.
Status discipline: a scheduler owns the PodGang status (phase, Scheduled, Ready, placementScore); the operator
only merges its own `Initialized` condition into the conditions of the freshest object it has (the server's
answer to its own write, else the cache) with a resourceVersion precondition, and writes `phase: Pending` only
together with the very first condition. A gang whose spec was edited by hand is reverted and reported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from grove_api import ClusterTopologyBinding, PodClique, PodGang
from grove_api import labels as glabels
from grove_operator import parsed
from grove_operator.components import (
    INDEX_PART_OF,
    PODCLIQUES,
    PODCLIQUESCALINGGROUPS,
    PODGANGS,
    create_or_patch,
    delete_if_exists,
    in_sync,
)
from grove_operator.desired import podgang as gangs
from grove_operator.podcliqueset.components._common import PcsContext, bounded, cached, children
from grove_operator.syncmemo import SyncMemo
from grove_runtime import errors
from grove_runtime.keys import Result
from grove_runtime.resources import PODS

__all__ = ["TOPOLOGIES", "PodGangs"]

TOPOLOGIES = "topologies"
Obj = dict[str, Any]


def _shape(spec: Mapping[str, Any] | None) -> list[tuple[str, int]]:
    return [(str(g.get("name")), int(g.get("minReplicas") or 0)) for g in (spec or {}).get("podgroups") or ()]


_MEMO = SyncMemo()


def _fingerprint(
    pcs_inputs: tuple[Any, ...], plan: gangs.GangPlan, pods: list[Mapping[str, Any]], pclqs: Mapping[str, Obj]
) -> tuple[Any, ...]:
    """Everything a gang's desired object and `Initialized` verdict depend on, as one comparable value: the PCS
    inputs, the plan, the pod references, and each member PodClique's existence, deletion and `spec.replicas`."""
    members: list[tuple[str, bool | None, Any]] = []
    for name in plan.pod_group_names:
        raw = pclqs.get(name)
        if raw is None:
            members.append((name, None, None))
        else:
            meta = raw.get("metadata") or {}
            members.append((name, bool(meta.get("deletionTimestamp")), (raw.get("spec") or {}).get("replicas")))
    return (pcs_inputs, plan, gangs.pod_references(plan.name, pods), members)


@dataclass(frozen=True)
class PodGangs:
    """Create-or-patch expected gangs, delete excess ones, maintain `Initialized`."""

    name: str = "podgang"

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """Cached PodGangs of the PCS."""
        return [o["metadata"]["name"] for o in children(ctx, PODGANGS, glabels.COMPONENT_PODGANG)]

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Converge the gangs; requeue while some gang still waits for its pods."""
        pcs = ctx.owner
        live = {
            str(o["metadata"]["name"]): int((o.get("spec") or {}).get("replicas") or 0)
            for o in children(ctx, PODCLIQUESCALINGGROUPS)
            if not (o.get("metadata") or {}).get("deletionTimestamp")
        }
        topologies: Mapping[str, ClusterTopologyBinding] = ctx.extra.get(TOPOLOGIES) or {}
        plans = gangs.expected_podgangs(pcs, live, topologies)
        expected = {p.name for p in plans}
        stale = [n for n in self.existing_names(ctx) if n not in expected]
        await bounded(partial(self._delete_one, ctx, n) for n in stale)
        owner_key = f"{ctx.namespace}/{ctx.key.name}"
        by_gang = gangs.group_pods_by_gang(ctx.cache.by_index(PODS, INDEX_PART_OF, owner_key))
        pclqs = {str(o["metadata"]["name"]): o for o in ctx.cache.by_index(PODCLIQUES, INDEX_PART_OF, owner_key)}
        scheduler = gangs.resolve_scheduler_name(pcs, ctx.config.default_scheduler_name)
        waiting = False
        writes: list[Callable[[], Awaitable[bool]]] = []
        # What a gang is built from besides its plan, its pods and its member PodCliques (see `_fingerprint`).
        pcs_inputs = (
            pcs.metadata.uid,
            pcs.metadata.generation,
            sorted((pcs.metadata.labels or {}).items()),
            sorted((pcs.metadata.annotations or {}).items()),
            scheduler,
        )
        for plan in plans:
            pods = by_gang.get(plan.name, [])
            existing = cached(ctx, PODGANGS, plan.name)
            memo_key = (ctx.namespace, plan.name)
            fingerprint = _fingerprint(pcs_inputs, plan, pods, pclqs)
            hit, created = _MEMO.recall(memo_key, existing, fingerprint)
            if existing is not None and pcs.metadata.generation is not None and hit:
                waiting = waiting or not created
                continue
            desired = gangs.build_podgang(pcs, plan, pods, scheduler)
            if existing is not None and in_sync(desired, existing, component=self.name):
                created = self._all_created(plan, pclqs, pods)
                if gangs.initialized_status(parsed.parse(PodGang, existing), created, ctx.now) is None:
                    _MEMO.in_sync(memo_key, existing, fingerprint, created)
                    waiting = waiting or not created
                    continue
            _MEMO.forget(memo_key)
            writes.append(partial(self._sync_one, ctx, plan, desired, existing, pods, pclqs))
        if any(await bounded(writes)):
            waiting = True
        return Result(requeue_after=ctx.config.retry_interval) if waiting else None

    @staticmethod
    def _all_created(plan: gangs.GangPlan, pclqs: Mapping[str, Obj], pods: list[Mapping[str, Any]]) -> bool:
        members = {n: parsed.parse(PodClique, pclqs[n]) for n in plan.pod_group_names if n in pclqs}
        return gangs.all_pods_created(plan, members, pods)

    async def _sync_one(
        self,
        ctx: PcsContext,
        plan: gangs.GangPlan,
        desired: Obj,
        existing: Obj | None,
        pods: list[Mapping[str, Any]],
        pclqs: Mapping[str, Obj],
    ) -> bool:
        """Write one gang that is missing, out of date or lacks its `Initialized` condition; True while waiting."""
        if existing is not None and _shape(existing.get("spec")) != _shape(desired["spec"]):
            await ctx.recorder.warning(
                existing, "PodGangSpecReverted", f"PodGang {plan.name} did not match its PodCliqueSet; reverted"
            )
        outcome, latest = await create_or_patch(ctx, PODGANGS, desired, existing, component=self.name)
        if outcome == "created":
            await ctx.recorder.normal(ctx.raw, "PodGangCreated", f"Created PodGang {plan.name}")
        created = self._all_created(plan, pclqs, pods)
        gang = parsed.parse(PodGang, latest) if isinstance(latest, dict) else PodGang.model_validate(latest)
        status = gangs.initialized_status(gang, created, ctx.now)
        if status is not None:
            rv = (latest.get("metadata") or {}).get("resourceVersion")
            body: Obj = {"status": status}
            if rv:
                body["metadata"] = {"resourceVersion": rv}
            try:
                await ctx.client.patch(PODGANGS, plan.name, body, ctx.namespace, subresource="status")
            except errors.Conflict:
                return True
            except errors.NotFound:
                return True
        return not created

    async def _delete_one(self, ctx: PcsContext, name: str) -> None:
        if await delete_if_exists(ctx.client, PODGANGS, name, ctx.namespace):
            await ctx.recorder.normal(ctx.raw, "PodGangDeleted", f"Deleted PodGang {name}")

    async def delete(self, ctx: PcsContext) -> None:
        """Delete every gang of the PCS."""
        await bounded(partial(self._delete_one, ctx, n) for n in self.existing_names(ctx))
