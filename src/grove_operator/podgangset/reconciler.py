"""The PodGangSet reconciler: the shared skeleton (`reconcile.skeleton`) with the PodGangSet's parts.

`prepare` refuses what the operator cannot build (a name too long to be a label value, more pods than it allows)
before any write, and reads the namespace's `grove.dynamo.ai/v1` PodCliques for the pods it is about to create.
The steps are the pods, the PodGang and the release of referenced pods (`components`); the status is recomputed
from the cached pods and PodGang on every reconcile. Children are removed by garbage collection.
"""

from __future__ import annotations

from grove_api import PodGang, PodGangSet
from grove_api import dynamo_v1 as v1
from grove_operator.kinds import DYNAMO_PODCLIQUES, PODGANGSETS
from grove_operator.podgangset.components import (
    PODCLIQUES,
    GangPodGang,
    GangPods,
    PgsContext,
    ReleaseGates,
    gang_of,
    pgs_pods,
)
from grove_operator.podgangset.podclique import parsed_podcliques
from grove_operator.reconcile.context import Obj
from grove_operator.reconcile.failures import ComponentError, SpecError
from grove_operator.reconcile.skeleton import OwnerReconciler
from grove_operator.status.podgangset import compute_podgangset_status

__all__ = ["MAX_NAME_LENGTH", "PodGangSetReconciler", "name_error"]

MAX_NAME_LENGTH = 63
"""The name is a label value on every pod and the PodGang (`grove.dynamo.ai/podgangset`, `grove.io/podgang`)."""


def name_error(name: str) -> str | None:
    """Why a PodGangSet name cannot be used, or None."""
    if len(name) > MAX_NAME_LENGTH:
        return f"metadata.name: Invalid value: {name!r}: must be no more than {MAX_NAME_LENGTH} characters"
    return None


class PodGangSetReconciler(
    OwnerReconciler[PodGangSet],
    resource=PODGANGSETS,
    finalizer=v1.FINALIZER_PGS,
    components=lambda: (GangPods(), GangPodGang(), ReleaseGates()),
):
    """Reconciles one PodGangSet into its pods and PodGang."""

    def parse(self, raw: Obj) -> PodGangSet:
        """The PodGangSet model."""
        return self.deps.parsed.parse(PodGangSet, raw)

    def prepare(self, ctx: PgsContext) -> None:
        """Refuse an unusable name or too many pods; read the PodCliques that may shape new pods."""
        problem = name_error(ctx.key.name)
        if problem is not None:
            raise SpecError(problem)
        self.refuse_too_many_pods(ctx.owner.spec.replicas, 1)
        cliques = self.deps.cache.list(DYNAMO_PODCLIQUES, ctx.namespace)
        ctx.extra[PODCLIQUES] = parsed_podcliques(cliques, self.deps.parsed)

    def compute_status(self, ctx: PgsContext, failure: ComponentError | None, *, completed: bool) -> Obj | None:
        """Recompute the status from the cached pods and PodGang."""
        raw_gang = gang_of(ctx)
        gang = self.deps.parsed.parse(PodGang, raw_gang) if raw_gang is not None else None
        status = compute_podgangset_status(ctx.owner, pgs_pods(ctx), gang, ctx.now)
        if completed and ctx.owner.metadata.generation is not None:
            status["observedGeneration"] = ctx.owner.metadata.generation
        else:
            previous = (ctx.raw.get("status") or {}).get("observedGeneration")
            if previous is not None:
                status["observedGeneration"] = previous
        return status
