"""Headless Services of a PodCliqueSet, one per replica (group 1).

They give pods stable DNS names before any pod exists. Like upstream, services of removed replica indices are not
pruned; they go with the PodCliqueSet through garbage collection.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.components import create_or_patch, delete_if_exists, in_sync
from grove_operator.desired.service import build_headless_service
from grove_operator.podcliqueset.components._common import PcsContext, bounded, cached, children
from grove_operator.syncmemo import SyncMemo
from grove_runtime.keys import Result
from grove_runtime.resources import SERVICES

__all__ = ["HeadlessServices"]

_MEMO = SyncMemo()


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
        # A service is built from the PCS name, uid and template (fixed per generation) and its replica index.
        fingerprint = (ctx.owner.metadata.uid, ctx.owner.metadata.generation)
        pcs_name = ctx.key.name
        for i in range(ctx.owner.spec.replicas or 0):
            name = gnames.headless_service_name(pcs_name, i)
            existing = cached(ctx, SERVICES, name)
            memo_key = (ctx.namespace, name)
            if existing is not None and fingerprint[1] is not None and _MEMO.unchanged(memo_key, existing, fingerprint):
                continue
            desired = build_headless_service(ctx.owner, i)
            if in_sync(desired, existing, component=self.name, patch_fields=()):
                _MEMO.in_sync(memo_key, existing, fingerprint)
                continue
            _MEMO.forget(memo_key)
            writes.append(partial(create_or_patch, ctx, SERVICES, desired, existing, component=self.name,
                                  patch_fields=()))  # fmt: skip
        await bounded(writes)
        return None

    async def delete(self, ctx: PcsContext) -> None:
        """Delete every headless service of the PCS."""
        for name in self.existing_names(ctx):
            await delete_if_exists(ctx.client, SERVICES, name, ctx.namespace)
