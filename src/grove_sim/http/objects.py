"""Verbs on one named object and its subresources: get/update/patch/delete, status, binding, eviction, scale, finalize.

Each handler turns one request into calls on ``Core`` or ``grove_sim.registry.subresources`` and answers with the
object (a Table for a kubectl ``get``), or the ``Status``/``Scale`` document the subresource returns upstream.
"""

from __future__ import annotations

from aiohttp import web

from grove_sim.http.context import ApiContext, Target, admit, json_response, object_response, table
from grove_sim.http.requestinfo import media_type, read_body, read_delete_options, wants_table
from grove_sim.registry import eviction, subresources
from grove_sim.registry.patching import PATCH_TYPES

__all__ = ["bind", "delete", "evict", "finalize", "get", "get_scale", "patch", "patch_scale", "update", "update_scale"]


def _name(target: Target) -> str:
    assert target.name is not None, "object handlers are dispatched only for named requests"
    return target.name


async def get(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """GET the object (or its status); kubectl's ``get`` asks for a Table of the main resource."""
    obj = ctx.core.get(target.info, target.ns, _name(target))
    if wants_table(request) and target.subresource is None:
        rendered = table(target.info, request, [obj])
        rendered["metadata"] = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
        return json_response(rendered)
    return object_response(ctx, obj)


async def update(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """PUT the object or its status."""
    body = await read_body(request)
    updated = await admit(
        ctx,
        target,
        lambda: ctx.core.update_steps(
            target.info,
            target.ns,
            _name(target),
            body,
            subresource=target.subresource,
            dry_run=target.dry_run,
            strict=target.strict,
        ),
    )
    return object_response(ctx, updated)


async def patch(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """PATCH the object or its status (201 when server-side apply created it)."""
    body = await read_body(request, allowed=PATCH_TYPES)
    obj, code = await admit(
        ctx,
        target,
        lambda: ctx.core.patch_steps(
            target.info,
            target.ns,
            _name(target),
            media_type(request),
            body,
            subresource=target.subresource,
            dry_run=target.dry_run,
            strict=target.strict,
        ),
    )
    return object_response(ctx, obj, code)


async def delete(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """DELETE with ``DeleteOptions``: the last state when removed, the marked object otherwise."""
    options = await read_delete_options(request)
    obj, code = await admit(
        ctx,
        target,
        lambda: ctx.core.delete_steps(target.info, target.ns, _name(target), options, dry_run=target.dry_run),
    )
    return object_response(ctx, obj, code)


async def bind(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """POST ``pods/{name}/binding``."""
    return json_response(subresources.bind(ctx.core, target.ns, _name(target), await read_body(request)), 201)


async def evict(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """POST ``pods/{name}/eviction``: deletes the pod if its disruption budget allows (429 otherwise)."""
    return json_response(eviction.evict(ctx.core, target.ns, _name(target), await read_body(request)), 201)


async def get_scale(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """GET ``/scale``."""
    return json_response(subresources.get_scale(target.info, ctx.core.get(target.info, target.ns, _name(target))))


async def update_scale(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """PUT ``/scale``."""
    body = await read_body(request)
    return json_response(subresources.update_scale(ctx.core, target.info, target.ns, _name(target), body))


async def patch_scale(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """PATCH ``/scale``."""
    body = await read_body(request, allowed=PATCH_TYPES)
    scale = subresources.patch_scale(ctx.core, target.info, target.ns, _name(target), media_type(request), body)
    return json_response(scale)


async def finalize(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """PUT ``namespaces/{name}/finalize``."""
    return json_response(subresources.finalize_namespace(ctx.core, _name(target), await read_body(request)))
