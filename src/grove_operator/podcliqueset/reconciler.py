"""The PodCliqueSet reconciler: the shared skeleton (`reconcile.skeleton`) with the PodCliqueSet's parts.

Why this shape: it mirrors upstream Grove's `podcliqueset/reconciler.go`, so the flow reads as a table of
contents. `prepare` reads the topology bindings and refuses a spec the validating webhook would have refused, or
one asking for more pods than the operator allows (`admission`), before any work that depends on the spec's size.
Components are synced group by group (`components.OrderedComponents`). The status is recomputed from the cache
on every reconcile. Children are removed by garbage collection: deletion only drops the finalizer.
"""

from __future__ import annotations

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet, PodCliqueSetStatus
from grove_api import labels as glabels
from grove_operator import hashing
from grove_operator.kinds import CLUSTERTOPOLOGYBINDINGS, PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS
from grove_operator.parsed import parsed_topologies
from grove_operator.podcliqueset.components import OrderedComponents
from grove_operator.podcliqueset.components._common import TOPOLOGIES, PcsContext, children
from grove_operator.reconcile.context import Obj
from grove_operator.reconcile.failures import ComponentError
from grove_operator.reconcile.skeleton import OwnerReconciler
from grove_operator.status.podcliqueset import compute_podcliqueset_status

__all__ = ["PodCliqueSetReconciler"]


class PodCliqueSetReconciler(
    OwnerReconciler[PodCliqueSet],
    resource=PODCLIQUESETS,
    finalizer=glabels.FINALIZER_PCS,
    components=lambda: (OrderedComponents(),),
):
    """Reconciles one PodCliqueSet into its full hierarchy."""

    def parse(self, raw: Obj) -> PodCliqueSet:
        """The PCS as the defaulting webhook would have stored it."""
        return self.deps.parsed.podcliqueset(raw)

    def prepare(self, ctx: PcsContext) -> None:
        """Read the topology bindings; refuse a spec that is invalid or asks for too many pods."""
        ctx.extra[TOPOLOGIES] = parsed_topologies(self.deps.cache.list(CLUSTERTOPOLOGYBINDINGS), self.deps.parsed)
        self.refuse_invalid_podcliqueset(ctx.raw)

    def compute_status(self, ctx: PcsContext, failure: ComponentError | None, *, completed: bool) -> Obj | None:
        """Recompute the status from the cached children."""
        pcs = ctx.owner
        if pcs.status is None or pcs.status.current_generation_hash is None:
            status_model = (pcs.status or PodCliqueSetStatus()).model_copy(
                update={"current_generation_hash": hashing.generation_hash(pcs.spec.template)}
            )
            pcs = pcs.model_copy(update={"status": status_model})
        parse = self.deps.parsed.parse
        pclqs = [parse(PodClique, o) for o in children(ctx, PODCLIQUES, glabels.COMPONENT_PCS_PODCLIQUE)]
        pcsgs = [parse(PodCliqueScalingGroup, o) for o in children(ctx, PODCLIQUESCALINGGROUPS)]
        status = compute_podcliqueset_status(pcs, pclqs, pcsgs, ctx.now, ctx.extra.get(TOPOLOGIES))
        if completed and pcs.metadata.generation is not None:
            status["observedGeneration"] = pcs.metadata.generation
        return status
