"""The Pods component of a PodClique: keep `spec.replicas` live pods and lift their scheduling gates (§3.3, §3.4).

Why expectations: the pod cache lags the API. After creating three pods, the next reconcile may still see none and
create three more; so creations and deletions are recorded per PodClique and the pod count is only trusted once
the informer has observed them (`PodExpectationsObserver` lowers the counts as pod events arrive). Gate lifting
does not depend on the count and runs on every reconcile.

New pods take the lowest free indices and are created in "slow start" batches (1, 2, 4, ...), so a failing
admission stops after one request instead of a thousand; gates are lifted in slow-start batches too, starting
wider. At most `POD_CREATE_WINDOW` pods are created per reconcile, so no list grows with `spec.replicas`.
Scale-in picks victims in upstream's order. An index held twice (a create that reached the API server although its
response was lost) is repaired: the extra holders are deleted and the missing index created, with a Warning Event.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from grove_api import PodClique, PodCliqueSet, PodGang
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired import gates, scalein
from grove_operator.desired.layout import is_terminating
from grove_operator.desired.pod import build_pod
from grove_operator.kinds import INDEX_PODCLIQUE, PODCLIQUES, PODGANGS
from grove_operator.reconcile.childset import CONTINUE_AFTER
from grove_operator.reconcile.context import SyncContext
from grove_operator.reconcile.failures import ComponentError, describe, error_code
from grove_operator.reconcile.ownership import controlled_children
from grove_operator.reconcile.writes import delete_expecting, delete_if_exists
from grove_operator.slowstart import run_slow_start
from grove_runtime import errors
from grove_runtime.client import PatchType
from grove_runtime.expectations import Expectations
from grove_runtime.keys import ObjectKey, Result
from grove_runtime.resources import PODS

__all__ = ["PCS", "PclqContext", "PodExpectationsObserver", "Pods", "owned_pods"]

Obj = dict[str, Any]
PclqContext = SyncContext[PodClique]
PCS = "pcs"
UNGATE_INITIAL_BATCH = 8
POD_CREATE_WINDOW = 1000
"""Pods one reconcile creates at most; the next window follows once their creations are observed."""


def _pclq_key(pod: Mapping[str, Any]) -> ObjectKey | None:
    meta = pod.get("metadata") or {}
    name = (meta.get("labels") or {}).get(glabels.LABEL_PODCLIQUE)
    return ObjectKey(str(meta.get("namespace") or ""), str(name)) if name else None


class PodExpectationsObserver:
    """Informer handler lowering a PodClique's expectations as its pods appear and disappear."""

    def __init__(self, expectations: Expectations[ObjectKey]) -> None:
        self.expectations = expectations

    def on_add(self, obj: Obj) -> None:
        """A pod was observed: one expected creation fulfilled."""
        key = _pclq_key(obj)
        if key is not None:
            self.expectations.creation_observed(key)

    def on_update(self, old: Obj, new: Obj) -> None:
        """A pod started terminating: one expected deletion fulfilled."""
        key = _pclq_key(new)
        if key is not None and is_terminating(new) and not is_terminating(old):
            self.expectations.deletion_observed(key)

    def on_delete(self, obj: Obj) -> None:
        """A pod vanished without being seen terminating first."""
        key = _pclq_key(obj)
        if key is not None and not is_terminating(obj):
            self.expectations.deletion_observed(key)


def owned_pods(ctx: PclqContext) -> list[Obj]:
    """Cached pods labelled with this PodClique and controlled by it."""
    return controlled_children(ctx, PODS, INDEX_PODCLIQUE)


@dataclass(frozen=True)
class Pods:
    """Create missing pods, delete surplus and duplicate ones, lift gates."""

    name: str = "pod"

    def existing_names(self, ctx: PclqContext) -> list[str]:
        """Cached pods of the PodClique."""
        return [p["metadata"]["name"] for p in owned_pods(ctx)]

    async def sync(self, ctx: PclqContext) -> Result | None:
        """Converge the pods (when the cache is trustworthy), then lift gates."""
        active = [p for p in owned_pods(ctx) if scalein.is_active(p)]
        if ctx.expectations.satisfied(ctx.key):
            deleted = await self._converge(ctx, active)
            active = [p for p in active if p["metadata"]["name"] not in deleted]
        return await self._lift_gates(ctx, active)

    async def _converge(self, ctx: PclqContext, active: list[Obj]) -> set[str]:
        """One index per pod, `spec.replicas` pods: delete duplicates and surplus, create (a window of) the
        missing; returns the names deleted."""
        current_hash = (ctx.owner.metadata.labels or {}).get(glabels.LABEL_POD_TEMPLATE_HASH)
        duplicates = scalein.duplicate_index_pods(active, current_hash)
        duplicate_names = {str(p["metadata"]["name"]) for p in duplicates}
        keep = [p for p in active if p["metadata"]["name"] not in duplicate_names]
        surplus = len(keep) - ctx.owner.spec.replicas
        victims = scalein.scale_in_victims(keep, surplus, current_hash) if surplus > 0 else []
        missing = max(0, -surplus)
        creations = min(missing, POD_CREATE_WINDOW)
        if not duplicates and not victims and not creations:
            return set()
        ctx.expectations.expect(ctx.key, creations=creations, deletions=len(duplicates) + len(victims))
        if duplicates:
            await self._report_duplicates(ctx, duplicates)
            await self._delete(ctx, sorted(duplicate_names), creations, "to free a duplicated pod index")
        if victims:
            await self._delete(ctx, victims, creations, "on scale-in")
        if creations:
            await self._create(ctx, keep, creations)
            if missing > creations:
                ctx.requeue_after(CONTINUE_AFTER)
        return duplicate_names | set(victims)

    @staticmethod
    async def _report_duplicates(ctx: PclqContext, duplicates: list[Mapping[str, Any]]) -> None:
        """One Warning Event per duplicated index (the message is stable, so repeats aggregate)."""
        indices = [i for p in duplicates if (i := scalein.pod_index(p)) is not None]
        for index in sorted(set(indices)):
            await ctx.recorder.warning(
                ctx.raw,
                "DuplicatePodIndex",
                f"pod index {index} was held by {1 + indices.count(index)} pods (most likely a create that "
                "succeeded although its response was lost); deleting all but one",
            )

    async def _create(self, ctx: PclqContext, active: list[Obj], count: int) -> None:
        """Create `count` pods at the lowest free indices, in slow-start batches."""
        pcs: PodCliqueSet = ctx.extra[PCS]
        indices = scalein.lowest_free_indices(active, count)
        outcome = await run_slow_start([partial(self._create_one, ctx, pcs, i) for i in indices])
        created = outcome.succeeded
        if outcome.failed:
            ctx.expectations.lower(ctx.key, creations=len(outcome.failed) + outcome.skipped)
            if created:
                await ctx.recorder.normal(ctx.raw, "PodCreated", f"Created {len(created)} pod(s)")
            generate_name = gnames.pod_generate_name(ctx.key.name)
            raise ComponentError(error_code(self.name), "create", describe(outcome.failed[0], generate_name))
        await ctx.recorder.normal(ctx.raw, "PodCreated", f"Created {len(created)} pod(s): {', '.join(created[:5])}")

    async def _create_one(self, ctx: PclqContext, pcs: PodCliqueSet, index: int) -> str:
        pod = build_pod(
            pcs,
            ctx.owner,
            index,
            default_scheduler_name=ctx.config.default_scheduler_name,
            init_container_image=ctx.config.init_container_image,
        )
        created = await ctx.client.create(PODS, pod, ctx.namespace)
        return str(created["metadata"]["name"])

    async def _delete(self, ctx: PclqContext, names: list[str], pending_creations: int, why: str) -> None:
        """Delete `names`; on a failure give back the expectations never to be met (these creations included)."""
        failures = await delete_expecting(
            ctx.client, PODS, names, ctx.namespace, lambda n: ctx.expectations.lower(ctx.key, deletions=n)
        )
        await ctx.recorder.normal(ctx.raw, "PodDeleted", f"Deleted {len(names) - len(failures)} pod(s) {why}")
        if failures:
            ctx.expectations.lower(ctx.key, creations=pending_creations)
            raise ComponentError(error_code(self.name), "delete", describe(failures[0]))

    async def _lift_gates(self, ctx: PclqContext, active: list[Obj]) -> Result | None:
        labels = ctx.owner.metadata.labels or {}
        gang = self._gang(ctx, labels.get(glabels.LABEL_PODGANG))
        base_name = labels.get(glabels.LABEL_BASE_PODGANG)
        base = self._gang(ctx, base_name) if base_name else None
        base_pclqs: dict[str, PodClique] = {}
        if base is not None:
            for group in base.spec.pod_groups:
                raw = ctx.cache.get(PODCLIQUES, ObjectKey(ctx.namespace, group.name))
                if raw is not None:
                    base_pclqs[group.name] = ctx.parsed.parse(PodClique, raw)
        decision = gates.pods_to_ungate(ctx.owner, active, gang, base, base_pclqs)
        by_name = {p["metadata"]["name"]: p for p in active}
        # Gate removals are small idempotent patches that are rarely refused, so they start wider than creations: the
        # pods of a small PodClique are released together, get bound together and cost one status write, not two.
        ungates = [partial(self._ungate_one, ctx, by_name[name]) for name in decision.ungate]
        outcome = await run_slow_start(ungates, initial_batch=UNGATE_INITIAL_BATCH)
        if outcome.failed:
            raise outcome.failed[0]
        if decision.still_gated:
            return Result(requeue_after=ctx.config.retry_interval)
        return None

    async def _ungate_one(self, ctx: PclqContext, pod: Obj) -> None:
        """Remove the gate of one pod; a pod deleted meanwhile needs no ungating."""
        name = str(pod["metadata"]["name"])
        try:
            await ctx.client.patch(PODS, name, gates.remove_gate_patch(pod), ctx.namespace, patch_type=PatchType.MERGE)
        except errors.NotFound:
            return

    def _gang(self, ctx: PclqContext, name: str | None) -> PodGang | None:
        if not name:
            return None
        raw = ctx.cache.get(PODGANGS, ObjectKey(ctx.namespace, name))
        return ctx.parsed.parse(PodGang, raw) if raw is not None else None

    async def delete(self, ctx: PclqContext) -> None:
        """Delete every pod of the PodClique."""
        for name in self.existing_names(ctx):
            await delete_if_exists(ctx.client, PODS, name, ctx.namespace)
