"""The API client: one narrow ``Client`` Protocol for any resource type, implemented over kubernetes-asyncio's
configuration and connection pool.

Why a layer of our own: kubernetes-asyncio has no retries (``Configuration.retries`` is unused), picks surprising
patch content types (json-patch for dict bodies on custom objects, strategic merge for built-ins), and both its
generated models and its ``call_api`` path cost far more CPU than the requests themselves at 10,000 pods. So every
request, binding included, goes out as raw JSON through :class:`grove_runtime._transport.Transport` (the
kubeconfig's host, TLS and bearer token; no per-request environment lookups); bodies come back as plain dicts;
failures are mapped to :mod:`grove_runtime.errors`; 429 (honouring Retry-After), 5xx and lost connections are
retried with tenacity. Watches stream raw JSON lines.

:meth:`KubeClient.from_kubeconfig_light` builds the same client over
:class:`~grove_runtime._transport.LightTransport`, which never imports kubernetes-asyncio (token and certificate
credentials only), for programs that start often and live briefly.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import aiohttp
import structlog

from grove_runtime import errors
from grove_runtime._transport import LightTransport, Transport
from grove_runtime._wire import RetryPolicy, read_json, retry_delay, retrying, watch_events
from grove_runtime.client_api import Client, PatchType
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.kubeconfig import load_configuration, load_connection
from grove_runtime.resources import PODS, ResourceType

if TYPE_CHECKING:
    from kubernetes_asyncio import client as k8s

Obj = dict[str, Any]

log = structlog.get_logger("grove_runtime.client")


class KubeClient:
    """The kubernetes-asyncio implementation of :class:`Client` (owns its ``ApiClient``; close it)."""

    def __init__(
        self,
        api_client: k8s.ApiClient | None,
        *,
        transport: LightTransport | None = None,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
        request_timeout: float = 30.0,
    ) -> None:
        self.api_client = api_client
        self._write_fence: Callable[[], bool] | None = None
        self._retry = retry or RetryPolicy()
        self._clock = clock or LoopClock()
        self._timeout = request_timeout
        if transport is None:
            if api_client is None:
                raise ValueError("KubeClient needs an ApiClient or a transport")
            self._transport: Transport | LightTransport = Transport(api_client)
        else:
            self._transport = transport

    def fenced_writes(self, fence: Callable[[], bool]) -> KubeClient:
        """A view of this client (same connection) whose every write attempt, retries included, is sent only while
        `fence()` says yes, else raises `errors.Fenced`; reads are not fenced. For a leader's controllers: a leader
        frozen past its lease (a paused VM, SIGSTOP) must not land the write it was about to send once it resumes,
        after its successor has acted (the chaos suite saw such a late status write revert a PodClique's status).
        Close the original, not the view."""
        view = copy.copy(self)
        view._write_fence = fence
        return view

    @classmethod
    async def from_kubeconfig(cls, path: str | None = None, *, context: str | None = None, **kwargs: Any) -> KubeClient:
        """Build from ``path``, else from the first of ``$KUBECONFIG``, the in-cluster service account and
        ``~/.kube/config`` (kubectl's order); raises :class:`~grove_runtime.kubeconfig.KubeconfigError`."""
        from kubernetes_asyncio import client as k8s

        cfg, source = await load_configuration(path, context=context)
        log.info("kubernetes configuration", source=source.kind, path=str(source.path), server=cfg.host)
        return cls(k8s.ApiClient(configuration=cfg), **kwargs)

    @classmethod
    def from_kubeconfig_light(
        cls, path: str | None = None, *, context: str | None = None, user_agent: str | None = None, **kwargs: Any
    ) -> KubeClient:
        """Like :meth:`from_kubeconfig`, over :class:`LightTransport`: kubernetes-asyncio is never imported."""
        connection = load_connection(path, context=context)
        return cls(None, transport=LightTransport(connection, user_agent=user_agent), **kwargs)

    async def close(self) -> None:
        """Close the HTTP session and the connection pool."""
        await self._transport.close()
        if self.api_client is not None:
            await self.api_client.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _request_once(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] = (),
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: Any = None,
    ) -> aiohttp.ClientResponse:
        try:
            return await self._transport.send(
                method,
                path,
                query=query,
                body=body,
                content_type=content_type,
                request_timeout=request_timeout if request_timeout is not None else self._timeout,
            )
        except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise errors.ConnectionLost(f"{method} {path}: {exc!r}") from exc

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] = (),
        body: Any = None,
        content_type: str = "application/json",
        fence: Callable[[], bool] | None = None,
    ) -> Obj:
        """One API call with retries on 429/5xx/connection loss; returns the parsed JSON body. With ``fence``,
        each attempt is sent only while it returns True (a retry waits a backoff, during which a leader may lose
        its lease: checking once before the first attempt would let a deposed leader's retry through)."""
        if fence is None and method != "GET":
            fence = self._write_fence
        attempt_once = partial(self._attempt, method, path, query, body, content_type, fence)
        # The first attempt runs bare: nearly every call succeeds at once, and setting up tenacity's retry state cost
        # about a tenth of the scheduler's CPU per call. Only a retryable failure starts the retry loop.
        try:
            return await attempt_once()
        except Exception as exc:
            if self._retry.attempts <= 1 or not errors.is_retryable(exc):
                raise
            await self._clock.sleep(retry_delay(self._retry, 1, exc))
        async for attempt in retrying(self._retry, self._clock, failed_before=1):
            with attempt:
                return await attempt_once()
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    async def _attempt(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, Any]],
        body: Any,
        content_type: str,
        fence: Callable[[], bool] | None,
    ) -> Obj:
        """One attempt of `request`: checked against the fence, sent, read and released."""
        if fence is not None and not fence():
            raise errors.Fenced(f"{method} {path}: not sent, this process no longer leads")
        resp = await self._request_once(method, path, query=query, body=body, content_type=content_type)
        try:
            return await read_json(resp)
        except aiohttp.ClientPayloadError as exc:
            raise errors.ConnectionLost(f"{method} {path}: {exc!r}") from exc
        finally:
            resp.release()

    async def get(self, rt: ResourceType, name: str, namespace: str = "", *, subresource: str | None = None) -> Obj:
        """GET one object or subresource."""
        return await self.request("GET", rt.object_path(namespace, name, subresource))

    async def list_page(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> Obj:
        """LIST one page (raw List dict)."""
        query: list[tuple[str, Any]] = []
        for key, value in (
            ("labelSelector", label_selector),
            ("fieldSelector", field_selector),
            ("limit", limit),
            ("continue", continue_token),
            ("resourceVersion", resource_version),
        ):
            if value:
                query.append((key, value))
        return await self.request("GET", rt.collection_path(namespace), query=query)

    async def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        transform: Callable[[Obj], Obj | None] | None = None,
    ) -> Obj:
        """LIST every page, following ``continue``; the result's resourceVersion is the first page's. With
        ``transform``, each item is replaced by its result (None drops it) as its page arrives, so a large list is
        never held whole in its full form."""
        items: list[Obj] = []
        token: str | None = None
        first_rv: str | None = None
        while True:
            page = await self.list_page(
                rt, namespace, label_selector=label_selector, field_selector=field_selector, limit=limit,
                continue_token=token,
            )  # fmt: skip
            meta = page.get("metadata") or {}
            if first_rv is None:
                first_rv = str(meta.get("resourceVersion") or "")
            found = (i for i in page.get("items") or () if isinstance(i, dict))
            if transform is None:
                items.extend(found)
            else:
                items.extend(kept for i in found if (kept := transform(i)) is not None)
            token = meta.get("continue") or None
            if not token:
                return {"items": items, "metadata": {"resourceVersion": first_rv}}

    async def create(self, rt: ResourceType, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        """POST ``obj`` into its (or the given) namespace."""
        ns = namespace if namespace is not None else str((obj.get("metadata") or {}).get("namespace") or "")
        return await self.request("POST", rt.collection_path(ns or None), body=dict(obj))

    async def update(self, rt: ResourceType, obj: Mapping[str, Any], *, subresource: str | None = None) -> Obj:
        """PUT ``obj`` (or its ``status``/``scale`` subresource)."""
        meta = obj.get("metadata") or {}
        path = rt.object_path(str(meta.get("namespace") or ""), str(meta["name"]), subresource)
        return await self.request("PUT", path, body=dict(obj))

    async def update_status(self, rt: ResourceType, obj: Mapping[str, Any]) -> Obj:
        """PUT through the status subresource."""
        return await self.update(rt, obj, subresource="status")

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
        """PATCH with an explicit content type (merge patch unless told otherwise)."""
        query: list[tuple[str, Any]] = []
        if field_manager:
            query.append(("fieldManager", field_manager))
        if force is not None:
            query.append(("force", "true" if force else "false"))
        payload: Any = dict(body) if isinstance(body, Mapping) else [dict(op) for op in body]
        path = rt.object_path(namespace, name, subresource)
        return await self.request("PATCH", path, query=query, body=payload, content_type=patch_type.value)

    async def patch_status(
        self,
        rt: ResourceType,
        name: str,
        body: Mapping[str, Any],
        namespace: str = "",
        *,
        patch_type: PatchType = PatchType.MERGE,
    ) -> Obj:
        """PATCH the status subresource."""
        return await self.patch(rt, name, body, namespace, patch_type=patch_type, subresource="status")

    async def apply(self, rt: ResourceType, obj: Mapping[str, Any], *, field_manager: str, force: bool = True) -> Obj:
        """Server-side apply ``obj`` (create or update) as ``field_manager``."""
        meta = obj.get("metadata") or {}
        return await self.patch(
            rt, str(meta["name"]), obj, str(meta.get("namespace") or ""), patch_type=PatchType.APPLY,
            field_manager=field_manager, force=force,
        )  # fmt: skip

    async def scale(self, rt: ResourceType, name: str, namespace: str, replicas: int) -> Obj:
        """Set ``spec.replicas`` through the scale subresource."""
        return await self.patch(rt, name, {"spec": {"replicas": replicas}}, namespace, subresource="scale")

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
        """DELETE with optional propagation policy, grace period and uid/resourceVersion preconditions."""
        body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            body["preconditions"] = dict(preconditions)
        return await self.request("DELETE", rt.object_path(namespace, name), body=body)

    async def bind(
        self, namespace: str, pod: str, node: str, *, uid: str | None = None, fence: Callable[[], bool] | None = None
    ) -> None:
        """POST ``pods/{pod}/binding``; raises ``Conflict`` if already bound, ``NotFound`` if gone, ``Fenced`` when
        ``fence`` says no before an attempt."""
        meta: Obj = {"name": pod, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        await self.request("POST", PODS.object_path(namespace, pod, "binding"), body=body, fence=fence)

    @contextlib.asynccontextmanager
    async def watch(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[AsyncIterator[Obj]]:
        """Open a raw-JSON watch (bookmarks on); the response is released when the context exits."""
        query: list[tuple[str, Any]] = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout_seconds),
        ]
        for key, value in (
            ("resourceVersion", resource_version),
            ("labelSelector", label_selector),
            ("fieldSelector", field_selector),
        ):
            if value:
                query.append((key, value))
        timeout = aiohttp.ClientTimeout(total=None, connect=self._timeout, sock_read=timeout_seconds + 30)
        resp = await self._request_once("GET", rt.collection_path(namespace), query=query, request_timeout=timeout)
        try:
            if resp.status != 200:
                await read_json(resp)
            yield watch_events(resp)
        finally:
            resp.release()


__all__ = ["Client", "KubeClient", "PatchType", "RetryPolicy"]
