"""PodCliqueScalingGroups of a PodCliqueSet (group 3): one per replica and scaling-group config.

`spec.replicas` is set only at creation (live scaling wins); `minAvailable`, `cliqueNames`, labels and annotations
are refreshed; groups of removed replicas are deleted (their member PodCliques follow through GC).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from grove_api import PodCliqueScalingGroup
from grove_api import labels as glabels
from grove_operator import parsed
from grove_operator.components import PODCLIQUESCALINGGROUPS, create_or_patch, delete_if_exists
from grove_operator.desired._layout import scaling_group_configs
from grove_operator.desired.scalinggroup import build_scaling_group
from grove_operator.podcliqueset.components._common import PcsContext, bounded, cached, children
from grove_runtime.keys import Result

__all__ = ["ScalingGroups"]


@dataclass(frozen=True)
class ScalingGroups:
    """Create-or-patch expected PCSGs, delete the rest."""

    name: str = "podcliquescalinggroup"

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """Cached PCSGs of the PCS."""
        return [o["metadata"]["name"] for o in children(ctx, PODCLIQUESCALINGGROUPS, glabels.COMPONENT_PCSG)]

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Converge the scaling groups."""
        work = [
            (i, g.name)
            for i in range(ctx.owner.spec.replicas or 0)
            for g in scaling_group_configs(ctx.owner.spec.template)
        ]
        expected = {f"{ctx.key.name}-{i}-{g}" for i, g in work}
        stale = [n for n in self.existing_names(ctx) if n not in expected]
        await bounded(partial(self._delete_one, ctx, n) for n in stale)
        await bounded(partial(self._sync_one, ctx, i, g) for i, g in work)
        return None

    async def _sync_one(self, ctx: PcsContext, replica: int, group: str) -> None:
        desired = build_scaling_group(ctx.owner, replica, group)
        name = str(desired["metadata"]["name"])
        raw = cached(ctx, PODCLIQUESCALINGGROUPS, name)
        if raw is not None:
            desired = build_scaling_group(ctx.owner, replica, group, parsed.parse(PodCliqueScalingGroup, raw))
        outcome, _ = await create_or_patch(ctx, PODCLIQUESCALINGGROUPS, desired, raw, component=self.name)
        if outcome == "created":
            await ctx.recorder.normal(ctx.raw, "PodCliqueScalingGroupCreated", f"Created PodCliqueScalingGroup {name}")

    async def _delete_one(self, ctx: PcsContext, name: str) -> None:
        if await delete_if_exists(ctx.client, PODCLIQUESCALINGGROUPS, name, ctx.namespace):
            await ctx.recorder.normal(ctx.raw, "PodCliqueScalingGroupDeleted", f"Deleted PodCliqueScalingGroup {name}")

    async def delete(self, ctx: PcsContext) -> None:
        """Delete every PCSG of the PCS."""
        await bounded(partial(self._delete_one, ctx, n) for n in self.existing_names(ctx))
