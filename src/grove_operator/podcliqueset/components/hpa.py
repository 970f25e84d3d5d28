"""HorizontalPodAutoscalers of a PodCliqueSet (group 1): one per autoscaled standalone clique and scaling group
per replica, named after its target; HPAs no longer expected (scale-in, removed config) are deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from grove_api import labels as glabels
from grove_operator.components import create_or_patch, delete_if_exists
from grove_operator.desired.hpa import build_hpas
from grove_operator.podcliqueset.components._common import PcsContext, cached, children
from grove_runtime.keys import Result
from grove_runtime.resources import HPAS

__all__ = ["Hpas"]


@dataclass(frozen=True)
class Hpas:
    """Create-or-patch expected HPAs, delete the rest."""

    name: str = "hpa"

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """Cached HPAs of the PCS."""
        return [o["metadata"]["name"] for o in children(ctx, HPAS, glabels.COMPONENT_HPA)]

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Converge the HPAs."""
        desired = build_hpas(ctx.owner)
        expected = {str(h["metadata"]["name"]) for h in desired}
        for name in self.existing_names(ctx):
            if name not in expected:
                await delete_if_exists(ctx.client, HPAS, name, ctx.namespace)
        for hpa in desired:
            existing = cached(ctx, HPAS, str(hpa["metadata"]["name"]))
            await create_or_patch(ctx, HPAS, hpa, existing, component=self.name)
        return None

    async def delete(self, ctx: PcsContext) -> None:
        """Delete every HPA of the PCS."""
        for name in self.existing_names(ctx):
            await delete_if_exists(ctx.client, HPAS, name, ctx.namespace)
