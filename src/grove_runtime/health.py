"""The health and metrics HTTP server (aiohttp): ``/healthz``, ``/readyz`` and ``/metrics``.

Why: kubelet probes and Prometheus scrapes need endpoints that reflect the manager's real state: liveness fails
when a registered check fails, readiness only passes once caches are synced (and extra ready checks pass).
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Check = Callable[[], bool]


class HealthServer:
    """Serves probes and metrics on ``host:port`` (port 0 picks a free port, see :attr:`port`)."""

    def __init__(self, registry: CollectorRegistry, *, host: str = "0.0.0.0", port: int = 8080) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self.health_checks: dict[str, Check] = {}
        self.ready_checks: dict[str, Check] = {}
        self._runner: web.AppRunner | None = None

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
        """Bind and serve; updates :attr:`port` when it was 0."""
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        await site.start()
        self._runner = runner
        if runner.addresses:
            self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Stop serving."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
