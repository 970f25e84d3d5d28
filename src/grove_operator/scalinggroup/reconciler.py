"""The PodCliqueScalingGroup reconciler: the shared skeleton (`reconcile.skeleton`) with the PCSG's parts.

Only PCSGs controlled by a PodCliqueSet are reconciled. Their member PodCliques are built from the PodCliqueSet's
template, so a PCSG works only while that template is valid and within the pod bound, and while it itself asks
for no more pods than the bound (`admission`); otherwise, or when the PodCliqueSet is missing, it gets a
`lastErrors` entry and a Warning Event. Steps: the member PodCliques (`members`), then the replicas' lifecycle
(`lifecycle`: rolling update, gang termination). Deletion drops the finalizer; member PodCliques go through GC.
"""

from __future__ import annotations

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_api import labels as glabels
from grove_operator import admission
from grove_operator.desired.layout import scaling_group_identity
from grove_operator.kinds import PODCLIQUESCALINGGROUPS, PODCLIQUESETS
from grove_operator.reconcile.childset import CONTINUE_AFTER
from grove_operator.reconcile.context import Obj
from grove_operator.reconcile.failures import ComponentError, ParentNotFound, SpecError
from grove_operator.reconcile.ownership import controller_owner
from grove_operator.reconcile.skeleton import OwnerReconciler
from grove_operator.reconcile.writes import write_status
from grove_operator.scalinggroup.lifecycle import ScalingGroupReplicas
from grove_operator.scalinggroup.members import PCS, MemberPodCliques, PcsgContext, member_podcliques
from grove_operator.status.scalinggroup import compute_scaling_group_status
from grove_runtime import errors
from grove_runtime.keys import ObjectKey

__all__ = ["ScalingGroupReconciler"]


class ScalingGroupReconciler(
    OwnerReconciler[PodCliqueScalingGroup],
    resource=PODCLIQUESCALINGGROUPS,
    finalizer=glabels.FINALIZER_PCSG,
    components=lambda: (MemberPodCliques(), ScalingGroupReplicas()),
):
    """Reconciles one PodCliqueScalingGroup."""

    def unmanaged(self, raw: Obj) -> tuple[str, str] | None:
        """Only PCSGs a PodCliqueSet controls are ours."""
        owner = controller_owner(raw)
        if owner is None or owner.get("kind") != PodCliqueSet.KIND:
            return ("ScalingGroupNotManaged", "not controlled by a PodCliqueSet; ignoring it")
        return None

    def parse(self, raw: Obj) -> PodCliqueScalingGroup:
        """The PCSG model."""
        return self.deps.parsed.parse(PodCliqueScalingGroup, raw)

    def prepare(self, ctx: PcsgContext) -> None:
        """Find the PodCliqueSet; refuse when its template or this PCSG's replicas cannot be worked on."""
        owner_name = str((controller_owner(ctx.raw) or {}).get("name") or "")
        pcs_raw = self.deps.cache.get(PODCLIQUESETS, ObjectKey(ctx.namespace, owner_name))
        if pcs_raw is None:
            raise ParentNotFound(f"PodCliqueSet {owner_name!r} not found")
        pcs = self.deps.parsed.podcliqueset(pcs_raw)
        ctx.extra[PCS] = pcs
        self.refuse_invalid_podcliqueset(pcs_raw, f"PodCliqueSet {owner_name!r} has an invalid spec: ")
        identity = scaling_group_identity(pcs, ctx.key.name)
        if identity is None:
            raise SpecError(f"metadata.name: not a scaling group of PodCliqueSet {owner_name!r}")
        self.refuse_too_many_pods(ctx.owner.spec.replicas, admission.group_replica_pods(pcs.spec.template, identity[1]))

    def compute_status(self, ctx: PcsgContext, failure: ComponentError | None, *, completed: bool) -> Obj | None:
        """Pure status from the cached member PodCliques (the old one while the PodCliqueSet is missing)."""
        pcs: PodCliqueSet | None = ctx.extra.get(PCS)
        if pcs is None:
            return dict(ctx.raw.get("status") or {})
        members = [self.deps.parsed.parse(PodClique, o) for o in member_podcliques(ctx)]
        status = compute_scaling_group_status(pcs, ctx.owner, members, ctx.now)
        if failure is None and ctx.owner.metadata.generation is not None:
            status["observedGeneration"] = ctx.owner.metadata.generation
        return status

    async def publish_status(self, ctx: PcsgContext, status: Obj) -> None:
        """Write the status only over what the cache showed: the PodCliqueSet also writes a condition here
        (`GangTerminationInProgress`), which a write computed from an older cache would drop; on a conflict the
        group is reconciled again from the fresher cache."""
        try:
            await write_status(self.deps.client, self.resource, ctx.raw, status, precondition=True)
        except errors.Conflict:
            ctx.requeue_after(CONTINUE_AFTER)
