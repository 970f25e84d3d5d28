"""Headless Services of a PodCliqueSet, one per replica (group 1).

They give pods stable DNS names before any pod exists (`<pclq>-<idx>.<pcs>-<i>.<ns>.svc`). The Services of
replicas removed by a scale-in are deleted like every other child of a removed replica.
"""

from __future__ import annotations

from collections.abc import Hashable

from grove_api import PodCliqueSetTemplateSpec
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.service import build_headless_service
from grove_operator.podcliqueset.components._common import Obj, PcsContext, PcsIndexedChildSet, spec_fingerprint
from grove_operator.reconcile.childset import IndexedSlots, Slot
from grove_runtime.resources import SERVICES

__all__ = ["HeadlessServices"]


class HeadlessServices(PcsIndexedChildSet):
    """`<pcs>-<i>` for every replica index `i` (one nameless entry); the spec is create-only (a Service's spec is
    the API server's)."""

    name = "headless-service"
    rt = SERVICES
    patch_fields = ()
    component_label = glabels.COMPONENT_HEADLESS_SERVICE
    naming = staticmethod(lambda pcs, replica, _entry: gnames.headless_service_name(pcs, replica))

    def entries(self, template: PodCliqueSetTemplateSpec) -> tuple[str, ...]:
        """One Service per replica: a single, empty entry."""
        return ("",)

    def build(self, ctx: PcsContext, view: IndexedSlots, key: Slot, existing: Obj | None) -> Obj:
        """The Service of replica `key`."""
        return build_headless_service(ctx.owner, key[0])

    def fingerprint(self, ctx: PcsContext) -> Hashable | None:
        """A service is built from the PCS name, uid and template (fixed per generation) and its index."""
        return spec_fingerprint(ctx)
