"""The HTTPS client admission webhooks are called with (``grove_sim.registry.webhooks.WebhookTransport``).

One aiohttp session per server keeps connections to each webhook alive between writes, so a write pays for a TLS
handshake only when a connection is new. Certificates are verified against the configuration's ``caBundle`` for the
name kube-apiserver would use (``NAME.NAMESPACE.svc`` for a service reference, the URL's host otherwise). Failures
are reported in the words of Go's HTTP client, which kube-apiserver quotes (``dial tcp 127.0.0.1:9443: connect:
connection refused``, ``tls: failed to verify certificate: x509: ...``).
"""

from __future__ import annotations

import errno
import ssl

import aiohttp

from grove_sim.registry.webhooks import Endpoint, WebhookCallError

__all__ = ["AiohttpWebhookTransport"]


def _go_reason(endpoint: Endpoint, exc: BaseException) -> str:
    address = f"[{endpoint.host}]:{endpoint.port}" if ":" in endpoint.host else f"{endpoint.host}:{endpoint.port}"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cert_error = exc.certificate_error
        detail = getattr(cert_error, "verify_message", None) or str(cert_error)
        return f"tls: failed to verify certificate: x509: {detail}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        if isinstance(os_error, ssl.SSLError):
            return f"remote error: tls: {os_error.reason or os_error}"
        if os_error.errno == errno.ECONNREFUSED:
            return f"dial tcp {address}: connect: connection refused"
        return f"dial tcp {address}: {os_error.strerror or os_error}"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"the server responded with the status code {exc.status} but did not return more information"
    return str(exc) or type(exc).__name__


class AiohttpWebhookTransport:
    """Posts reviews with a shared session; ``close`` when the server stops."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes | None, ssl.SSLContext] = {}

    def _context(self, ca_bundle: bytes | None) -> ssl.SSLContext:
        context = self._contexts.get(ca_bundle)
        if context is None:
            try:
                context = (
                    ssl.create_default_context(cadata=ca_bundle.decode()) if ca_bundle else ssl.create_default_context()
                )
            except (ssl.SSLError, ValueError, UnicodeDecodeError) as exc:
                raise WebhookCallError(f"invalid caBundle: {exc}") from exc
            self._contexts[ca_bundle] = context
        return context

    async def post(self, endpoint: Endpoint, body: bytes) -> bytes:
        """POST ``body`` to the endpoint; the body of its 200 answer."""
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), trust_env=False)
        host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
        url = f"https://{host}:{endpoint.port}{endpoint.path}"
        try:
            async with self._session.post(
                url,
                data=body,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                ssl=self._context(endpoint.ca_bundle),
                server_hostname=endpoint.server_name,
                raise_for_status=True,
            ) as response:
                return await response.read()
        except aiohttp.ClientError as exc:
            raise WebhookCallError(_go_reason(endpoint, exc)) from exc

    async def close(self) -> None:
        """Close pooled connections."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()
