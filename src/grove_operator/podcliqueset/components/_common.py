"""What the PodCliqueSet's components share: the context type and "which of my children exist?".

Every component answers that question from the informer cache the same way (the `app.kubernetes.io/part-of`
index, scoped to the namespace, then the component label and our owner uid), so a user object that merely shares
the labels is never adopted or deleted.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Hashable, Iterable
from typing import Any, ClassVar

from grove_api import PodCliqueSet, PodCliqueSetTemplateSpec
from grove_operator.desired.layout import split_indexed_name
from grove_operator.kinds import INDEX_PART_OF
from grove_operator.reconcile.childset import ChildSet
from grove_operator.reconcile.context import SyncContext
from grove_operator.reconcile.ownership import controlled_children
from grove_runtime.resources import ResourceType

__all__ = ["TOPOLOGIES", "PcsContext", "PerReplicaChildSet", "Slot", "children", "spec_fingerprint"]

Obj = dict[str, Any]
PcsContext = SyncContext[PodCliqueSet]
TOPOLOGIES = "topologies"
"""`ctx.extra` key of the ClusterTopologyBindings by name (read once per reconcile by the reconciler)."""


def children(ctx: PcsContext, rt: ResourceType, component: str | None = None) -> list[Obj]:
    """Cached objects of `rt` that are part of this PCS, controlled by it and (optionally) of `component`."""
    return controlled_children(ctx, rt, INDEX_PART_OF, component)


def spec_fingerprint(ctx: PcsContext) -> Hashable | None:
    """What a child built from the PCS spec alone depends on: its uid and generation (None before the first)."""
    generation = ctx.owner.metadata.generation
    return None if generation is None else (ctx.owner.metadata.uid, generation)


Slot = tuple[int, str]
"""(PCS replica index, template entry name)."""


class PerReplicaChildSet(ChildSet[PodCliqueSet, Slot]):
    """One child `<pcs>-<i>-<entry>` per PCS replica `i` and template entry (a standalone clique, a scaling group)."""

    component_label: ClassVar[str]
    naming: ClassVar[staticmethod[[str, int, str], str]]

    @abstractmethod
    def entries(self, template: PodCliqueSetTemplateSpec) -> list[str]:
        """The template entries that get a child per replica, in template order."""

    def existing(self, ctx: PcsContext) -> Iterable[Obj]:
        """Cached children of the PCS with this component label."""
        return children(ctx, self.rt, self.component_label)

    def key_of(self, ctx: PcsContext, child: Obj) -> Slot | None:
        """Replica and entry parsed from the name (an entry the template lacks fills no slot)."""
        split = split_indexed_name(ctx.key.name, str(child["metadata"]["name"]))
        return split if split is not None and split[1] in self.entries(ctx.owner.spec.template) else None

    def wanted(self, ctx: PcsContext, key: Slot) -> bool:
        """The replica exists and the template has the entry."""
        return 0 <= key[0] < (ctx.owner.spec.replicas or 0) and key[1] in self.entries(ctx.owner.spec.template)

    def candidates(self, ctx: PcsContext) -> Iterable[Slot]:
        """Replica-major, entries in template order."""
        entries = self.entries(ctx.owner.spec.template)
        return ((i, entry) for i in range(ctx.owner.spec.replicas or 0) for entry in entries)

    def child_name(self, ctx: PcsContext, key: Slot) -> str:
        """`<pcs>-<i>-<entry>`."""
        return self.naming(ctx.key.name, *key)
