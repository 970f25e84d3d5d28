"""Headless Services of a PodCliqueSet, one per replica (group 1).

They give pods stable DNS names before any pod exists (`<pclq>-<idx>.<pcs>-<i>.<ns>.svc`). The Services of
replicas removed by a scale-in are deleted like every other child of a removed replica.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from grove_api import PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import split_indexed_name
from grove_operator.desired.service import build_headless_service
from grove_operator.podcliqueset.components._common import Obj, PcsContext, children, spec_fingerprint
from grove_operator.reconcile.childset import ChildSet
from grove_runtime.resources import SERVICES

__all__ = ["HeadlessServices"]


class HeadlessServices(ChildSet[PodCliqueSet, int]):
    """`<pcs>-<i>` for every replica index `i`; the spec is create-only (a Service's spec is the API server's)."""

    name = "headless-service"
    rt = SERVICES
    patch_fields = ()

    def existing(self, ctx: PcsContext) -> Iterable[Obj]:
        """Cached headless services of the PCS."""
        return children(ctx, SERVICES, glabels.COMPONENT_HEADLESS_SERVICE)

    def key_of(self, ctx: PcsContext, child: Obj) -> int | None:
        """The replica index in `<pcs>-<i>`."""
        split = split_indexed_name(ctx.key.name, str(child["metadata"]["name"]))
        return split[0] if split is not None and not split[1] else None

    def wanted(self, ctx: PcsContext, key: int) -> bool:
        """Replica `key` exists."""
        return 0 <= key < (ctx.owner.spec.replicas or 0)

    def candidates(self, ctx: PcsContext) -> Iterable[int]:
        """Replica indices in order."""
        return range(ctx.owner.spec.replicas or 0)

    def child_name(self, ctx: PcsContext, key: int) -> str:
        """`<pcs>-<i>`."""
        return gnames.headless_service_name(ctx.key.name, key)

    def build(self, ctx: PcsContext, key: int, existing: Obj | None) -> Obj:
        """The Service of replica `key`."""
        return build_headless_service(ctx.owner, key)

    def fingerprint(self, ctx: PcsContext) -> Hashable | None:
        """A service is built from the PCS name, uid and template (fixed per generation) and its index."""
        return spec_fingerprint(ctx)
