"""Standalone PodCliques of a PodCliqueSet (group 2).

Wanted: `<pcs>-<i>-<clique>` for every replica below `spec.replicas` and every clique outside a scaling group.
Those of removed replicas (PCS scale-in) are deleted; the rest are created or patched with the template, keeping
the live `spec.replicas` so `kubectl scale pclq` and HPAs win over the template (§3.9).
"""

from __future__ import annotations

from collections.abc import Hashable

from grove_api import PodClique, PodCliqueSetTemplateSpec
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import standalone_cliques
from grove_operator.desired.podclique import build_standalone_podclique
from grove_operator.kinds import PODCLIQUES
from grove_operator.podcliqueset.components._common import Obj, PcsContext, PcsIndexedChildSet, spec_fingerprint
from grove_operator.reconcile.childset import IndexedSlots, Slot

__all__ = ["StandalonePodCliques"]


class StandalonePodCliques(PcsIndexedChildSet):
    """One PodClique per replica and standalone clique."""

    name = "podclique"
    rt = PODCLIQUES
    noun = "PodClique"
    component_label = glabels.COMPONENT_PCS_PODCLIQUE
    naming = staticmethod(gnames.standalone_pclq_name)

    def entries(self, template: PodCliqueSetTemplateSpec) -> tuple[str, ...]:
        """The cliques outside scaling groups."""
        return tuple(c.name for c in standalone_cliques(template))

    def build(self, ctx: PcsContext, view: IndexedSlots, key: Slot, existing: Obj | None) -> Obj:
        """The PodClique from the template, keeping the live `spec.replicas` of an existing one."""
        live = ctx.parsed.parse(PodClique, existing) if existing is not None else None
        return build_standalone_podclique(ctx.owner, key[0], key[1], live)

    def fingerprint(self, ctx: PcsContext) -> Hashable | None:
        """A standalone PodClique is built from the PCS spec (fixed per uid and generation) and its own object."""
        return spec_fingerprint(ctx)
