"""The authorization step of the handler chain: a request's attributes, then the authorizer's verdict or a 403.

It runs after authentication and before routing, as in kube-apiserver, so a caller without access learns nothing
about what exists (a 403 even for a resource the server does not serve). The attributes follow kube-apiserver's
``RequestInfo``: the verb from method and path (``list``/``watch``/``deletecollection``), a namespace's own name as
its namespace, and the name of a ``metadata.name`` field selector on a list or watch (so ``resourceNames`` can allow
watching one object); every other path is a non-resource request with the lower-cased method as verb.
"""

from __future__ import annotations

from aiohttp import web

from grove_sim.auth.attributes import Attributes, forbidden
from grove_sim.auth.authentication import UserInfo
from grove_sim.auth.authorizer import Authorizer
from grove_sim.http.dispatch import request_verb
from grove_sim.http.requestinfo import RequestInfo

__all__ = ["authorize_request", "request_attributes"]

_NAME_SELECTORS = ("metadata.name=", "metadata.name==")


def _selected_name(request: web.Request) -> str:
    raw = request.query.get("fieldSelector", "")
    if "," in raw:
        return ""
    for prefix in _NAME_SELECTORS:
        if raw.startswith(prefix):
            return raw[len(prefix) :]
    return ""


def request_attributes(request: web.Request, ri: RequestInfo | None, user: UserInfo) -> Attributes:
    """The authorizer's view of ``request`` (``ri`` is its parsed path, None or without a resource when the path
    names none)."""
    if ri is None or not ri.plural:
        return Attributes(user, request.method.lower(), resource_request=False, path=request.path)
    verb = request_verb(request.method, ri.name is None, request)
    namespace, name = ri.namespace or "", ri.name or ""
    if not ri.group and ri.plural == "namespaces" and name:
        namespace = name
    if verb in ("list", "watch") and "fieldSelector" in request.query:
        name = _selected_name(request)
    return Attributes(
        user,
        verb,
        group=ri.group,
        resource=ri.plural,
        subresource=ri.subresource or "",
        namespace=namespace,
        name=name,
    )


def authorize_request(authorizer: Authorizer, request: web.Request, ri: RequestInfo | None, user: UserInfo) -> None:
    """Raise the 403 kube-apiserver answers unless ``authorizer`` allows the request."""
    attributes = request_attributes(request, ri, user)
    decision = authorizer.authorize(attributes)
    if not decision.allowed:
        raise forbidden(attributes, decision.reason)
