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
from grove_operator.kinds import INDEX_PART_OF
from grove_operator.reconcile.childset import IndexedChildSet, IndexedSlots
from grove_operator.reconcile.context import SyncContext
from grove_operator.reconcile.ownership import controlled_children
from grove_runtime.resources import ResourceType

__all__ = ["TOPOLOGIES", "PcsContext", "PcsIndexedChildSet", "children", "spec_fingerprint"]

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


class PcsIndexedChildSet(IndexedChildSet[PodCliqueSet]):
    """Children `<pcs>-<i>-<entry>` per PCS replica `i` and template entry, found by their component label."""

    component_label: ClassVar[str]

    @abstractmethod
    def entries(self, template: PodCliqueSetTemplateSpec) -> tuple[str, ...]:
        """The template entries that get a child per replica, in template order."""

    def view(self, ctx: PcsContext) -> IndexedSlots:
        """The PCS's replicas times the entries."""
        return IndexedSlots(ctx.key.name, ctx.owner.spec.replicas or 0, self.entries(ctx.owner.spec.template))

    def existing(self, ctx: PcsContext) -> Iterable[Obj]:
        """Cached children of the PCS with this component label."""
        return children(ctx, self.rt, self.component_label)
