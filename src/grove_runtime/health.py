"""The health and metrics HTTP listeners (aiohttp): ``/healthz``, ``/readyz`` and ``/metrics``.

Why: kubelet probes and Prometheus scrapes need endpoints that reflect the manager's real state: liveness fails
when a registered check fails, readiness only passes once caches are synced (and extra ready checks pass).

Addresses are given as controller-runtime's ``--health-probe-bind-address`` and ``--metrics-bind-address`` are:
``host:port``, ``:port`` (every interface) or ``0`` (no listener); port 0 binds any free port, logged once bound.
Two endpoints given the same address share one listener. A port that cannot be bound raises :class:`ListenError`,
whose message is the one line a program prints before exiting.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

__all__ = ["Address", "Check", "HealthServer", "ListenError", "parse_bind_address", "plan_listeners"]

Check = Callable[[], bool]

log = structlog.get_logger("grove_runtime.health")


class ListenError(Exception):
    """A listener could not bind its address (in use, not local, not permitted)."""


@dataclass(frozen=True, slots=True)
class Address:
    """A TCP address to listen on; ``host`` "" means every interface, ``port`` 0 any free port."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_bind_address(text: str) -> Address | None:
    """``host:port``, ``[v6]:port`` or ``:port`` as an :class:`Address`; ``0`` is no listener (None).

    Raises ValueError with a message fit for an argparse error.
    """
    text = text.strip()
    if text == "0":
        return None
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"{text!r} is not host:port, :port or 0")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return Address(host, int(port_text))


@dataclass(frozen=True, slots=True)
class _Plan:
    address: Address
    probes: bool
    metrics: bool


def plan_listeners(health: Address | None, metrics: Address | None) -> list[_Plan]:
    """The listeners serving probes at ``health`` and metrics at ``metrics`` (one when both are the same)."""
    if health is not None and health == metrics:
        return [_Plan(health, probes=True, metrics=True)]
    plans = [_Plan(health, probes=True, metrics=False)] if health is not None else []
    if metrics is not None:
        plans.append(_Plan(metrics, probes=False, metrics=True))
    return plans


class HealthServer:
    """Serves probes and/or metrics on ``host:port`` (port 0 picks a free port, see :attr:`port`)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        host: str = "127.0.0.1",
        port: int = 8080,
        probes: bool = True,
        metrics: bool = True,
    ) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self.probes = probes
        self.metrics = metrics
        self.health_checks: dict[str, Check] = {}
        self.ready_checks: dict[str, Check] = {}
        self._runner: web.AppRunner | None = None

    @property
    def serves(self) -> str:
        """What this listener serves, for logs and errors."""
        return "+".join(name for name, on in (("probes", self.probes), ("metrics", self.metrics)) if on)

    def add_health_check(self, name: str, check: Check) -> None:
        """Register a liveness check."""
        self.health_checks[name] = check

    def add_ready_check(self, name: str, check: Check) -> None:
        """Register a readiness check."""
        self.ready_checks[name] = check

    @staticmethod
    def _run_checks(checks: dict[str, Check]) -> web.Response:
        failed = []
        for name, check in checks.items():
            try:
                ok = check()
            except Exception:
                ok = False
            if not ok:
                failed.append(name)
        if failed:
            return web.Response(status=503, text="failed: " + ",".join(sorted(failed)) + "\n")
        return web.Response(text="ok\n")

    async def _healthz(self, _request: web.Request) -> web.Response:
        return self._run_checks(self.health_checks)

    async def _readyz(self, _request: web.Request) -> web.Response:
        return self._run_checks(self.ready_checks)

    async def _metrics(self, _request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self) -> None:
        """Bind and serve; updates :attr:`port` when it was 0. Raises :class:`ListenError` when binding fails."""
        app = web.Application()
        if self.probes:
            app.router.add_get("/healthz", self._healthz)
            app.router.add_get("/readyz", self._readyz)
        if self.metrics:
            app.router.add_get("/metrics", self._metrics)
        # A probe or scrape in flight may take a moment to finish; a stopping program does not wait a minute for it.
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, self.host or None, self.port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise ListenError(f"cannot listen on {Address(self.host, self.port)} for {self.serves}: {reason}") from exc
        self._runner = runner
        if runner.addresses:
            self.port = int(runner.addresses[0][1])
        log.info("listening", serves=self.serves, address=str(Address(self.host, self.port)), port=self.port)

    async def stop(self) -> None:
        """Stop serving."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
