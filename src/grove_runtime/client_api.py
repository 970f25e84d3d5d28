"""The API client's interface: the ``Client`` Protocol every component codes against, and the patch types.

Kept apart from :class:`grove_runtime.client.KubeClient` (the implementation over the wire) so the contract
reads on one page; ``grove_runtime.client`` re-exports both names.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol

from grove_runtime.resources import ResourceType

__all__ = ["Client", "PatchType"]

Obj = dict[str, Any]


class PatchType(enum.StrEnum):
    """Patch content types; MERGE works for every kind, STRATEGIC only for built-ins."""

    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    JSON = "application/json-patch+json"
    APPLY = "application/apply-patch+yaml"


class Client(Protocol):
    """Reader + writer + status writer for any :class:`ResourceType`; objects are plain dicts."""

    async def get(self, rt: ResourceType, name: str, namespace: str = "") -> Obj:
        """GET one object (raises ``NotFound``)."""
        ...

    async def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        transform: Callable[[Obj], Obj | None] | None = None,
    ) -> Obj:
        """LIST every page; returns ``{"items": [...], "metadata": {"resourceVersion": ...}}`` (each item through
        ``transform`` as its page arrives, None dropping it)."""
        ...

    async def create(self, rt: ResourceType, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        """POST a new object (raises ``AlreadyExists``)."""
        ...

    async def update(self, rt: ResourceType, obj: Mapping[str, Any], *, subresource: str | None = None) -> Obj:
        """PUT the object (optimistic concurrency on ``metadata.resourceVersion``; raises ``Conflict``)."""
        ...

    async def patch(
        self,
        rt: ResourceType,
        name: str,
        body: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        namespace: str = "",
        *,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> Obj:
        """PATCH the object or a subresource with the given content type."""
        ...

    async def delete(
        self,
        rt: ResourceType,
        name: str,
        namespace: str = "",
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Obj:
        """DELETE the object (raises ``NotFound``)."""
        ...

    async def bind(
        self, namespace: str, pod: str, node: str, *, uid: str | None = None, fence: Callable[[], bool] | None = None
    ) -> None:
        """Bind a pod to a node through ``pods/{name}/binding``; with ``fence``, every attempt (retries included)
        is sent only while it returns True, else :class:`~grove_runtime.errors.Fenced`."""
        ...

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[Obj]]:
        """Open a watch; iterate raw ``{"type", "object"}`` events (``ERROR`` events raise)."""
        ...
