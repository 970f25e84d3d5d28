"""The ClusterTopologyBinding validating webhook: unique domains and keys, one binding per scheduler."""

from __future__ import annotations

from typing import Any

from grove_operator import validation
from grove_operator.webhooks.podcliqueset import refuse
from grove_runtime.webhook.handlers import Warnings
from grove_runtime.webhook.review import AdmissionRequest

__all__ = ["ClusterTopologyValidator"]

Obj = dict[str, Any]


class ClusterTopologyValidator:
    """Checks ClusterTopologyBindings on create and update."""

    async def validate_create(self, request: AdmissionRequest, obj: Obj) -> Warnings:
        """The level and binding rules."""
        refuse("ClusterTopologyBinding", obj, validation.validate_clustertopology(obj))
        return ()

    async def validate_update(self, request: AdmissionRequest, old: Obj, new: Obj) -> Warnings:
        """The same rules on the new object."""
        return await self.validate_create(request, new)

    async def validate_delete(self, request: AdmissionRequest, obj: Obj) -> Warnings:
        """Deletion is always allowed."""
        return ()
