"""The webhook HTTPS server: routes AdmissionReviews by path to handlers (controller-runtime's webhook server).

TLS uses one ``ssl.SSLContext`` for the life of the server; :meth:`WebhookServer.load_certificate` loads a new
serving certificate into it, so a renewed certificate is used for the next handshake without restarting the
listener. Bodies that are not AdmissionReviews get a 400; a handler's failure becomes a 500 refusal inside a valid
review (``handlers.safe_handle``), so the API server applies the webhook's ``failurePolicy`` only when the server is
unreachable. Port 0 binds any free port (see :attr:`port`), logged once bound like the other listeners.

Metrics, under the program's prefix: ``<prefix>_webhook_requests_total{webhook,allowed}``,
``<prefix>_webhook_request_duration_seconds{webhook}`` and ``<prefix>_webhook_requests_in_flight{webhook}``.
"""

from __future__ import annotations

import json
import os
import ssl
import tempfile
import time
from pathlib import Path

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from grove_runtime.health import Address, ListenError
from grove_runtime.webhook.handlers import Handler, safe_handle
from grove_runtime.webhook.review import AdmissionRequest, ReviewError, review_response

__all__ = ["WebhookServer"]

log = structlog.get_logger("grove_runtime.webhook")

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class _Metrics:
    def __init__(self, prefix: str, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            f"{prefix}_webhook_requests_total", "Admission reviews answered.", ["webhook", "allowed"], registry=registry
        )
        self.duration = Histogram(
            f"{prefix}_webhook_request_duration_seconds",
            "Time to answer one admission review.",
            ["webhook"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            f"{prefix}_webhook_requests_in_flight", "Reviews being answered.", ["webhook"], registry=registry
        )


class WebhookServer:
    """Serves registered handlers over HTTPS on ``host:port`` (port 0: any free port)."""

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 9443, prefix: str, registry: CollectorRegistry | None = None
    ) -> None:
        self.host = host
        self.port = port
        self._handlers: dict[str, tuple[str, Handler]] = {}
        self._metrics = _Metrics(prefix, registry if registry is not None else CollectorRegistry())
        self._ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._ssl.minimum_version = ssl.TLSVersion.TLSv1_2
        self._runner: web.AppRunner | None = None
        self._has_certificate = False

    @property
    def address(self) -> Address:
        """Where the server listens (the real port once started)."""
        return Address(self.host, self.port)

    def register(self, path: str, name: str, handler: Handler) -> None:
        """Serve ``handler`` (reported as ``name`` in logs and metrics) at ``path``."""
        self._handlers[path] = (name, handler)

    def paths(self) -> list[str]:
        """The registered paths."""
        return list(self._handlers)

    def load_certificate(self, cert_pem: bytes, key_pem: bytes) -> None:
        """Serve with this certificate (chain) and key from the next handshake on."""
        with tempfile.TemporaryDirectory(prefix="grove-webhook-") as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(cert_pem)
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(key_pem)
            self._ssl.load_cert_chain(cert, key)
        self._has_certificate = True

    async def _serve(self, request: web.Request) -> web.Response:
        entry = self._handlers.get(request.path)
        if entry is None:
            return web.Response(status=404, text="no webhook at this path\n")
        name, handler = entry
        try:
            review = AdmissionRequest.from_review(json.loads(await request.read()))
        except (ValueError, ReviewError) as exc:
            return web.Response(status=400, text=f"{exc}\n")
        metrics = self._metrics
        metrics.in_flight.labels(webhook=name).inc()
        started = time.perf_counter()
        try:
            response = await safe_handle(name, handler, review)
        finally:
            metrics.in_flight.labels(webhook=name).dec()
            metrics.duration.labels(webhook=name).observe(time.perf_counter() - started)
        metrics.requests.labels(webhook=name, allowed=str(response.allowed).lower()).inc()
        if not response.allowed:
            log.info(
                "admission refused",
                webhook=name,
                operation=review.operation,
                namespace=review.namespace,
                name=review.name,
                user=review.username,
                message=(response.status or {}).get("message"),
            )
        body = json.dumps(review_response(review.uid, response)).encode()
        return web.Response(body=body, content_type="application/json")

    async def start(self) -> None:
        """Bind and serve (a certificate must be loaded); raises :class:`ListenError` when binding fails."""
        if not self._has_certificate:
            raise RuntimeError("load a certificate before starting the webhook server")
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_post("/{tail:.*}", self._serve)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, self.host or None, self.port, ssl_context=self._ssl)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise ListenError(f"cannot listen on {self.address} for webhooks: {reason}") from exc
        self._runner = runner
        if runner.addresses:
            self.port = int(runner.addresses[0][1])
        log.info("listening", serves="webhooks", address=str(self.address), port=self.port)

    async def stop(self) -> None:
        """Stop serving."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
