"""HTTP verbs on resources: list/watch/get/create/update/patch/delete/deletecollection and subresources.

Each handler turns one parsed request into calls on ``Core`` (or ``subresources``) and renders the answer as JSON,
or as a ``meta.k8s.io`` Table when kubectl asks for one. Lists page with limit/continue over the current state in
(namespace, name) order (a documented gap: the real server pages over a snapshot); watches are served by
``grove_sim.watch``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from grove_sim import errors, subresources
from grove_sim.core import PATCH_TYPES, Core
from grove_sim.requestinfo import RequestInfo, parse_bool, parse_int, read_body, wants_table
from grove_sim.resources import ResourceInfo
from grove_sim.selectors import FieldSelector, LabelSelector, SelectorError, parse_field_selector, parse_label_selector
from grove_sim.storage import Event, TooOld, dumps
from grove_sim.tables import build_table
from grove_sim.watch import Render, Watcher, stream

__all__ = ["ApiContext", "handle_resource", "json_response"]

_DEFAULT_WATCH_TIMEOUT = 1800.0


@dataclass
class ApiContext:
    """What every resource handler needs: the core, watch tuning and the set of open watch streams."""

    core: Core
    bookmark_interval: float = 60.0
    watchers: set[Watcher] = field(default_factory=set)


def json_response(body: Any, status: int = 200) -> web.Response:
    """A compact JSON response."""
    return web.Response(body=dumps(body), status=status, content_type="application/json")


def _object_response(ctx: ApiContext, obj: dict[str, Any], status: int = 200) -> web.Response:
    """An object answer; a just-stored object reuses the JSON its write event already encoded."""
    return web.Response(body=ctx.core.store.encoded(obj), status=status, content_type="application/json")


def _selectors(request: web.Request, info: ResourceInfo) -> tuple[LabelSelector | None, FieldSelector | None]:
    try:
        labels = parse_label_selector(request.query["labelSelector"]) if request.query.get("labelSelector") else None
        fields = (
            parse_field_selector(
                request.query["fieldSelector"],
                info.plural,
                is_custom=info.custom,
                group=info.group,
                selectable_fields=info.selectable_fields,
            )
            if request.query.get("fieldSelector")
            else None
        )
    except SelectorError as exc:
        raise errors.bad_request(str(exc)) from exc
    return labels, fields


def _selected(obj: dict[str, Any], labels: LabelSelector | None, fields: FieldSelector | None) -> bool:
    if labels is not None and not labels.matches((obj.get("metadata") or {}).get("labels") or {}):
        return False
    return fields is None or fields.matches(obj)


def _encode_continue(rv: int, namespace: str, name: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": [namespace, name]}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        namespace, name = data["start"]
        return str(namespace), str(name)
    except (ValueError, KeyError, TypeError):
        raise errors.bad_request("continue key is not valid: incorrect encoded start resourceVersion") from None


def _table(
    info: ResourceInfo, request: web.Request, objects: list[dict[str, Any]], header: bool = True
) -> dict[str, Any]:
    return build_table(
        info.plural,
        info.group,
        objects,
        printer_columns=info.printer_columns if info.custom else None,
        include_object=request.query.get("includeObject", "Metadata"),
        now=datetime.now(UTC),
        header=header,
    )


async def _list(ctx: ApiContext, request: web.Request, info: ResourceInfo, namespace: str | None) -> web.StreamResponse:
    labels, fields = _selectors(request, info)
    store = ctx.core.store
    name = fields.required_value("metadata.name") if fields is not None else None
    if name is not None and (namespace is not None or not info.namespaced):
        single = store.get(info.key, namespace or "", name)
        candidates = [single] if single is not None else []
    else:
        candidates = store.list(info.key, namespace if info.namespaced else None)
    items = [o for o in candidates if _selected(o, labels, fields)]
    token = request.query.get("continue")
    if token:
        start = _decode_continue(token)
        items = [o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > start]
    limit = parse_int(request, "limit") or 0
    meta: dict[str, Any] = {"resourceVersion": str(store.rv)}
    if 0 < limit < len(items):
        last = items[limit - 1]["metadata"]
        meta["continue"] = _encode_continue(store.rv, last.get("namespace", ""), last["name"])
        meta["remainingItemCount"] = len(items) - limit
        items = items[:limit]
    if wants_table(request):
        table = _table(info, request, items)
        table["metadata"] = meta
        return json_response(table)
    return json_response(
        {"kind": f"{info.kind}List", "apiVersion": info.group_version, "metadata": meta, "items": items}
    )


def _table_render(info: ResourceInfo, request: web.Request) -> Render:
    sent_header = [False]

    def render(event: Event, type_: str) -> bytes:
        table = _table(info, request, [event.obj], header=not sent_header[0])
        sent_header[0] = True
        table["metadata"] = {"resourceVersion": event.obj["metadata"].get("resourceVersion", "")}
        return b'{"type":"' + type_.encode() + b'","object":' + dumps(table) + b"}\n"

    return render


async def _watch(
    ctx: ApiContext, request: web.Request, info: ResourceInfo, namespace: str | None
) -> web.StreamResponse:
    labels, fields = _selectors(request, info)
    store = ctx.core.store
    render = _table_render(info, request) if wants_table(request) else None
    watcher = Watcher(namespace if info.namespaced else None, labels, fields, render)
    raw_rv = request.query.get("resourceVersion", "")
    since: int | None = None
    if raw_rv not in ("", "0"):
        try:
            since = int(raw_rv)
        except ValueError:
            raise errors.bad_request(f'invalid resource version "{raw_rv}"') from None
    try:
        replay = list(store.subscribe(info.key, watcher, since))
    except TooOld as exc:
        body = errors.status_body(410, "Expired", str(exc))
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(b'{"type":"ERROR","object":' + dumps(body) + b"}\n")
        await response.write_eof()
        return response
    if since is None:
        replay = [
            Event("ADDED", info.key, o, None, store.rv)
            for o in store.list(info.key, namespace if info.namespaced else None)
        ]
    timeout = parse_int(request, "timeoutSeconds")
    bookmark = (
        {"kind": info.kind, "apiVersion": info.group_version} if parse_bool(request, "allowWatchBookmarks") else None
    )
    return await stream(
        request,
        store,
        info.key,
        watcher,
        replay,
        duration=float(timeout) if timeout else _DEFAULT_WATCH_TIMEOUT,
        bookmark=bookmark,
        bookmark_interval=ctx.bookmark_interval,
        on_open=ctx.watchers.add,
        on_close=ctx.watchers.discard,
    )


async def _delete_options(request: web.Request) -> dict[str, Any]:
    body: Any = None
    if request.can_read_body:
        body = await read_body(request)
    options: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    grace = parse_int(request, "gracePeriodSeconds")
    if grace is not None:
        options["gracePeriodSeconds"] = grace
    if request.query.get("propagationPolicy"):
        options["propagationPolicy"] = request.query["propagationPolicy"]
    if request.query.get("orphanDependents"):
        options["orphanDependents"] = parse_bool(request, "orphanDependents")
    return options


def _verb(method: str, collection: bool, request: web.Request) -> str:
    """The Kubernetes verb of a request on a resource (``list``/``watch`` vs ``get``, ``deletecollection``...)."""
    if method == "GET":
        if not collection:
            return "get"
        return (
            "watch"
            if request.query.get("watch") not in (None, "", "0", "f", "F", "false", "FALSE", "False")
            else "list"
        )
    if method == "DELETE":
        return "deletecollection" if collection else "delete"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise errors.bad_request(f'Invalid value: "{value}": supported values: "All"')
    return bool(values)


async def handle_resource(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.StreamResponse:
    """Dispatch one request on a served resource by method, name and subresource."""
    core = ctx.core
    method = request.method
    if info.namespaced and ri.namespace is None and ri.name is not None:
        raise errors.route_not_found()
    if not info.namespaced and ri.namespace is not None:
        raise errors.route_not_found()
    namespace = ri.namespace or ""
    if ri.subresource is None and _verb(method, ri.name is None, request) not in info.verbs:
        raise errors.method_not_allowed(method, info.plural)
    dry_run = _dry_run(request) if method in ("POST", "PUT", "PATCH", "DELETE") else False
    strict = request.query.get("fieldValidation") == "Strict"
    sub = ri.subresource
    if sub is not None and sub not in info.subresources:
        raise errors.route_not_found()
    if ri.name is None:
        if method == "GET":
            if parse_bool(request, "watch"):
                return await _watch(ctx, request, info, ri.namespace)
            return await _list(ctx, request, info, ri.namespace)
        if method == "POST":
            body = await read_body(request)
            if info.key == ("", "bindings"):
                name = str(((body if isinstance(body, dict) else {}).get("metadata") or {}).get("name", ""))
                return json_response(subresources.bind(core, namespace, name, body), 201)
            created = core.create(info, namespace, body, dry_run=dry_run, strict=strict)
            return _object_response(ctx, created, 201)
        if method == "DELETE":
            options = await _delete_options(request)
            labels, fields = _selectors(request, info)
            deleted = []
            for obj in core.store.list(info.key, ri.namespace if info.namespaced else None):
                if _selected(obj, labels, fields):
                    deleted.append(core.delete(info, namespace, obj["metadata"]["name"], options, dry_run=dry_run)[0])
            meta = {"resourceVersion": str(core.store.rv)}
            return json_response(
                {"kind": f"{info.kind}List", "apiVersion": info.group_version, "metadata": meta, "items": deleted}
            )
        raise errors.method_not_allowed(method, info.plural)
    name = ri.name
    if sub == "binding" and method == "POST":
        return json_response(subresources.bind(core, namespace, name, await read_body(request)), 201)
    if sub == "eviction" and method == "POST":
        core.delete(info, namespace, name, {})
        return json_response(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
        )
    if sub == "scale":
        if method == "GET":
            return json_response(subresources.get_scale(info, core.get(info, namespace, name)))
        if method == "PUT":
            return json_response(subresources.update_scale(core, info, namespace, name, await read_body(request)))
        if method == "PATCH":
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            body = await read_body(request, allowed=PATCH_TYPES)
            return json_response(subresources.patch_scale(core, info, namespace, name, content_type, body))
        raise errors.method_not_allowed(method, f"{info.plural}/scale")
    if sub == "finalize":
        if method != "PUT":
            raise errors.method_not_allowed(method, f"{info.plural}/finalize")
        return json_response(subresources.finalize_namespace(core, name, await read_body(request)))
    if method == "GET":
        obj = core.get(info, namespace, name)
        if wants_table(request) and sub is None:
            table = _table(info, request, [obj])
            table["metadata"] = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            return json_response(table)
        return _object_response(ctx, obj)
    if method == "PUT":
        body = await read_body(request)
        updated = core.update(info, namespace, name, body, subresource=sub, dry_run=dry_run, strict=strict)
        return _object_response(ctx, updated)
    if method == "PATCH":
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        body = await read_body(request, allowed=PATCH_TYPES)
        obj, code = core.patch(
            info, namespace, name, content_type, body, subresource=sub, dry_run=dry_run, strict=strict
        )
        return _object_response(ctx, obj, code)
    if method == "DELETE" and sub is None:
        options = await _delete_options(request)
        obj, code = core.delete(info, namespace, name, options, dry_run=dry_run)
        return _object_response(ctx, obj, code)
    raise errors.method_not_allowed(method, info.plural)
