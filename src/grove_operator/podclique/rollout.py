"""The PodClique's part of a rolling update: its pods replaced, Ready ones one at a time (grove-reference §3.8).

It acts for a standalone PodClique of the PodCliqueSet replica being updated under RollingRecreate (scaling-group
members are recreated whole by their scaling group), and only while the pod cache is trustworthy (no creation or
deletion of this PodClique still unobserved), so a deletion is never decided twice on a stale cache. Which pods go
is `lifecycle.podrollout.plan_pods`. `status.updateProgress` says what is being updated and which Ready pod is being
replaced; it is written before the pod is deleted, so an operator restarted between the two resumes from it. Under
OnDelete nothing is deleted here: a pod deleted by hand comes back from the PodClique's (new) template.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from grove_api import PodCliqueSet, PodCliqueUpdateProgress
from grove_operator import hashing
from grove_operator.desired.layout import identify_podclique
from grove_operator.kinds import PODCLIQUES
from grove_operator.lifecycle.lane import lane_allows, replica_lane
from grove_operator.lifecycle.podrollout import plan_pods
from grove_operator.lifecycle.progress import podclique_progress
from grove_operator.lifecycle.replacement import Replacement
from grove_operator.lifecycle.rollout import current_replica
from grove_operator.lifecycle.sources import cache_sources
from grove_operator.podclique.pods import PCS, PclqContext, owned_pods
from grove_operator.reconcile.failures import ComponentError, describe, error_code
from grove_operator.reconcile.writes import delete_expecting, record_status
from grove_operator.status.podclique import count_pods
from grove_runtime.keys import Result
from grove_runtime.resources import PODS

__all__ = ["PodRollout"]

log = structlog.get_logger("grove_operator.podclique.rollout")
Obj = dict[str, Any]


def _progress_json(progress: PodCliqueUpdateProgress) -> Obj:
    return progress.model_dump(by_alias=True, exclude_none=True, mode="json")


@dataclass(frozen=True)
class PodRollout:
    """Replace the pods of a standalone PodClique whose PodCliqueSet replica is being updated."""

    name: str = "pod-rollout"

    def existing_names(self, ctx: PclqContext) -> list[str]:
        """It owns nothing of its own."""
        return []

    async def delete(self, ctx: PclqContext) -> None:
        """Nothing to clean up."""

    async def sync(self, ctx: PclqContext) -> Result | None:
        """One step of the update, when it is this PodClique's turn; always lets the later steps run."""
        pcs: PodCliqueSet = ctx.extra[PCS]
        status = ctx.owner.status
        progress = status.update_progress if status is not None else None
        instance = identify_podclique(pcs, ctx.key.name)
        if instance is None or instance.scaling_group is not None:
            return None
        hashes = hashing.clique_hashes(pcs.spec.template)
        target = hashes[instance.clique.name]
        pods = owned_pods(ctx)
        if pcs.spec.effective_update_strategy() == "OnDelete":
            if progress is not None and progress.update_ended_at is None:
                await self._record(ctx, progress.model_copy(update={"update_ended_at": ctx.now}), pods, target)
            return None
        if not ctx.expectations.satisfied(ctx.key):
            return None
        generation = hashing.generation_hash(pcs.spec.template)
        my_turn = current_replica(pcs.status.update_progress if pcs.status else None) == instance.pcs_replica
        lane = replica_lane(pcs, instance.pcs_replica, cache_sources(ctx), hashes) if my_turn else []
        turn = my_turn and lane_allows(lane, ctx.key.name)
        plan = plan_pods(pods, target, ctx.owner.spec.replicas, turn=turn)
        if not my_turn:  # only the replica being updated loses pods; another one may only close its progress
            plan = Replacement(old=plan.old, going=plan.going)
        new = podclique_progress(progress, generation, target, plan, ctx.now) if my_turn or not plan.old else progress
        if new != progress and new is not None:
            if not await self._record(ctx, new, pods, target):
                return None
            if new.update_ended_at is not None:
                await ctx.recorder.normal(ctx.raw, "PodCliqueUpdated", f"every pod runs template {target}")
        victims = [*plan.at_once, *([plan.replace] if plan.replace else [])]
        if victims:
            await self._delete(ctx, plan, victims)
        if my_turn and plan.old:
            log.info(
                "rolling update",
                namespace=ctx.namespace,
                name=ctx.key.name,
                old=plan.old,
                deleted=victims,
                waiting=plan.waiting,
            )
            ctx.requeue_after(ctx.config.retry_interval)
        return None

    @staticmethod
    async def _record(ctx: PclqContext, progress: PodCliqueUpdateProgress, pods: Sequence[Obj], target: str) -> bool:
        """The progress, with `updatedReplicas` counted against the same template: never one without the other."""
        fields = {"updateProgress": _progress_json(progress), "updatedReplicas": count_pods(pods, target).updated}
        return await record_status(ctx, PODCLIQUES, fields)

    async def _delete(self, ctx: PclqContext, plan: Replacement[str], victims: list[str]) -> None:
        """Delete the victims, expecting their deletions so the next reconcile waits for the cache to show them."""
        ctx.expectations.expect(ctx.key, deletions=len(victims))
        failures = await delete_expecting(
            ctx.client, PODS, victims, ctx.namespace, lambda n: ctx.expectations.lower(ctx.key, deletions=n)
        )
        if failures:
            raise ComponentError(error_code(self.name), "delete", describe(failures[0]))
        if plan.at_once:
            shown = ", ".join(plan.at_once[:5])
            await ctx.recorder.normal(
                ctx.raw,
                "DeletedOutdatedPods",
                f"deleted {len(plan.at_once)} pod(s) on an older template that were not Ready: {shown}",
            )
        if plan.replace:
            await ctx.recorder.normal(
                ctx.raw,
                "ReplacingPod",
                f"replacing Ready pod {plan.replace}, the oldest of {plan.old} pod(s) on an older template",
            )
