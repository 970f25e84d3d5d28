"""Fixtures for grove_runtime tests: ``MiniApi``, a tiny in-process Kubernetes-like
HTTP server (real HTTP, real watch streams, fault injection) used where the shared ``grove_sim`` is not needed
or cannot provoke a fault (429/5xx, compaction, closing streams on demand)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client as k8s

from grove_runtime.client import KubeClient, RetryPolicy

Obj = dict[str, Any]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


@dataclass
class Fault:
    """Reply ``status`` (with headers) to the next request matching ``method`` (``*`` = any)."""

    status: int
    method: str = "*"
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1


class MiniApi:
    """An in-memory API server for any resource path, with resourceVersions, watch history and faults."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}  # (collection, namespace, name) -> object
        self.rv = 100
        self.history: list[tuple[int, str, str, Obj]] = []  # (rv, collection, type, object)
        self.compacted_below = 0
        self.expire_next = 0
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str, str]] = []  # (method, path, content type)
        self.headers: list[dict[str, str]] = []  # the headers of each request, in order
        self._watchers: list[tuple[str, str | None, asyncio.Queue[Obj | None]]] = []
        self.server: TestServer | None = None

    # -- helpers used by tests ------------------------------------------------------------------------------
    def put(self, collection: str, obj: Obj, type_: str | None = None, *, silently: bool = False) -> Obj:
        """Store (create or replace) an object directly and emit the watch event (unless ``silently``)."""
        meta = obj.setdefault("metadata", {})
        key = (collection, meta.get("namespace", ""), meta["name"])
        existed = key in self.objects
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        meta.setdefault("uid", f"uid-{meta['name']}-{self.rv}")
        meta.setdefault("generation", 1)
        self.objects[key] = obj
        if not silently:
            self._emit(collection, type_ or ("MODIFIED" if existed else "ADDED"), obj)
        return obj

    def remove(self, collection: str, namespace: str, name: str, *, silently: bool = False) -> Obj | None:
        """Delete an object; ``silently`` skips the watch event (simulates a missed delete)."""
        obj = self.objects.pop((collection, namespace, name), None)
        if obj is not None:
            self.rv += 1
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.rv)}}
            if not silently:
                self._emit(collection, "DELETED", obj)
        return obj

    def compact(self) -> None:
        """Forget all history: watches from any older resourceVersion now get 410."""
        self.compacted_below = self.rv + 1
        self.history.clear()

    def close_watches(self) -> None:
        """End every open watch stream cleanly."""
        for _, _, q in self._watchers:
            q.put_nowait(None)

    def bookmark(self, collection: str) -> None:
        """Send a BOOKMARK with the current resourceVersion to watchers of ``collection``."""
        event = {"type": "BOOKMARK", "object": {"kind": "Bookmark", "metadata": {"resourceVersion": str(self.rv)}}}
        for coll, _, q in self._watchers:
            if coll == collection:
                q.put_nowait(event)

    def inject_raw(self, collection: str, event: Obj) -> None:
        """Push an arbitrary (possibly malformed) event to the watchers of ``collection``."""
        for coll, _, q in self._watchers:
            if coll == collection:
                q.put_nowait(event)

    @property
    def watcher_count(self) -> int:
        """Number of open watch streams."""
        return len(self._watchers)

    def _emit(self, collection: str, type_: str, obj: Obj) -> None:
        self.history.append((self.rv, collection, type_, copy.deepcopy(obj)))
        ns = obj["metadata"].get("namespace", "")
        for coll, wns, q in self._watchers:
            if coll == collection and (wns is None or wns == ns):
                q.put_nowait({"type": type_, "object": copy.deepcopy(obj)})

    # -- HTTP --------------------------------------------------------------------------------------------------
    @staticmethod
    def _parse(path: str) -> tuple[str, str | None, str | None, str | None]:
        parts = [p for p in path.split("/") if p]
        base = parts[:2] if parts[0] == "api" else parts[:3]
        rest = parts[len(base) :]
        namespace = None
        if rest and rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        collection = "/".join([*base, rest[0]])
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        return collection, namespace, name, sub

    @staticmethod
    def _status(code: int, reason: str, message: str) -> web.Response:
        body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}
        return web.json_response({**body, "message": message}, status=code)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Dispatch one request."""
        self.requests.append((request.method, request.path, request.headers.get("Content-Type", "")))
        self.headers.append(dict(request.headers))
        for fault in self.faults:
            if fault.times > 0 and fault.method in ("*", request.method):
                fault.times -= 1
                resp = self._status(fault.status, "Injected", f"injected {fault.status}")
                resp.headers.update(fault.headers)
                return resp
        collection, namespace, name, sub = self._parse(request.path)
        if request.method == "GET" and name is None:
            if request.query.get("watch") in ("true", "1", "True"):
                return await self._watch(request, collection, namespace)
            return self._list(collection, namespace)
        body = await request.json() if request.can_read_body else None
        if request.method == "POST" and name is None:
            return self._create(collection, namespace or "", body)
        key = (collection, namespace or "", name or "")
        if sub == "binding" and request.method == "POST":
            return self._bind(key, body)
        current = self.objects.get(key)
        if current is None:
            return self._status(404, "NotFound", f"{name} not found")
        if request.method == "GET":
            return web.json_response(current)
        if request.method == "DELETE":
            self.remove(*key)
            return web.json_response(current)
        if request.method == "PUT":
            if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                return self._status(409, "Conflict", "the object has been modified")
            new = {**body, "metadata": {**body["metadata"], "uid": current["metadata"]["uid"]}}
            if sub == "status":
                new = {**current, "status": body.get("status")}
            return web.json_response(self.put(collection, new))
        if request.method == "PATCH":
            if sub == "status":
                new = {**current, "status": merge_patch(current.get("status"), (body or {}).get("status"))}
            else:
                new = merge_patch(current, {k: v for k, v in (body or {}).items() if k != "status"})
            return web.json_response(self.put(collection, new))
        return self._status(405, "MethodNotAllowed", request.method)

    def _list(self, collection: str, namespace: str | None) -> web.Response:
        items = [
            o
            for (c, ns, _), o in sorted(self.objects.items())
            if c == collection and (namespace is None or ns == namespace)
        ]
        return web.json_response({"kind": "List", "metadata": {"resourceVersion": str(self.rv)}, "items": items})

    def _create(self, collection: str, namespace: str, body: Obj) -> web.Response:
        body.setdefault("metadata", {})
        if namespace:
            body["metadata"]["namespace"] = namespace
        if (collection, namespace, body["metadata"]["name"]) in self.objects:
            return self._status(409, "AlreadyExists", f"{body['metadata']['name']} already exists")
        return web.json_response(self.put(collection, body), status=201)

    def _bind(self, key: tuple[str, str, str], body: Obj) -> web.Response:
        pod = self.objects.get(key)
        if pod is None:
            return self._status(404, "NotFound", "pod not found")
        if (pod.get("spec") or {}).get("nodeName"):
            return self._status(409, "Conflict", "pod is already assigned")
        new = merge_patch(pod, {"spec": {"nodeName": body["target"]["name"]}})
        self.put(key[0], new)
        return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}, status=201)

    async def _watch(self, request: web.Request, collection: str, namespace: str | None) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        since = int(request.query.get("resourceVersion") or 0)
        expire = self.expire_next > 0 and since > 0
        if expire:
            self.expire_next -= 1
        if expire or (since and since < self.compacted_below - 1):
            gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
            await resp.write(json.dumps({"type": "ERROR", "object": gone}).encode() + b"\n")
            return resp
        queue: asyncio.Queue[Obj | None] = asyncio.Queue()
        for rv, coll, type_, obj in self.history:
            if (
                rv > since
                and coll == collection
                and (namespace is None or obj["metadata"].get("namespace") == namespace)
            ):
                queue.put_nowait({"type": type_, "object": obj})
        entry = (collection, namespace, queue)
        self._watchers.append(entry)
        try:
            while (event := await queue.get()) is not None:
                await resp.write(json.dumps(event).encode() + b"\n")
        finally:
            self._watchers.remove(entry)
        return resp


@pytest.fixture
async def mini_api() -> AsyncIterator[MiniApi]:
    """A running MiniApi on 127.0.0.1 (random port)."""
    api = MiniApi()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", api.handle)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    api.server = server
    try:
        yield api
    finally:
        api.close_watches()
        await server.close()


def kube_client_for(url: str, **kwargs: Any) -> KubeClient:
    """A KubeClient on a private Configuration pointing at ``url`` (fast retries for tests)."""
    cfg = k8s.Configuration()
    cfg.host = url
    kwargs.setdefault("retry", RetryPolicy(attempts=4, initial=0.001, maximum=0.01))
    return KubeClient(k8s.ApiClient(configuration=cfg), **kwargs)


@pytest.fixture
async def mini_client(mini_api: MiniApi) -> AsyncIterator[KubeClient]:
    """A KubeClient talking to ``mini_api``."""
    assert mini_api.server is not None
    client = kube_client_for(str(mini_api.server.make_url("")).rstrip("/"))
    try:
        yield client
    finally:
        await client.close()
