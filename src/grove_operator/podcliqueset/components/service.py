"""Headless Services of a PodCliqueSet, one per replica (group 1).

They give pods stable DNS names before any pod exists. Like upstream, services of removed replica indices are not
pruned; they go with the PodCliqueSet through garbage collection.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from grove_api import labels as glabels
from grove_operator.components import create_or_patch, delete_if_exists, in_sync
from grove_operator.desired.service import build_headless_service
from grove_operator.podcliqueset.components._common import PcsContext, bounded, cached, children
from grove_runtime.keys import Result
from grove_runtime.resources import SERVICES

__all__ = ["HeadlessServices"]


@dataclass(frozen=True)
class HeadlessServices:
    """Create-or-patch `<pcs>-<i>` for every replica index."""

    name: str = "headless-service"

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """Cached headless services of the PCS."""
        return [o["metadata"]["name"] for o in children(ctx, SERVICES, glabels.COMPONENT_HEADLESS_SERVICE)]

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Create or patch the service of each replica (concurrently, bounded: 500 replicas are 500 services)."""
        writes = []
        for i in range(ctx.owner.spec.replicas or 0):
            desired = build_headless_service(ctx.owner, i)
            existing = cached(ctx, SERVICES, str(desired["metadata"]["name"]))
            if not in_sync(desired, existing, component=self.name, patch_fields=()):
                writes.append(partial(create_or_patch, ctx, SERVICES, desired, existing, component=self.name,
                                      patch_fields=()))  # fmt: skip
        await bounded(writes)
        return None

    async def delete(self, ctx: PcsContext) -> None:
        """Delete every headless service of the PCS."""
        for name in self.existing_names(ctx):
            await delete_if_exists(ctx.client, SERVICES, name, ctx.namespace)
