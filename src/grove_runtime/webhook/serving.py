"""The runnable that brings a program's webhooks up: certificate, listener, configurations, then renewals.

Order, as a program needs it: load (or make) the certificate; start the HTTPS listener (its real port is known
only now when port 0 was asked for); create or update the webhook configurations so the API server calls this
listener; report ready; then check the certificate every interval and point the configurations at the new CA when
it changes. A step that fails because the cluster is not ready yet (the namespace of the certificate Secret does
not exist, the API server is briefly unreachable) is logged once and retried with backoff; a listener that cannot
bind is fatal (:class:`~grove_runtime.health.ListenError`), as for the other listeners.

It runs on every replica (``leader_only=False``): each serves webhooks; in url mode the configurations point at
the replica that wrote them last.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import structlog

from grove_runtime import errors
from grove_runtime.client import Client
from grove_runtime.clock import Clock
from grove_runtime.health import Address
from grove_runtime.webhook.certs import CertBundle
from grove_runtime.webhook.certsource import CHECK_INTERVAL, CertificateKeeper, CertificateSource
from grove_runtime.webhook.registration import (
    ClientTarget,
    ConfigurationSpec,
    ensure_configurations,
    remove_configurations,
)
from grove_runtime.webhook.server import WebhookServer

__all__ = ["ServeWebhooks"]

log = structlog.get_logger("grove_runtime.webhook")

T = TypeVar("T")
_RETRYABLE = (errors.ApiError, OSError, ValueError)


class ServeWebhooks:
    """A manager runnable serving ``server`` with certificates from ``source`` and registering ``specs``."""

    name = "webhooks"

    def __init__(
        self,
        client: Client,
        server: WebhookServer,
        source: CertificateSource,
        specs: Sequence[ConfigurationSpec],
        target: Callable[[Address], ClientTarget],
        clock: Clock,
        *,
        interval: float = CHECK_INTERVAL,
        max_backoff: float = 10.0,
        remove: Sequence[ConfigurationSpec] = (),
    ) -> None:
        """``target`` maps the bound address to where the configurations point (a URL, or a Service);
        configurations in ``remove`` are deleted (webhooks no longer served)."""
        self.client = client
        self.server = server
        self.specs = list(specs)
        self.remove = list(remove)
        self.target = target
        self.clock = clock
        self.max_backoff = max_backoff
        self.keeper = CertificateKeeper(source, server, clock, on_change=self._register, interval=interval)
        self.ready = asyncio.Event()
        self._serving = False

    async def _register(self, bundle: CertBundle) -> None:
        if self._serving:
            await remove_configurations(self.client, self.remove)
            await ensure_configurations(self.client, self.specs, self.target(self.server.address), bundle.ca_cert)

    async def _until_done(self, what: str, step: Callable[[], Awaitable[T]]) -> T:
        delay, reported = 0.5, False
        while True:
            try:
                return await step()
            except _RETRYABLE as exc:
                if not reported:
                    log.warning("webhooks not ready, retrying", step=what, error=str(exc))
                    reported = True
                await self.clock.sleep(delay)
                delay = min(delay * 2, self.max_backoff)

    async def run(self) -> None:
        """Serve until cancelled, then stop the listener (configurations stay, as a restart expects)."""
        try:
            bundle = await self._until_done("certificate", self.keeper.refresh)
            await self.server.start()
            self._serving = True
            await self._until_done("registration", lambda: self._register(bundle))
            log.info("webhooks registered", address=str(self.server.address), paths=self.server.paths())
            self.ready.set()
            await self.keeper.run()
        finally:
            self.ready.clear()
            self._serving = False
            await self.server.stop()
