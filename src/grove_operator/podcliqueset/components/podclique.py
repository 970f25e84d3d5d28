"""Standalone PodCliques of a PodCliqueSet (group 2).

Expected: `<pcs>-<i>-<clique>` for every replica below `spec.replicas` and every clique outside a scaling group.
Those above (PCS scale-in) are deleted; the rest are created or patched with the template, keeping the live
`spec.replicas` so `kubectl scale pclq` and HPAs win over the template (§3.9).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from grove_api import PodClique
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator import parsed
from grove_operator.components import PODCLIQUES, create_or_patch, delete_if_exists, in_sync
from grove_operator.desired._layout import is_terminating, standalone_cliques
from grove_operator.desired.podclique import build_standalone_podclique
from grove_operator.podcliqueset.components._common import PcsContext, bounded, cached, children
from grove_operator.syncmemo import SyncMemo
from grove_runtime.keys import Result

__all__ = ["StandalonePodCliques"]

_MEMO = SyncMemo()


@dataclass(frozen=True)
class StandalonePodCliques:
    """Create-or-patch expected standalone PodCliques, delete the ones of removed replicas."""

    name: str = "podclique"

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """Cached PodCliques owned directly by the PCS."""
        return [o["metadata"]["name"] for o in children(ctx, PODCLIQUES, glabels.COMPONENT_PCS_PODCLIQUE)]

    def expected_names(self, ctx: PcsContext) -> list[str]:
        """`<pcs>-<i>-<clique>` for each replica and standalone clique."""
        cliques = standalone_cliques(ctx.owner.spec.template)
        return [
            gnames.standalone_pclq_name(ctx.key.name, i, c.name)
            for i in range(ctx.owner.spec.replicas or 0)
            for c in cliques
        ]

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Converge the standalone PodCliques."""
        expected = set(self.expected_names(ctx))
        # One delete per PodClique: those already terminating (their finalizer still held) are not deleted again.
        stale = [
            str(o["metadata"]["name"])
            for o in children(ctx, PODCLIQUES, glabels.COMPONENT_PCS_PODCLIQUE)
            if o["metadata"]["name"] not in expected and not is_terminating(o)
        ]
        await bounded(partial(self._delete_one, ctx, n) for n in stale)
        cliques = [c.name for c in standalone_cliques(ctx.owner.spec.template)]
        work = [(i, clique) for i in range(ctx.owner.spec.replicas or 0) for clique in cliques]
        # A standalone PodClique is built from the PCS spec (fixed per uid and generation) and its own live object.
        fingerprint = (ctx.owner.metadata.uid, ctx.owner.metadata.generation)
        writes = []
        for i, clique in work:
            name = gnames.standalone_pclq_name(ctx.key.name, i, clique)
            raw = cached(ctx, PODCLIQUES, name)
            memo_key = (ctx.namespace, name)
            if raw is not None and fingerprint[1] is not None and _MEMO.unchanged(memo_key, raw, fingerprint):
                continue
            existing = parsed.parse(PodClique, raw) if raw is not None else None
            desired = build_standalone_podclique(ctx.owner, i, clique, existing)
            if raw is not None and in_sync(desired, raw, component=self.name):
                _MEMO.in_sync(memo_key, raw, fingerprint)
            else:
                _MEMO.forget(memo_key)
                writes.append(partial(self._write_one, ctx, desired, raw))
        await bounded(writes)
        return None

    async def _write_one(self, ctx: PcsContext, desired: dict[str, Any], raw: dict[str, Any] | None) -> None:
        outcome, _ = await create_or_patch(ctx, PODCLIQUES, desired, raw, component=self.name)
        if outcome == "created":
            name = desired["metadata"]["name"]
            await ctx.recorder.normal(ctx.raw, "PodCliqueCreated", f"Created PodClique {name}")

    async def _delete_one(self, ctx: PcsContext, name: str) -> None:
        if await delete_if_exists(ctx.client, PODCLIQUES, name, ctx.namespace):
            await ctx.recorder.normal(ctx.raw, "PodCliqueDeleted", f"Deleted PodClique {name}")

    async def delete(self, ctx: PcsContext) -> None:
        """Delete every standalone PodClique of the PCS."""
        await bounded(partial(self._delete_one, ctx, n) for n in self.existing_names(ctx))
