"""The member-PodClique component of a PodCliqueScalingGroup (§3.2, §3.9).

Each PCSG replica `j < spec.replicas` gets one PodClique per member clique, `<pcsg>-<j>-<clique>`, built from the
PodCliqueSet template (keeping the live `spec.replicas` of existing ones). Scale-in removes the highest replica
indices: every member PodClique whose replica index is no longer wanted is deleted (its pods follow via GC). Under
RollingRecreate a member on an older template is left as it is until its replica is recreated (`lifecycle`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator import hashing
from grove_operator.desired.layout import is_terminating, split_indexed_name
from grove_operator.desired.podclique import build_pcsg_member_podclique
from grove_operator.kinds import INDEX_PCSG, PODCLIQUES
from grove_operator.lifecycle.lane import member_deletions
from grove_operator.reconcile.childset import IndexedChildSet, IndexedSlots, Slot
from grove_operator.reconcile.context import SyncContext
from grove_operator.reconcile.failures import SpecError
from grove_operator.reconcile.ownership import controlled_children
from grove_runtime.expectations import Expectations
from grove_runtime.keys import ObjectKey

__all__ = ["PCS", "MemberDeletionObserver", "MemberPodCliques", "PcsgContext", "member_podcliques"]

PcsgContext = SyncContext[PodCliqueScalingGroup]
PCS = "pcs"
"""`ctx.extra` key of the parent PodCliqueSet (defaulted model)."""
Obj = dict[str, Any]


def member_podcliques(ctx: PcsgContext) -> list[Obj]:
    """Cached PodCliques labelled with this PCSG and controlled by it."""
    return controlled_children(ctx, PODCLIQUES, INDEX_PCSG)


class MemberDeletionObserver:
    """Informer handler lowering a scaling group's expected member deletions (`lane.member_deletions`) as its
    member PodCliques are seen going."""

    def __init__(self, expectations: Expectations[ObjectKey]) -> None:
        self.expectations = expectations

    def _observed(self, pclq: Obj) -> None:
        meta = pclq.get("metadata") or {}
        group = (meta.get("labels") or {}).get(glabels.LABEL_PCSG)
        if group:
            self.expectations.deletion_observed(ObjectKey(str(meta.get("namespace") or ""), member_deletions(group)))

    def on_add(self, obj: Obj) -> None:
        """Nothing to observe."""

    def on_update(self, old: Obj, new: Obj) -> None:
        """A member started terminating."""
        if is_terminating(new) and not is_terminating(old):
            self._observed(new)

    def on_delete(self, obj: Obj) -> None:
        """A member vanished without being seen terminating first."""
        if not is_terminating(obj):
            self._observed(obj)


class MemberPodCliques(IndexedChildSet[PodCliqueScalingGroup]):
    """The member PodCliques `<pcsg>-<j>-<clique>` of replicas `0..replicas-1`."""

    name = "pcsg-podclique"
    rt = PODCLIQUES
    noun = "PodClique"
    naming = staticmethod(gnames.pcsg_member_pclq_name)

    def view(self, ctx: PcsgContext) -> IndexedSlots:
        """The PCSG's replicas times its `cliqueNames`."""
        return IndexedSlots(ctx.key.name, ctx.owner.spec.replicas, tuple(ctx.owner.spec.clique_names))

    def existing(self, ctx: PcsgContext) -> Iterable[Obj]:
        """Cached member PodCliques."""
        return member_podcliques(ctx)

    def leave_as_is(self, ctx: PcsgContext, existing: Obj) -> bool:
        """Under RollingRecreate a member on an older template is not patched: its whole scaling-group replica is
        recreated from the newest one when the rolling update reaches it, so a gang never mixes templates."""
        pcs: PodCliqueSet = ctx.extra[PCS]
        if pcs.spec.effective_update_strategy() != "RollingRecreate":
            return False
        labels = (existing.get("metadata") or {}).get("labels") or {}
        clique = split_indexed_name(ctx.key.name, str(existing["metadata"]["name"]))
        if clique is None:
            return False
        expected = hashing.clique_hashes(pcs.spec.template).get(clique[1])
        return expected is not None and labels.get(glabels.LABEL_POD_TEMPLATE_HASH) != expected

    def build(self, ctx: PcsgContext, view: IndexedSlots, key: Slot, existing: Obj | None) -> Obj:
        """The member from the PodCliqueSet template; a clique the template lacks is a spec error, not a crash."""
        pcs: PodCliqueSet = ctx.extra[PCS]
        live = ctx.parsed.parse(PodClique, existing) if existing is not None else None
        try:
            return build_pcsg_member_podclique(pcs, ctx.owner, key[0], key[1], live)
        except ValueError as exc:
            field = f"spec.cliqueNames[{view.entries.index(key[1])}]"
            raise SpecError(f"{field}: {exc}", operation="sync") from exc
