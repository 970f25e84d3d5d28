"""The PodClique reconciler: the shared skeleton (`reconcile.skeleton`) with the PodClique's parts.

Steps: its share of a rolling update (`rollout.PodRollout`, which only deletes), then its pods (`pods.Pods`: create
missing ones from the PodClique's template, scale in, lift gates).

Only PodCliques the operator manages are reconciled (label `managed-by=grove-operator` and exactly one owner of
kind PodCliqueSet or PodCliqueScalingGroup, §1.3); any other PodClique gets one Warning Event and is left alone.
A managed PodClique whose PodCliqueSet is missing gets a `lastErrors` entry and is retried slowly, never in a
tight loop; one asking for more pods than the operator allows is refused the same way (`admission`). The status
is not written while the pods this reconcile created or deleted are still unobserved. Deletion clears the pod
expectations and drops the finalizer; pods go through garbage collection.
"""

from __future__ import annotations

from typing import Any

import structlog

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet, PodCliqueStatus
from grove_api import labels as glabels
from grove_operator import hashing
from grove_operator.desired.layout import identify_podclique
from grove_operator.kinds import PODCLIQUES, PODCLIQUESETS
from grove_operator.podclique.pods import PCS, PclqContext, Pods, owned_pods
from grove_operator.podclique.rollout import PodRollout
from grove_operator.reconcile.context import Obj
from grove_operator.reconcile.failures import ComponentError, ParentNotFound
from grove_operator.reconcile.ownership import managed
from grove_operator.reconcile.skeleton import OwnerReconciler
from grove_operator.status.podclique import compute_podclique_status
from grove_runtime.keys import ObjectKey

__all__ = ["OWNER_KINDS", "PodCliqueReconciler", "is_managed_podclique"]

OWNER_KINDS = (PodCliqueSet.KIND, PodCliqueScalingGroup.KIND)
STATUS_HOLD = 10.0
"""Seconds the status write waits for this PodClique's own pod creations and deletions to be observed. A watch
event lost for good (a pod created and deleted again between two relists of a broken watch) would otherwise hold
a stale status, and with it the gates of every gang waiting for this one, until the expectations time out."""
_PCS_HASH = "pcs-generation-hash"
log = structlog.get_logger("grove_operator.podclique")
_TEMPLATE_HASH = "pod-template-hash"


def is_managed_podclique(obj: dict[str, Any]) -> bool:
    """Managed-by label and exactly one owner reference, of kind PodCliqueSet or PodCliqueScalingGroup."""
    refs: list[Any] = list((obj.get("metadata") or {}).get("ownerReferences") or [])
    return managed(obj) and len(refs) == 1 and refs[0].get("kind") in OWNER_KINDS


class PodCliqueReconciler(
    OwnerReconciler[PodClique],
    resource=PODCLIQUES,
    finalizer=glabels.FINALIZER_PCLQ,
    components=lambda: (PodRollout(), Pods()),
):
    """Reconciles one PodClique: its pods, their gates, and its status."""

    def forget(self, key: ObjectKey) -> None:
        """Pod expectations of a PodClique that is gone."""
        self.deps.expectations.forget(key)

    def unmanaged(self, raw: Obj) -> tuple[str, str] | None:
        """PodCliques we did not create are left alone."""
        if is_managed_podclique(raw):
            return None
        return (
            "PodCliqueNotManaged",
            "PodClique is not managed by grove-operator (needs the managed-by label and one PodCliqueSet or "
            "PodCliqueScalingGroup owner); ignoring it",
        )

    def parse(self, raw: Obj) -> PodClique:
        """The PodClique model."""
        return self.deps.parsed.parse(PodClique, raw)

    def prepare(self, ctx: PclqContext) -> None:
        """Find the PodCliqueSet (named by the part-of label); refuse more pods than the operator allows."""
        pcs_name = (ctx.owner.metadata.labels or {}).get(glabels.LABEL_PART_OF, "")
        pcs_raw = self.deps.cache.get(PODCLIQUESETS, ObjectKey(ctx.namespace, pcs_name)) if pcs_name else None
        if pcs_raw is None:
            raise ParentNotFound(f"PodCliqueSet {pcs_name!r} not found")
        pcs = self.deps.parsed.podcliqueset(pcs_raw)
        ctx.extra[PCS] = pcs
        ctx.extra[_PCS_HASH] = hashing.generation_hash(pcs.spec.template)
        instance = identify_podclique(pcs, ctx.key.name)
        if instance is not None:
            ctx.extra[_TEMPLATE_HASH] = hashing.clique_hashes(pcs.spec.template)[instance.clique.name]
        self.refuse_too_many_pods(ctx.owner.spec.replicas, 1)

    def compute_status(self, ctx: PclqContext, failure: ComponentError | None, *, completed: bool) -> Obj | None:
        """Pure status from the cached pods; `observedGeneration` is the generation just reconciled.

        While pod creations or deletions of this reconcile are still unobserved the cached pods are known to be
        stale, so the write waits for the reconcile their watch events trigger (a failure is written at once):
        otherwise every new PodClique wrote a status with zero pods just before the one with its pods. It waits
        `STATUS_HOLD` at most, and asks to be called again when that is over.
        """
        waited = ctx.expectations.outstanding_for(ctx.key)
        if failure is None and waited is not None:
            if waited < STATUS_HOLD:
                ctx.requeue_after(STATUS_HOLD - waited)
                return None
            creations, deletions = ctx.expectations.pending(ctx.key)
            report = log.warning if ctx.expectations.tell_overdue(ctx.key) else log.debug
            report(
                "pod creations or deletions still unobserved; status written from the cache",
                namespace=ctx.namespace,
                name=ctx.key.name,
                creations=creations,
                deletions=deletions,
                waited_s=round(waited, 1),
            )
        pclq = ctx.owner
        generation = pclq.metadata.generation
        if failure is None and generation is not None and pclq.status is not None:
            pclq = pclq.model_copy(
                update={"status": pclq.status.model_copy(update={"observed_generation": generation})}
            )
        elif failure is None and generation is not None:
            pclq = pclq.model_copy(update={"status": PodCliqueStatus(observed_generation=generation)})
        return compute_podclique_status(
            pclq, owned_pods(ctx), ctx.now, ctx.extra.get(_PCS_HASH), ctx.extra.get(_TEMPLATE_HASH)
        )

    async def publish_status(self, ctx: PclqContext, status: Obj) -> None:
        """Write the status; losing every scheduled pod is worth a Warning Event."""
        previous = (ctx.raw.get("status") or {}).get("scheduledReplicas") or 0
        await super().publish_status(ctx, status)
        if previous > 0 and status.get("scheduledReplicas") == 0:
            await self.deps.recorder.warning(
                ctx.raw, "AllScheduledReplicasLost", "all scheduled pods of the PodClique are gone"
            )
