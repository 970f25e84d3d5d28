"""The PodCliqueScalingGroup reconciler: get → delete flow → spec steps → status (which always runs).

Only PCSGs controlled by a PodCliqueSet are reconciled; a PCSG whose PodCliqueSet is missing gets a `lastErrors`
entry and a Warning Event and is retried slowly. Deletion drops the finalizer; member PodCliques go through GC.
"""

from __future__ import annotations

import pydantic

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_api import labels as glabels
from grove_operator import parsed
from grove_operator.components import (
    PODCLIQUESCALINGGROUPS,
    PODCLIQUESETS,
    ComponentError,
    Step,
    SyncContext,
    controller_owner,
    ensure_finalizer,
    last_errors,
    remove_finalizer,
    run_steps,
    write_status,
)
from grove_operator.config import OperatorConfig
from grove_operator.podcliqueset.reconciler import parse_podcliqueset
from grove_operator.scalinggroup.members import PCS, MemberPodCliques, PcsgContext, member_podcliques
from grove_operator.status.scalinggroup import compute_scaling_group_status
from grove_runtime.cache import Cache
from grove_runtime.client import Client
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.events import EventRecorder
from grove_runtime.expectations import Expectations
from grove_runtime.keys import ObjectKey, Result, TerminalError

__all__ = ["ScalingGroupReconciler"]

ERR_MISSING_PARENT = "ERR_MISSING_PARENT"


class ScalingGroupReconciler:
    """Reconciles one PodCliqueScalingGroup."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        recorder: EventRecorder,
        config: OperatorConfig,
        *,
        clock: Clock | None = None,
        expectations: Expectations[ObjectKey] | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.config = config
        self.clock = clock or LoopClock()
        self.expectations = expectations or Expectations(timeout=config.expectations_timeout, clock=self.clock)
        self.members = MemberPodCliques()
        self.spec_steps: tuple[Step[PodCliqueScalingGroup], ...] = (self._ensure_finalizer, self.members.sync)

    async def reconcile(self, key: ObjectKey) -> Result:
        """Get → delete flow → spec steps → status."""
        raw = self.cache.get(PODCLIQUESCALINGGROUPS, key)
        if raw is None:
            return Result()
        if (raw.get("metadata") or {}).get("deletionTimestamp"):
            await remove_finalizer(self.client, PODCLIQUESCALINGGROUPS, raw, glabels.FINALIZER_PCSG)
            return Result()
        owner = controller_owner(raw)
        if owner is None or owner.get("kind") != PodCliqueSet.KIND:
            await self.recorder.warning(raw, "ScalingGroupNotManaged", "not controlled by a PodCliqueSet; ignoring it")
            return Result()
        try:
            pcsg = parsed.parse(PodCliqueScalingGroup, raw)
        except pydantic.ValidationError as exc:
            await self.recorder.warning(raw, "InvalidPodCliqueScalingGroup", f"cannot parse: {exc}")
            raise TerminalError(f"invalid PodCliqueScalingGroup {key}") from exc
        ctx: PcsgContext = SyncContext(
            self.client, self.cache, self.recorder, self.expectations, self.config, key, raw, pcsg, self.clock.now()
        )
        pcs_raw = self.cache.get(PODCLIQUESETS, ObjectKey(key.namespace, str(owner.get("name") or "")))
        if pcs_raw is None:
            missing = ComponentError(ERR_MISSING_PARENT, "get", f"PodCliqueSet {owner.get('name')!r} not found")
            await self.recorder.warning(raw, "ParentNotFound", missing.message)
            await self._write(ctx, None, missing)
            return Result(requeue_after=self.config.retry_interval * 6)
        pcs = parse_podcliqueset(pcs_raw)
        ctx.extra[PCS] = pcs
        result, failure = await run_steps(ctx, self.spec_steps)
        await self._write(ctx, pcs, failure)
        if failure is not None:
            raise failure
        return result or Result()

    async def _ensure_finalizer(self, ctx: PcsgContext) -> Result | None:
        await ensure_finalizer(self.client, PODCLIQUESCALINGGROUPS, ctx.raw, glabels.FINALIZER_PCSG)
        return None

    async def _write(self, ctx: PcsgContext, pcs: PodCliqueSet | None, failure: ComponentError | None) -> None:
        """Pure status from the cached member PodCliques, written only if it changed."""
        status = dict(ctx.raw.get("status") or {})
        if pcs is not None:
            members = [parsed.parse(PodClique, o) for o in member_podcliques(ctx)]
            status = compute_scaling_group_status(pcs, ctx.owner, members, ctx.now)
            if failure is None and ctx.owner.metadata.generation is not None:
                status["observedGeneration"] = ctx.owner.metadata.generation
        errors = last_errors(failure, ctx.now, (ctx.raw.get("status") or {}).get("lastErrors"))
        if errors is None:
            status.pop("lastErrors", None)
        else:
            status["lastErrors"] = errors
        await write_status(self.client, PODCLIQUESCALINGGROUPS, ctx.raw, status)
