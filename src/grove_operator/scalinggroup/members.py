"""The member-PodClique component of a PodCliqueScalingGroup (§3.2, §3.9).

Each PCSG replica `j < spec.replicas` gets one PodClique per member clique, `<pcsg>-<j>-<clique>`, built from the
PodCliqueSet template (keeping the live `spec.replicas` of existing ones). Scale-in removes the highest replica
indices: every member PodClique whose replica index is no longer expected is deleted (its pods follow via GC).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_operator import parsed
from grove_operator.components import (
    INDEX_PCSG,
    PODCLIQUES,
    SyncContext,
    controlled_children,
    create_or_patch,
    delete_if_exists,
)
from grove_operator.desired.podclique import build_pcsg_member_podclique
from grove_operator.desired.scalinggroup import member_podclique_names
from grove_operator.podcliqueset.components._common import bounded
from grove_runtime.keys import ObjectKey, Result

__all__ = ["PCS", "MemberPodCliques", "PcsgContext", "member_podcliques"]

PcsgContext = SyncContext[PodCliqueScalingGroup]
PCS = "pcs"
Obj = dict[str, Any]


def member_podcliques(ctx: PcsgContext) -> list[Obj]:
    """Cached PodCliques labelled with this PCSG and controlled by it."""
    return controlled_children(ctx, PODCLIQUES, INDEX_PCSG)


@dataclass(frozen=True)
class MemberPodCliques:
    """Create-or-patch the member PodCliques of replicas `0..replicas-1`, delete the others."""

    name: str = "pcsg-podclique"

    def existing_names(self, ctx: PcsgContext) -> list[str]:
        """Cached member PodCliques."""
        return [o["metadata"]["name"] for o in member_podcliques(ctx)]

    async def sync(self, ctx: PcsgContext) -> Result | None:
        """Converge the member PodCliques, highest replica indices removed first on scale-in."""
        pcsg = ctx.owner
        expected = [
            (j, clique, name)
            for j in range(pcsg.spec.replicas)
            for clique, name in zip(
                pcsg.spec.clique_names, member_podclique_names(ctx.key.name, pcsg.spec.clique_names, j), strict=True
            )
        ]
        wanted = {name for _, _, name in expected}
        stale = sorted((n for n in self.existing_names(ctx) if n not in wanted), reverse=True)
        await bounded(partial(self._delete_one, ctx, n) for n in stale)
        await bounded(partial(self._sync_one, ctx, j, clique, name) for j, clique, name in expected)
        return None

    async def _sync_one(self, ctx: PcsgContext, replica: int, clique: str, name: str) -> None:
        pcs: PodCliqueSet = ctx.extra[PCS]
        raw = ctx.cache.get(PODCLIQUES, ObjectKey(ctx.namespace, name))
        existing = parsed.parse(PodClique, raw) if raw is not None else None
        desired = build_pcsg_member_podclique(pcs, ctx.owner, replica, clique, existing)
        outcome, _ = await create_or_patch(ctx, PODCLIQUES, desired, raw, component=self.name)
        if outcome == "created":
            await ctx.recorder.normal(ctx.raw, "PodCliqueCreated", f"Created PodClique {name}")

    async def _delete_one(self, ctx: PcsgContext, name: str) -> None:
        if await delete_if_exists(ctx.client, PODCLIQUES, name, ctx.namespace):
            await ctx.recorder.normal(ctx.raw, "PodCliqueDeleted", f"Deleted PodClique {name}")

    async def delete(self, ctx: PcsgContext) -> None:
        """Delete every member PodClique."""
        await bounded(partial(self._delete_one, ctx, n) for n in self.existing_names(ctx))
