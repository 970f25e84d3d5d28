"""The HTTP transport under :class:`grove_runtime.client.KubeClient`: raw JSON over one aiohttp session.

Why not ``ApiClient.call_api``: at 10,000 pods the operator sends tens of thousands of requests, and the generated
client's per-request work cost about six times the request itself: parameter sanitising, header rebuilding, and
(because its session has ``trust_env=True``) a ``.netrc`` read and a proxy-environment lookup in worker threads for
every single request. This transport keeps what matters from kubernetes-asyncio (its connector with the TLS
context and client certificates from the kubeconfig, its ``Configuration`` for the host, default headers and
bearer token, refreshed through ``auth_settings()``) and sends the JSON itself on a session that never consults
the environment per request. The proxy is decided once: the configured one, else the environment's
(``HTTPS_PROXY``/``NO_PROXY``), as the generated client would have chosen for this host.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
from kubernetes_asyncio import client as k8s

__all__ = ["Transport", "encode_body", "environment_proxy"]

READ_BUFSIZE = 2**21
"""Watch lines carry whole objects; etcd allows 1.5 MiB per object (the generated client uses the same size)."""


def encode_body(body: Any) -> bytes | None:
    """Compact JSON bytes for a request body (None: no body)."""
    if body is None:
        return None
    return json.dumps(body, separators=(",", ":")).encode()


def environment_proxy(url: str) -> str | None:
    """The proxy the environment (``*_PROXY``/``NO_PROXY``) names for ``url``, if any."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


class Transport:
    """Sends one request and returns the unread response; the caller reads and releases it."""

    def __init__(self, api_client: k8s.ApiClient) -> None:
        self._api_client = api_client
        self._config: Any = api_client.configuration
        self._session: aiohttp.ClientSession | None = None
        self._extra: dict[str, Any] = {}
        proxy = self._config.proxy or environment_proxy(str(self._config.host))
        if proxy:
            self._extra["proxy"] = proxy
            if self._config.proxy_headers:
                self._extra["proxy_headers"] = self._config.proxy_headers
        if self._config.tls_server_name:
            self._extra["server_hostname"] = self._config.tls_server_name

    def _session_now(self) -> aiohttp.ClientSession:
        """The session, created on first use (inside the running loop) over the generated client's connector."""
        if self._session is None:
            rest: Any = self._api_client.rest_client
            self._session = aiohttp.ClientSession(
                connector=rest.pool_manager.connector,
                connector_owner=False,
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                read_bufsize=READ_BUFSIZE,
            )
        return self._session

    async def _headers(self, content_type: str) -> dict[str, str]:
        headers = dict(self._api_client.default_headers)
        headers["Accept"] = "application/json"
        headers["Content-Type"] = content_type
        for setting in (await self._config.auth_settings()).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        return headers

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] = (),
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: float | aiohttp.ClientTimeout = 30.0,
    ) -> aiohttp.ClientResponse:
        """Send ``method path?query`` with ``body`` as JSON; raises aiohttp's errors, not API errors."""
        url = str(self._config.host) + path
        if query:
            url += "?" + urlencode([(k, str(v)) for k, v in query])
        client_timeout = (
            request_timeout
            if isinstance(request_timeout, aiohttp.ClientTimeout)
            else aiohttp.ClientTimeout(total=request_timeout)
        )
        return await self._session_now().request(
            method,
            url,
            data=encode_body(body),
            headers=await self._headers(content_type),
            timeout=client_timeout,
            **self._extra,
        )

    async def close(self) -> None:
        """Close the session (the connector belongs to the generated client, which closes it)."""
        if self._session is not None:
            await self._session.close()
            self._session = None
