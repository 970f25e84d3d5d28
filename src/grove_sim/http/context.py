"""What every resource handler shares: the API context, the resolved request target and the JSON responses.

A handler gets the ``ApiContext`` (the core, watch tuning, the open watch streams) and a ``Target`` (the resource,
namespace, name and subresource the path named, plus the write options every mutating verb honours), and answers
with compact JSON: a stored object reuses the encoding its write event already made (``object_response``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web

from grove_sim.auth.authentication import ADMIN, Authenticator, UserInfo, impersonated
from grove_sim.auth.authorizer import Authorizer, check_impersonation
from grove_sim.http.escalation_guard import escalation_guarded
from grove_sim.http.tables import build_table
from grove_sim.registry.core import Core
from grove_sim.registry.resources import ResourceInfo
from grove_sim.registry.steps import Steps, run
from grove_sim.registry.webhooks import WebhookAdmission
from grove_sim.storage.store import dumps
from grove_sim.storage.watch import Watcher

if TYPE_CHECKING:
    from grove_sim.http.audit import AuditLog
    from grove_sim.http.faults import FaultInjector
    from grove_sim.http.podlogs import LogSource

__all__ = [
    "ApiContext",
    "Handler",
    "Target",
    "admit",
    "json_response",
    "object_response",
    "table",
    "warning_headers",
]

T = TypeVar("T")


@dataclass
class ApiContext:
    """What every resource handler needs: the core, admission, who is calling, watch tuning and open watches.

    Without an ``authenticator`` every caller is the cluster admin; without ``admission`` no webhook is called.
    """

    core: Core
    bookmark_interval: float = 60.0
    watchers: set[Watcher] = field(default_factory=set)
    authenticator: Authenticator | None = None
    admission: WebhookAdmission | None = None
    audit: AuditLog | None = None
    authorizer: Authorizer | None = None
    """The authorization mode in force; None is ``AlwaysAllow`` (no check at all)."""
    faults: FaultInjector | None = None
    """Fault injection and its ``/sim/faults`` endpoint and ``/metrics`` (None: neither is served)."""
    pod_logs: LogSource | None = None
    """Where ``pods/log`` reads container output (the kubelet); None: every container's log is empty."""

    def authenticate(self, request: web.Request) -> UserInfo:
        """The user of a request's ``Authorization`` and ``Impersonate-*`` headers (raises ``Unauthorized``, and
        the 403 kube-apiserver answers when an authorizer refuses the impersonation)."""
        if self.authenticator is None:
            return ADMIN
        headers = request.headers
        user = self.authenticator.authenticate(headers.get("Authorization"))
        impersonate = headers.get("Impersonate-User")
        if not impersonate:
            return user
        groups, uid = headers.getall("Impersonate-Group", []), headers.get("Impersonate-Uid")
        if self.authorizer is not None:
            check_impersonation(self.authorizer, user, impersonate, groups, uid)
        return impersonated(impersonate, groups, uid or "")


async def admit(ctx: ApiContext, target: Target, make_steps: Callable[[], Steps[T]]) -> T:
    """Run a write through admission as the request's user; its warnings are kept for the response headers. Under
    RBAC, a write of a role or binding first passes the escalation check."""
    if ctx.authorizer is not None:
        make_steps = escalation_guarded(ctx.authorizer, target.info, target.user, make_steps)
    if ctx.admission is None:
        return run(make_steps())
    return await ctx.admission.run(make_steps, target.user, target.warnings)


def warning_headers(warnings: Iterable[str]) -> list[tuple[str, str]]:
    """RFC 7234 ``Warning`` headers (code 299, no agent) as kube-apiserver sends admission warnings."""
    headers = []
    for text in warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        headers.append(("Warning", f'299 - "{escaped}"'))
    return headers


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
    user: UserInfo = ADMIN
    """Who is asking (what admission webhooks see as ``userInfo``)."""
    warnings: list[str] = field(default_factory=list)
    """Admission warnings for the response's ``Warning`` headers."""

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
