"""The scaling group's share of the lifecycle: its replicas recreated whole, by a rolling update or gang termination.

* Rolling update (RollingRecreate, when the PodCliqueSet is updating this group's replica): which replicas to
  recreate is `lifecycle.grouprollout.plan_group`; recreating one deletes all its member PodCliques, which
  `members.MemberPodCliques` creates again from the newest template. `status.updateProgress` records the group's
  update and the replica being recreated, written before the deletion so a restart resumes from it.
* Gang termination (no update of this group in progress): a replica whose counting breach outlived
  `terminationDelay` is recreated alone when the group keeps `minAvailable` healthy replicas, else the PodCliqueSet
  rebuilds its whole replica (`lifecycle.termination`); a younger breach requeues the group exactly when it will
  have outlived the delay.

Deleting a PodClique twice is harmless, so a decision taken again on a cache that does not show the first
deletion yet chooses the same replica and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import structlog

from grove_api import PodClique, PodCliqueScalingGroupUpdateProgress, PodCliqueSet
from grove_api import labels as glabels
from grove_operator import hashing
from grove_operator.desired.layout import is_terminating, scaling_group_identity
from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS
from grove_operator.lifecycle.grouprollout import plan_group
from grove_operator.lifecycle.lane import lane_allows, member_deletions, replica_lane
from grove_operator.lifecycle.progress import group_progress
from grove_operator.lifecycle.replacement import Replacement
from grove_operator.lifecycle.rollout import current_replica
from grove_operator.lifecycle.sources import cache_sources
from grove_operator.lifecycle.termination import Breach, pclq_breach, plan_group_termination, termination_delay
from grove_operator.reconcile.failures import ComponentError, describe, error_code
from grove_operator.reconcile.writes import delete_expecting, record_status
from grove_operator.scalinggroup.members import PCS, PcsgContext, member_podcliques
from grove_operator.status.scalinggroup import compute_scaling_group_status
from grove_runtime.keys import ObjectKey, Result

__all__ = ["REASON_GANG_TERMINATION", "ScalingGroupReplicas"]

log = structlog.get_logger("grove_operator.scalinggroup.lifecycle")
Obj = dict[str, Any]
REASON_GANG_TERMINATION = "GangTermination"


def _replica_of(pclq: Obj) -> int | None:
    value = ((pclq.get("metadata") or {}).get("labels") or {}).get(glabels.LABEL_PCSG_REPLICA_INDEX, "")
    return int(value) if value.isdigit() else None


@dataclass(frozen=True)
class ScalingGroupReplicas:
    """Rolling update and gang termination of the replicas of one scaling group."""

    name: str = "pcsg-replica"

    def existing_names(self, ctx: PcsgContext) -> list[str]:
        """It owns nothing of its own."""
        return []

    async def delete(self, ctx: PcsgContext) -> None:
        """Nothing to clean up."""

    async def sync(self, ctx: PcsgContext) -> Result | None:
        """The update step when it is this group's turn; gang termination otherwise."""
        pcs: PodCliqueSet = ctx.extra[PCS]
        identity = scaling_group_identity(pcs, ctx.key.name)
        if identity is None:
            return None
        if not ctx.expectations.satisfied(ObjectKey(ctx.namespace, member_deletions(ctx.key.name))):
            # The cache does not show the last recreation's deletions yet: deciding now would recreate the same
            # replica again, deleting the members just created under the same names.
            ctx.requeue_after(ctx.config.retry_interval)
            return None
        pcs_replica = identity[0]
        status = ctx.owner.status
        progress = status.update_progress if status is not None else None
        hashes = hashing.clique_hashes(pcs.spec.template)
        generation = hashing.generation_hash(pcs.spec.template)
        lane = replica_lane(pcs, pcs_replica, cache_sources(ctx), hashes)
        own = next(u for u in lane if u.name == ctx.key.name)
        rolling = pcs.spec.effective_update_strategy() == "RollingRecreate"
        my_turn = rolling and current_replica(pcs.status.update_progress if pcs.status else None) == pcs_replica
        plan = plan_group(own.replicas or (), turn=my_turn and lane_allows(lane, ctx.key.name))
        if not my_turn:
            plan = Replacement(old=plan.old, going=plan.going)
        new = progress
        if my_turn or not plan.old or not rolling:
            new = group_progress(progress, generation, plan, ctx.now)
        if not rolling and new is not None and new.update_ended_at is None:
            new = new.model_copy(update={"update_ended_at": ctx.now})
        if new != progress and new is not None and not await self._record(ctx, pcs, new):
            return None
        victims = [*plan.at_once, *([plan.replace] if plan.replace is not None else [])]
        if victims:
            await self._recreate(ctx, victims)
            shown = ", ".join(map(str, victims))
            await ctx.recorder.normal(
                ctx.raw, "RecreatingReplica", f"rolling update: recreating replica(s) {shown} from the newest template"
            )
        if my_turn and plan.old:
            log.info("rolling update", namespace=ctx.namespace, name=ctx.key.name, old=plan.old, waiting=plan.waiting)
            ctx.requeue_after(ctx.config.retry_interval)
        if new is not None and new.update_ended_at is None:
            return None  # no gang termination while the group is being updated
        await self._terminate(ctx, pcs)
        return None

    @staticmethod
    async def _record(ctx: PcsgContext, pcs: PodCliqueSet, progress: PodCliqueScalingGroupUpdateProgress) -> bool:
        """The progress, with `updatedReplicas` counted against the same template: never one without the other."""
        members = [ctx.parsed.parse(PodClique, o) for o in member_podcliques(ctx)]
        fields = {
            "updateProgress": progress.model_dump(by_alias=True, exclude_none=True, mode="json"),
            "updatedReplicas": compute_scaling_group_status(pcs, ctx.owner, members, ctx.now)["updatedReplicas"],
        }
        return await record_status(ctx, PODCLIQUESCALINGGROUPS, fields)

    async def _terminate(self, ctx: PcsgContext, pcs: PodCliqueSet) -> None:
        """Recreate the replicas whose counting breach outlived the delay, or requeue for the earliest one."""
        breaches: dict[int, Breach] = {}
        for raw in member_podcliques(ctx):
            index = _replica_of(raw)
            if index is None or index >= ctx.owner.spec.replicas:
                continue
            breach = pclq_breach(ctx.parsed.parse(PodClique, raw))
            if breach is not None and (index not in breaches or breach.since < breaches[index].since):
                breaches[index] = breach
        delay = termination_delay(pcs)
        plan = plan_group_termination(
            breaches, ctx.owner.spec.replicas, ctx.owner.spec.effective_min_available(), delay, ctx.now
        )
        if plan.wait is not None:
            ctx.requeue_after(plan.wait)
        if not plan.recreate:
            return
        text = pcs.spec.template.termination_delay or f"{delay:g}s"
        for index, breach in sorted(plan.recreate.items()):
            await self._recreate(ctx, [index])
            log.warning("gang termination", namespace=ctx.namespace, name=ctx.key.name, replica=index)
            await ctx.recorder.warning(
                ctx.raw,
                REASON_GANG_TERMINATION,
                f"replica {index}: {breach.describe()} for longer than terminationDelay {text}; recreating it",
            )

    async def _recreate(self, ctx: PcsgContext, indices: Iterable[int]) -> None:
        """Delete every member PodClique of the replicas `indices` (they are created again from the template).

        Each expected deletion that will never be observed is given back: a member already gone, and a delete
        that failed (an injected 409 say). One failure kept unaccounted held this group's rolling update, its
        gang termination and every later unit of its PodCliqueSet replica for the expectations' 5 minutes."""
        wanted = set(indices)
        victims = sorted(
            str(o["metadata"]["name"])
            for o in member_podcliques(ctx)
            if _replica_of(o) in wanted and not is_terminating(o)
        )
        # Counted until the cache shows them going: the other units of the replica's lane read this group's members
        # from their own cache, and must not take something down meanwhile.
        key = ObjectKey(ctx.namespace, member_deletions(ctx.key.name))
        ctx.expectations.expect(key, deletions=ctx.expectations.pending(key)[1] + len(victims))
        failures = await delete_expecting(
            ctx.client, PODCLIQUES, victims, ctx.namespace, lambda n: ctx.expectations.lower(key, deletions=n)
        )
        if failures:
            raise ComponentError(error_code(self.name), "delete", describe(failures[0]))
