"""The PodCliqueSet reconciler: the shared skeleton (`reconcile.skeleton`) with the PodCliqueSet's parts.

Why this shape: it mirrors upstream Grove's `podcliqueset/reconciler.go`, so the flow reads as a table of
contents. `prepare` reads the topology bindings and refuses a spec the validating webhook would have refused, or
one asking for more pods than the operator allows (`admission`), before any work that depends on the spec's size.
Components are synced group by group (`components.OrderedComponents`). The status is recomputed from the cache
on every reconcile. Children are removed by garbage collection: deletion only drops the finalizer.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet, PodCliqueSetStatus
from grove_api import labels as glabels
from grove_operator import hashing
from grove_operator.kinds import CLUSTERTOPOLOGYBINDINGS, PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS
from grove_operator.parsed import parsed_topologies
from grove_operator.podcliqueset.components import OrderedComponents
from grove_operator.podcliqueset.components._common import TOPOLOGIES, PcsContext, children
from grove_operator.podcliqueset.components.replica import (
    LIFECYCLE,
    UNSEEN,
    ReplicaDecision,
    WrittenRollouts,
    rollout_signature,
)
from grove_operator.reconcile.context import Deps, Obj
from grove_operator.reconcile.failures import ComponentError
from grove_operator.reconcile.skeleton import OwnerReconciler
from grove_operator.reconcile.writes import write_status
from grove_operator.status.podcliqueset import compute_podcliqueset_status
from grove_runtime.keys import ObjectKey

__all__ = ["FIRST_STATUS_GRACE", "PodCliqueSetReconciler"]

FIRST_STATUS_GRACE = timedelta(seconds=30)
"""How long a new PodCliqueSet's first status may wait for a reconcile that gets through every group."""


def _first_status_waits(ctx: PcsContext, failure: ComponentError | None, *, completed: bool) -> bool:
    """True when a young PodCliqueSet without a status stopped at a wait (its token Secret not filled yet): the
    status would say only "1 replica, none available, generation not observed" and be replaced a moment later by
    the complete one, a write every watcher decodes for nothing. A failure, a status already written, or a wait
    longer than `FIRST_STATUS_GRACE` is published as before."""
    if completed or failure is not None or ctx.raw.get("status"):
        return False
    created = ctx.owner.metadata.creation_timestamp
    return created is not None and ctx.now - created < FIRST_STATUS_GRACE


class PodCliqueSetReconciler(
    OwnerReconciler[PodCliqueSet],
    resource=PODCLIQUESETS,
    finalizer=glabels.FINALIZER_PCS,
    components=lambda: (OrderedComponents(),),
):
    """Reconciles one PodCliqueSet into its full hierarchy."""

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.rollouts = WrittenRollouts()

    def forget(self, key: ObjectKey) -> None:
        """The rollout write it waited to see."""
        self.rollouts.forget(key)

    def parse(self, raw: Obj) -> PodCliqueSet:
        """The PCS as the defaulting webhook would have stored it."""
        return self.deps.parsed.podcliqueset(raw)

    def prepare(self, ctx: PcsContext) -> None:
        """Read the topology bindings; refuse a spec that is invalid or asks for too many pods."""
        ctx.extra[TOPOLOGIES] = parsed_topologies(self.deps.cache.list(CLUSTERTOPOLOGYBINDINGS), self.deps.parsed)
        ctx.extra[UNSEEN] = self.rollouts.unseen(ctx.key, ctx.raw.get("status"), ctx.now)
        self.refuse_invalid_podcliqueset(ctx.raw)

    def compute_status(self, ctx: PcsContext, failure: ComponentError | None, *, completed: bool) -> Obj | None:
        """Recompute the status from the cached children (nothing while the cache lags our last rollout write, nor
        while a new PodCliqueSet's first reconcile only waits: see `_first_status_waits`)."""
        if ctx.extra.get(UNSEEN) or _first_status_waits(ctx, failure, completed=completed):
            return None
        pcs = ctx.owner
        decision: ReplicaDecision | None = ctx.extra.get(LIFECYCLE)
        update: dict[str, Any] = {}
        if decision is not None:
            update = {"current_generation_hash": decision.generation_hash, "update_progress": decision.progress}
        elif pcs.status is None or pcs.status.current_generation_hash is None:
            update = {"current_generation_hash": hashing.generation_hash(pcs.spec.template)}
        if update:
            pcs = pcs.model_copy(update={"status": (pcs.status or PodCliqueSetStatus()).model_copy(update=update)})
        parse = self.deps.parsed.parse
        pclqs = [parse(PodClique, o) for o in children(ctx, PODCLIQUES, glabels.COMPONENT_PCS_PODCLIQUE)]
        pcsgs = [parse(PodCliqueScalingGroup, o) for o in children(ctx, PODCLIQUESCALINGGROUPS)]
        stale = decision.stale_replicas if decision is not None else ()
        status = compute_podcliqueset_status(pcs, pclqs, pcsgs, ctx.now, ctx.extra.get(TOPOLOGIES), stale)
        if completed and pcs.metadata.generation is not None:
            status["observedGeneration"] = pcs.metadata.generation
        return status

    async def publish_status(self, ctx: PcsContext, status: Obj) -> None:
        """Write the status; remember a rollout move until the cache shows it."""
        moved = rollout_signature(status) != rollout_signature(ctx.raw.get("status"))
        if await write_status(self.deps.client, self.resource, ctx.raw, status) and moved:
            self.rollouts.remember(ctx.key, status, ctx.now)
