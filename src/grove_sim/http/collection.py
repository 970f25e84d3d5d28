"""Verbs on a collection: list, watch, create and deletecollection.

Lists page with limit/continue over the current state in (namespace, name) order (a documented gap: the real server
pages over a snapshot) and render as a ``meta.k8s.io`` Table when kubectl asks for one; watches subscribe a
``Watcher`` and hand it to ``grove_sim.http.watchstream``.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from grove_sim.http import access_reviews
from grove_sim.http.context import ApiContext, Target, admit, json_response, object_response, table
from grove_sim.http.requestinfo import parse_bool, parse_int, read_body, read_delete_options, wants_table
from grove_sim.http.watchstream import stream
from grove_sim.machinery import errors
from grove_sim.machinery.field_selectors import FieldSelector, parse_field_selector
from grove_sim.machinery.label_selectors import LabelSelector, SelectorError, parse_label_selector
from grove_sim.registry import subresources
from grove_sim.registry.resources import ResourceInfo
from grove_sim.storage.store import Event, TooOld, dumps
from grove_sim.storage.watch import Render, Watcher

__all__ = ["create", "delete_collection", "list_objects", "watch"]

_DEFAULT_WATCH_TIMEOUT = 1800.0
_BINDINGS = ("", "bindings")
_SELF_SUBJECT_REVIEWS = ("authentication.k8s.io", "selfsubjectreviews")


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


def _list_namespace(target: Target) -> str | None:
    """The namespace a collection request is confined to (None: all namespaces, or a cluster-scoped kind)."""
    return target.namespace if target.info.namespaced else None


async def list_objects(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """GET on a collection: the selected objects, paged, as a List or a Table."""
    info = target.info
    labels, fields = _selectors(request, info)
    store = ctx.core.store
    name = fields.required_value("metadata.name") if fields is not None else None
    token = request.query.get("continue")
    start = _decode_continue(token) if token else None
    candidates: Iterator[dict[str, Any]]
    if name is not None and (target.namespace is not None or not info.namespaced):
        single = store.get(info.key, target.ns, name)
        found = [single] if single is not None and (start is None or (target.ns, name) > start) else []
        candidates, count = iter(found), len(found)
    else:
        candidates, count = ctx.core.objects_after(info, _list_namespace(target), start)
    selected = (o for o in candidates if _selected(o, labels, fields))
    limit = parse_int(request, "limit") or 0
    meta: dict[str, Any] = {"resourceVersion": str(store.rv)}
    items = list(itertools.islice(selected, limit + 1)) if limit > 0 else list(selected)
    if 0 < limit < len(items):
        items = items[:limit]
        last = items[-1]["metadata"]
        meta["continue"] = _encode_continue(store.rv, last.get("namespace", ""), last["name"])
        if labels is None and fields is None:  # kube-apiserver leaves the count unset when a selector filters
            meta["remainingItemCount"] = count - limit
    if wants_table(request):
        rendered = table(info, request, items)
        rendered["metadata"] = meta
        return json_response(rendered)
    return json_response(
        {"kind": f"{info.kind}List", "apiVersion": info.group_version, "metadata": meta, "items": items}
    )


def _table_render(info: ResourceInfo, request: web.Request) -> Render:
    sent_header = [False]

    def render(event: Event, type_: str) -> bytes:
        rendered = table(info, request, [event.obj], header=not sent_header[0])
        sent_header[0] = True
        rendered["metadata"] = {"resourceVersion": event.obj["metadata"].get("resourceVersion", "")}
        return b'{"type":"' + type_.encode() + b'","object":' + dumps(rendered) + b"}\n"

    return render


async def watch(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """GET with ``watch``: replay from ``resourceVersion`` (410 in-stream when too old), then live events."""
    info = target.info
    labels, fields = _selectors(request, info)
    store = ctx.core.store
    render = _table_render(info, request) if wants_table(request) else None
    namespace = _list_namespace(target)
    watcher = Watcher(namespace, labels, fields, render)
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
        replay = [Event("ADDED", info.key, o, None, store.rv) for o in store.list(info.key, namespace)]
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


async def create(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """POST on a collection; a ``bindings`` create binds the pod the Binding names; a ``selfsubjectreviews`` create
    answers who the caller is (``kubectl auth whoami``; its body, which says nothing, is not decoded) and stores
    nothing; an access review asks the authorizer (``grove_sim.http.access_reviews``)."""
    if target.info.key == _SELF_SUBJECT_REVIEWS:
        review = {"kind": "SelfSubjectReview", "apiVersion": target.info.group_version, "metadata": {}}
        return json_response({**review, "status": {"userInfo": target.user.to_dict()}}, 201)
    if target.info.key in access_reviews.REVIEWS:
        return await access_reviews.review(ctx, request, target)
    body = await read_body(request)
    if target.info.key == _BINDINGS:
        name = str(((body if isinstance(body, dict) else {}).get("metadata") or {}).get("name", ""))
        return json_response(subresources.bind(ctx.core, target.ns, name, body), 201)
    created = await admit(
        ctx,
        target,
        lambda: ctx.core.create_steps(target.info, target.ns, body, dry_run=target.dry_run, strict=target.strict),
    )
    return object_response(ctx, created, 201)


async def delete_collection(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """DELETE on a collection: delete every selected object; answers with the deleted (or marked) objects."""
    info = target.info
    options = await read_delete_options(request)
    labels, fields = _selectors(request, info)
    core = ctx.core
    deleted = []
    for obj in core.store.list(info.key, _list_namespace(target)):
        if _selected(obj, labels, fields):
            name, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace", "")

            def steps(name: str = name, namespace: str = namespace) -> Any:
                return core.delete_steps(info, namespace, name, options, dry_run=target.dry_run)

            deleted.append((await admit(ctx, target, steps))[0])
    meta = {"resourceVersion": str(core.store.rv)}
    return json_response(
        {"kind": f"{info.kind}List", "apiVersion": info.group_version, "metadata": meta, "items": deleted}
    )
