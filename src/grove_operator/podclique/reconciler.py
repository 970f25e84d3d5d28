"""The PodClique reconciler: get → delete flow → spec steps → status (which always runs).

Only PodCliques the operator manages are reconciled (label `managed-by=grove-operator` and exactly one owner of
kind PodCliqueSet or PodCliqueScalingGroup, §1.3); any other PodClique gets one Warning Event and is left alone.
A managed PodClique whose PodCliqueSet is missing gets a `lastErrors` entry and is retried slowly, never in a
tight loop. The status is not written while the pods this reconcile created or deleted are still unobserved.
Deletion clears the pod expectations and drops the finalizer; pods go through garbage collection.
"""

from __future__ import annotations

from typing import Any

import pydantic

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet, PodCliqueStatus
from grove_api import labels as glabels
from grove_operator import parsed
from grove_operator.components import (
    PODCLIQUES,
    PODCLIQUESETS,
    ComponentError,
    Step,
    SyncContext,
    ensure_finalizer,
    last_errors,
    managed,
    remove_finalizer,
    run_steps,
    write_status,
)
from grove_operator.config import OperatorConfig
from grove_operator.podclique.pods import PCS, PclqContext, Pods, owned_pods
from grove_operator.podcliqueset.reconciler import parse_podcliqueset
from grove_operator.status.podclique import compute_podclique_status
from grove_runtime.cache import Cache
from grove_runtime.client import Client
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.events import EventRecorder
from grove_runtime.expectations import Expectations
from grove_runtime.keys import ObjectKey, Result, TerminalError

__all__ = ["OWNER_KINDS", "PodCliqueReconciler", "is_managed_podclique"]

OWNER_KINDS = (PodCliqueSet.KIND, PodCliqueScalingGroup.KIND)
ERR_MISSING_PARENT = "ERR_MISSING_PARENT"


def is_managed_podclique(obj: dict[str, Any]) -> bool:
    """Managed-by label and exactly one owner reference, of kind PodCliqueSet or PodCliqueScalingGroup."""
    refs: list[Any] = list((obj.get("metadata") or {}).get("ownerReferences") or [])
    return managed(obj) and len(refs) == 1 and refs[0].get("kind") in OWNER_KINDS


class PodCliqueReconciler:
    """Reconciles one PodClique: its pods, their gates, and its status."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        recorder: EventRecorder,
        config: OperatorConfig,
        expectations: Expectations[ObjectKey],
        *,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.config = config
        self.expectations = expectations
        self.clock = clock or LoopClock()
        self.pods = Pods()
        self.spec_steps: tuple[Step[PodClique], ...] = (self._ensure_finalizer, self.pods.sync)

    async def reconcile(self, key: ObjectKey) -> Result:
        """Get → delete flow → spec steps → status."""
        raw = self.cache.get(PODCLIQUES, key)
        if raw is None:
            self.expectations.forget(key)
            return Result()
        if (raw.get("metadata") or {}).get("deletionTimestamp"):
            self.expectations.forget(key)
            await remove_finalizer(self.client, PODCLIQUES, raw, glabels.FINALIZER_PCLQ)
            return Result()
        if not is_managed_podclique(raw):
            await self.recorder.warning(
                raw,
                "PodCliqueNotManaged",
                "PodClique is not managed by grove-operator (needs the managed-by label and one PodCliqueSet or "
                "PodCliqueScalingGroup owner); ignoring it",
            )
            return Result()
        try:
            pclq = parsed.parse(PodClique, raw)
        except pydantic.ValidationError as exc:
            await self.recorder.warning(raw, "InvalidPodClique", f"cannot parse PodClique: {exc}")
            raise TerminalError(f"invalid PodClique {key}") from exc
        ctx: PclqContext = SyncContext(
            self.client, self.cache, self.recorder, self.expectations, self.config, key, raw, pclq, self.clock.now()
        )
        failure: ComponentError | None = None
        result: Result | None = None
        pcs_name = (pclq.metadata.labels or {}).get(glabels.LABEL_PART_OF, "")
        pcs_raw = self.cache.get(PODCLIQUESETS, ObjectKey(key.namespace, pcs_name)) if pcs_name else None
        pcs_hash: str | None = None
        if pcs_raw is None:
            failure = ComponentError(ERR_MISSING_PARENT, "get", f"PodCliqueSet {pcs_name!r} not found")
            await self.recorder.warning(raw, "ParentNotFound", failure.message)
            result = Result(requeue_after=self.config.retry_interval * 6)
        else:
            ctx.extra[PCS] = parse_podcliqueset(pcs_raw)
            pcs_hash = (pcs_raw.get("status") or {}).get("currentGenerationHash")
            result, failure = await run_steps(ctx, self.spec_steps)
        await self._status(ctx, failure, pcs_hash)
        if failure is not None and pcs_raw is not None:
            raise failure
        return result or Result()

    async def _ensure_finalizer(self, ctx: PclqContext) -> Result | None:
        await ensure_finalizer(self.client, PODCLIQUES, ctx.raw, glabels.FINALIZER_PCLQ)
        return None

    async def _status(self, ctx: PclqContext, failure: ComponentError | None, pcs_hash: str | None) -> None:
        """Pure status from the cached pods; `observedGeneration` is the generation just reconciled.

        While pod creations or deletions of this reconcile are still unobserved the cached pods are known to be
        stale, so the write waits for the reconcile their watch events trigger (a failure is written at once):
        otherwise every new PodClique wrote a status with zero pods just before the one with its pods.
        """
        if failure is None and not ctx.expectations.satisfied(ctx.key):
            return
        pclq = ctx.owner
        generation = pclq.metadata.generation
        if failure is None and generation is not None and pclq.status is not None:
            pclq = pclq.model_copy(
                update={"status": pclq.status.model_copy(update={"observed_generation": generation})}
            )
        elif failure is None and generation is not None:
            pclq = pclq.model_copy(update={"status": PodCliqueStatus(observed_generation=generation)})
        status = compute_podclique_status(pclq, owned_pods(ctx), ctx.now, pcs_hash)
        errors = last_errors(failure, ctx.now, (ctx.raw.get("status") or {}).get("lastErrors"))
        if errors is None:
            status.pop("lastErrors", None)
        else:
            status["lastErrors"] = errors
        previous = (ctx.raw.get("status") or {}).get("scheduledReplicas") or 0
        await write_status(self.client, PODCLIQUES, ctx.raw, status)
        if previous > 0 and status.get("scheduledReplicas") == 0:
            await self.recorder.warning(
                ctx.raw, "AllScheduledReplicasLost", "all scheduled pods of the PodClique are gone"
            )
