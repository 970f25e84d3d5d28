"""Resource requests dispatched through a (verb, subresource) table, like the apiserver's route installer.

The Kubernetes verb comes from the method and whether the path names an object (``list``/``watch`` vs ``get``,
``deletecollection`` vs ``delete``). Collection verbs map to ``grove_sim.http.collection``; verbs on a named object
or one of its subresources map, by (verb, subresource), to ``grove_sim.http.objects``. A pair missing from the
tables is a 405, as for a route the real server never installed.
"""

from __future__ import annotations

from typing import Final

from aiohttp import web

from grove_sim.auth.authentication import ADMIN, UserInfo
from grove_sim.http import collection, objects, podlogs, portforward, proxy
from grove_sim.http.context import ApiContext, Handler, Target
from grove_sim.http.requestinfo import RequestInfo, parse_bool, parse_dry_run
from grove_sim.machinery import errors
from grove_sim.registry.resources import ResourceInfo

__all__ = ["handle_resource", "request_verb"]

_COLLECTION_VERBS: Final[dict[str, Handler]] = {
    "list": collection.list_objects,
    "watch": collection.watch,
    "create": collection.create,
    "deletecollection": collection.delete_collection,
}

_OBJECT_VERBS: Final[dict[tuple[str, str | None], Handler]] = {
    ("get", None): objects.get,
    ("update", None): objects.update,
    ("patch", None): objects.patch,
    ("delete", None): objects.delete,
    ("get", "status"): objects.get,
    ("update", "status"): objects.update,
    ("patch", "status"): objects.patch,
    ("create", "binding"): objects.bind,
    ("create", "eviction"): objects.evict,
    ("get", "scale"): objects.get_scale,
    ("update", "scale"): objects.update_scale,
    ("patch", "scale"): objects.patch_scale,
    ("update", "finalize"): objects.finalize,
    ("get", "log"): podlogs.pod_logs,
    ("get", "portforward"): portforward.port_forward,
    ("create", "portforward"): portforward.port_forward,
}

_WRITE_METHODS: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def request_verb(method: str, collection_request: bool, request: web.Request) -> str:
    """The Kubernetes verb of a request on a resource (``list``/``watch`` vs ``get``, ``deletecollection``...)."""
    if method == "GET":
        if not collection_request:
            return "get"
        return "watch" if parse_bool(request, "watch") else "list"
    if method == "DELETE":
        return "deletecollection" if collection_request else "delete"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


async def handle_resource(
    ctx: ApiContext,
    request: web.Request,
    ri: RequestInfo,
    info: ResourceInfo,
    user: UserInfo = ADMIN,
    warnings: list[str] | None = None,
) -> web.StreamResponse:
    """Check scope, verb and subresource of one request on a served resource, then run its handler (as ``user``,
    collecting admission ``warnings``)."""
    method = request.method
    if info.namespaced and ri.namespace is None and ri.name is not None:
        raise errors.route_not_found()
    if not info.namespaced and ri.namespace is not None:
        raise errors.route_not_found()
    verb = request_verb(method, ri.name is None, request)
    if ri.subresource is None and verb not in info.verbs:
        raise errors.method_not_allowed(method, info.plural)
    target = Target(
        info=info,
        namespace=ri.namespace,
        name=ri.name,
        subresource=ri.subresource,
        dry_run=parse_dry_run(request) if method in _WRITE_METHODS else False,
        strict=request.query.get("fieldValidation") == "Strict",
        user=user,
        warnings=warnings if warnings is not None else [],
    )
    if ri.subresource is not None and ri.subresource not in info.subresources:
        raise errors.route_not_found()
    if ri.name is None:
        handler = _COLLECTION_VERBS.get(verb)
        what = info.plural
    elif ri.subresource == "proxy":
        handler = proxy.proxy
    else:
        handler = _OBJECT_VERBS.get((verb, ri.subresource))
        what = f"{info.plural}/{ri.subresource}" if ri.subresource else info.plural
    if handler is None:
        raise errors.method_not_allowed(method, what)
    return await handler(ctx, request, target)
