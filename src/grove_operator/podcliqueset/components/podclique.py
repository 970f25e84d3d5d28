"""Standalone PodCliques of a PodCliqueSet (group 2).

Expected: `<pcs>-<i>-<clique>` for every replica below `spec.replicas` and every clique outside a scaling group.
Those above (PCS scale-in) are deleted; the rest are created or patched with the template, keeping the live
`spec.replicas` so `kubectl scale pclq` and HPAs win over the template (§3.9).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from grove_api import PodClique
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.components import PODCLIQUES, create_or_patch, delete_if_exists
from grove_operator.desired._layout import standalone_cliques
from grove_operator.desired.podclique import build_standalone_podclique
from grove_operator.podcliqueset.components._common import PcsContext, bounded, cached, children
from grove_runtime.keys import Result

__all__ = ["StandalonePodCliques"]


@dataclass(frozen=True)
class StandalonePodCliques:
    """Create-or-patch expected standalone PodCliques, delete the ones of removed replicas."""

    name: str = "podclique"

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """Cached PodCliques owned directly by the PCS."""
        return [o["metadata"]["name"] for o in children(ctx, PODCLIQUES, glabels.COMPONENT_PCS_PODCLIQUE)]

    def expected_names(self, ctx: PcsContext) -> list[str]:
        """`<pcs>-<i>-<clique>` for each replica and standalone clique."""
        return [
            gnames.standalone_pclq_name(ctx.key.name, i, c.name)
            for i in range(ctx.owner.spec.replicas or 0)
            for c in standalone_cliques(ctx.owner.spec.template)
        ]

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Converge the standalone PodCliques."""
        expected = set(self.expected_names(ctx))
        stale = [n for n in self.existing_names(ctx) if n not in expected]
        await bounded(partial(self._delete_one, ctx, n) for n in stale)
        work = [
            (i, c.name)
            for i in range(ctx.owner.spec.replicas or 0)
            for c in standalone_cliques(ctx.owner.spec.template)
        ]
        await bounded(partial(self._sync_one, ctx, i, clique) for i, clique in work)
        return None

    async def _sync_one(self, ctx: PcsContext, replica: int, clique: str) -> None:
        name = gnames.standalone_pclq_name(ctx.key.name, replica, clique)
        raw = cached(ctx, PODCLIQUES, name)
        existing = PodClique.model_validate(raw) if raw is not None else None
        desired = build_standalone_podclique(ctx.owner, replica, clique, existing)
        outcome, _ = await create_or_patch(ctx, PODCLIQUES, desired, raw, component=self.name)
        if outcome == "created":
            await ctx.recorder.normal(ctx.raw, "PodCliqueCreated", f"Created PodClique {name}")

    async def _delete_one(self, ctx: PcsContext, name: str) -> None:
        if await delete_if_exists(ctx.client, PODCLIQUES, name, ctx.namespace):
            await ctx.recorder.normal(ctx.raw, "PodCliqueDeleted", f"Deleted PodClique {name}")

    async def delete(self, ctx: PcsContext) -> None:
        """Delete every standalone PodClique of the PCS."""
        await bounded(partial(self._delete_one, ctx, n) for n in self.existing_names(ctx))
