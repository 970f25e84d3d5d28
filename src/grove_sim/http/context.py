"""What every resource handler shares: the API context, the resolved request target and the JSON responses.

A handler gets the ``ApiContext`` (the core, watch tuning, the open watch streams) and a ``Target`` (the resource,
namespace, name and subresource the path named, plus the write options every mutating verb honours), and answers
with compact JSON: a stored object reuses the encoding its write event already made (``object_response``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from grove_sim.http.tables import build_table
from grove_sim.registry.core import Core
from grove_sim.registry.resources import ResourceInfo
from grove_sim.storage.store import dumps
from grove_sim.storage.watch import Watcher

if TYPE_CHECKING:
    from grove_sim.http.audit import AuditLog

__all__ = ["ApiContext", "Handler", "Target", "json_response", "object_response", "table"]


@dataclass
class ApiContext:
    """What every resource handler needs: the core, watch tuning and the set of open watch streams."""

    core: Core
    bookmark_interval: float = 60.0
    watchers: set[Watcher] = field(default_factory=set)
    audit: AuditLog | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """The resource a request addresses, resolved against the registry, with its write options."""

    info: ResourceInfo
    namespace: str | None
    """The path's namespace; None for cluster-scoped kinds and for lists across all namespaces."""
    name: str | None
    subresource: str | None
    dry_run: bool
    strict: bool

    @property
    def ns(self) -> str:
        """The namespace as the core takes it ("" for cluster-scoped kinds)."""
        return self.namespace or ""


Handler = Callable[[ApiContext, web.Request, Target], Awaitable[web.StreamResponse]]


def json_response(body: Any, status: int = 200) -> web.Response:
    """A compact JSON response."""
    return web.Response(body=dumps(body), status=status, content_type="application/json")


def object_response(ctx: ApiContext, obj: dict[str, Any], status: int = 200) -> web.Response:
    """An object answer; a just-stored object reuses the JSON its write event already encoded."""
    return web.Response(body=ctx.core.store.encoded(obj), status=status, content_type="application/json")


def table(
    info: ResourceInfo, request: web.Request, objects: list[dict[str, Any]], header: bool = True
) -> dict[str, Any]:
    """The ``meta.k8s.io`` Table of ``objects`` as kubectl asked for it (``includeObject``)."""
    return build_table(
        info.plural,
        info.group,
        objects,
        printer_columns=info.printer_columns if info.custom else None,
        include_object=request.query.get("includeObject", "Metadata"),
        now=datetime.now(UTC),
        header=header,
    )
