"""Standalone PodCliques of a PodCliqueSet (group 2).

Wanted: `<pcs>-<i>-<clique>` for every replica below `spec.replicas` and every clique outside a scaling group.
Those of removed replicas (PCS scale-in) are deleted; the rest are created or patched with the template, keeping
the live `spec.replicas` so `kubectl scale pclq` and HPAs win over the template (§3.9).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from grove_api import PodClique, PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import identify_podclique, standalone_cliques
from grove_operator.desired.podclique import build_standalone_podclique
from grove_operator.kinds import PODCLIQUES
from grove_operator.podcliqueset.components._common import Obj, PcsContext, children, spec_fingerprint
from grove_operator.reconcile.childset import ChildSet

__all__ = ["StandalonePodCliques"]

Slot = tuple[int, str]
"""(PCS replica index, clique template name)."""


class StandalonePodCliques(ChildSet[PodCliqueSet, Slot]):
    """One PodClique per replica and standalone clique."""

    name = "podclique"
    rt = PODCLIQUES
    noun = "PodClique"

    def existing(self, ctx: PcsContext) -> Iterable[Obj]:
        """Cached PodCliques owned directly by the PCS."""
        return children(ctx, PODCLIQUES, glabels.COMPONENT_PCS_PODCLIQUE)

    def key_of(self, ctx: PcsContext, child: Obj) -> Slot | None:
        """Replica and clique parsed from the name against the template."""
        instance = identify_podclique(ctx.owner, str(child["metadata"]["name"]))
        if instance is None or instance.scaling_group is not None:
            return None
        return (instance.pcs_replica, instance.clique.name)

    def wanted(self, ctx: PcsContext, key: Slot) -> bool:
        """The replica exists and the clique is a standalone clique of the template."""
        template = ctx.owner.spec.template
        replica, clique = key
        return (
            0 <= replica < (ctx.owner.spec.replicas or 0)
            and template.clique(clique) is not None
            and template.scaling_group_of(clique) is None
        )

    def candidates(self, ctx: PcsContext) -> Iterable[Slot]:
        """Replica-major, cliques in template order."""
        cliques = [c.name for c in standalone_cliques(ctx.owner.spec.template)]
        return ((i, clique) for i in range(ctx.owner.spec.replicas or 0) for clique in cliques)

    def child_name(self, ctx: PcsContext, key: Slot) -> str:
        """`<pcs>-<i>-<clique>`."""
        return gnames.standalone_pclq_name(ctx.key.name, *key)

    def build(self, ctx: PcsContext, key: Slot, existing: Obj | None) -> Obj:
        """The PodClique from the template, keeping the live `spec.replicas` of an existing one."""
        live = ctx.parsed.parse(PodClique, existing) if existing is not None else None
        return build_standalone_podclique(ctx.owner, key[0], key[1], live)

    def fingerprint(self, ctx: PcsContext) -> Hashable | None:
        """A standalone PodClique is built from the PCS spec (fixed per uid and generation) and its own object."""
        return spec_fingerprint(ctx)
