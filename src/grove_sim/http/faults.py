"""Fault injection for reliability tests: errors, latency, dropped and expired watches, a paused server.

Off by default and then free: the handler chain asks ``FaultInjector.active`` (one attribute) and serves the request
as usual. When a ``FaultConfig`` is in force (``grove-sim up --faults``, or ``PUT /sim/faults`` at run time by a
member of ``system:masters``), every API request passes ``around`` first: a paused server holds it until resumed;
then, if a rule's scope matches the request, added latency, an error Status instead of the answer (500, 503, 429
with ``Retry-After``, 409, worded as kube-apiserver's), a re-watch (a watch from a resourceVersion) answered with
kube-apiserver's in-stream 410 Expired, or a watch whose connection is cut after a while.

Deterministic: each rule draws from its own random stream seeded from the configuration's seed, and draws only for
requests in its scope, so the n-th matching request's fate depends only on the seed and n. Every injected fault is
counted in ``grove_sim_injected_faults_total{kind,verb,resource}`` on the sim's ``/metrics``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from grove_sim.http.context import json_response
from grove_sim.http.dispatch import request_verb
from grove_sim.http.fault_config import ErrorRule, FaultConfig, parse_faults
from grove_sim.http.requestinfo import parse_path, read_body
from grove_sim.machinery import errors
from grove_sim.storage.store import Store, dumps

__all__ = ["FaultInjector"]

_NEVER_FAULTED = ("/sim/", "/metrics")
_log = logging.getLogger(__name__)


def _error(rule: ErrorRule, group: str, plural: str, name: str) -> web.Response:
    if rule.code == 429:
        body = errors.status_body(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
            {"retryAfterSeconds": rule.retry_after},
        )
        response = json_response(body, 429)
        response.headers["Retry-After"] = str(rule.retry_after)
        return response
    if rule.code == 409:
        return json_response(errors.conflict(group, plural, name).status(), 409)
    if rule.code == 503:
        return json_response(
            errors.status_body(503, "ServiceUnavailable", "the server is currently unable to handle the request"), 503
        )
    return json_response(errors.internal_error("injected fault").status(), 500)


class FaultInjector:
    """The faults in force and their counters (see the module doc)."""

    def __init__(self, store: Store, config: FaultConfig | None = None) -> None:
        self._store = store
        self.registry = CollectorRegistry()
        self._injected = Counter(
            "grove_sim_injected_faults",
            "Faults grove-sim injected, by kind (error_<code>, latency, watch_drop, watch_expired, paused), verb "
            "and resource",
            ["kind", "verb", "resource"],
            registry=self.registry,
        )
        self._paused = Gauge("grove_sim_paused", "1 while fault injection holds every request", registry=self.registry)
        self._resumed = asyncio.Event()
        self.config = FaultConfig()
        self.active = False
        self._error_rules: list[tuple[ErrorRule, random.Random]] = []
        self._latency_rng = self._drop_rng = self._expire_rng = random.Random()
        self.configure(config or FaultConfig())

    def configure(self, config: FaultConfig) -> None:
        """Put ``config`` in force (fresh random streams from its seed); resuming releases held requests."""
        was_active = self.active
        self.config = config
        self.active = config.active
        seed = config.seed
        self._error_rules = [(rule, random.Random(f"{seed}:error:{i}")) for i, rule in enumerate(config.errors)]
        self._latency_rng = random.Random(f"{seed}:latency")
        self._drop_rng = random.Random(f"{seed}:drop")
        self._expire_rng = random.Random(f"{seed}:expire")
        self._paused.set(1 if config.paused else 0)
        if config.paused:
            self._resumed.clear()
        else:
            self._resumed.set()
        if config.active:
            _log.warning("fault injection in force: %s", json.dumps(config.to_dict(), sort_keys=True))
        elif was_active:
            _log.warning("fault injection off")

    def count(self, kind: str, verb: str, resource: str) -> None:
        """Count one injected fault."""
        self._injected.labels(kind=kind, verb=verb, resource=resource).inc()

    def metrics(self) -> web.Response:
        """The Prometheus exposition of the counters."""
        response = web.Response(body=generate_latest(self.registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    async def around(
        self, request: web.Request, serve: Callable[[], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Serve ``request`` through the faults in force."""
        if request.path.startswith(_NEVER_FAULTED):
            return await serve()
        ri = parse_path(request.path)
        try:
            verb = request_verb(request.method, ri is None or ri.name is None, request) if ri else ""
        except errors.ApiError:
            return await serve()
        resource = "" if ri is None else f"{ri.plural}/{ri.subresource}" if ri.subresource else ri.plural
        config = self.config
        if config.paused:
            self.count("paused", verb, resource)
            await self._resumed.wait()
            config = self.config
        if ri is None or not ri.plural:
            return await serve()
        latency = config.latency
        in_scope = latency is not None and latency.scope.matches(verb, ri.group, resource)
        if latency is not None and in_scope and self._latency_rng.random() < latency.rate:
            self.count("latency", verb, resource)
            await asyncio.sleep(latency.seconds)
        for rule, rng in self._error_rules:
            if rule.scope.matches(verb, ri.group, resource) and rng.random() < rule.rate:
                self.count(f"error_{rule.code}", verb, resource)
                return _error(rule, ri.group, ri.plural, ri.name or "")
        if verb != "watch":
            return await serve()
        since = request.query.get("resourceVersion", "")
        rewatch = since not in ("", "0") and config.expire_rewatch_rate > 0
        if rewatch and self._expire_rng.random() < config.expire_rewatch_rate:
            self.count("watch_expired", verb, resource)
            return await self._expired(request, since)
        if config.drop_watch_rate and self._drop_rng.random() < config.drop_watch_rate:
            delay = self._drop_rng.uniform(0.0, config.drop_watch_after)
            return await self._dropped_after(request, delay, resource, serve)
        return await serve()

    async def _expired(self, request: web.Request, since: str) -> web.StreamResponse:
        """kube-apiserver's answer to a watch from a compacted resourceVersion: 200, then one ERROR event."""
        body = errors.status_body(410, "Expired", f"too old resource version: {since} ({self._store.rv})")
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(b'{"type":"ERROR","object":' + dumps(body) + b"}\n")
        await response.write_eof()
        return response

    async def _dropped_after(
        self, request: web.Request, delay: float, resource: str, serve: Callable[[], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Serve a watch, but cut its connection after ``delay`` seconds (as a lost network or a restarted
        apiserver would): the transport is aborted and the stream's handler cancelled, which unsubscribes it."""
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()

        def drop() -> None:
            self.count("watch_drop", "watch", resource)
            transport = request.transport
            if transport is not None:
                transport.abort()
            if task is not None:
                task.cancel()

        handle = loop.call_later(delay, drop)
        try:
            return await serve()
        finally:
            handle.cancel()

    async def endpoint(self, request: web.Request) -> web.Response:
        """``/sim/faults``: GET the configuration, PUT (or POST) a new one, DELETE to inject nothing."""
        if request.method in ("PUT", "POST"):
            try:
                self.configure(parse_faults(await read_body(request)))
            except ValueError as exc:
                raise errors.bad_request(f"invalid fault configuration: {exc}") from exc
        elif request.method == "DELETE":
            self.configure(FaultConfig())
        elif request.method != "GET":
            raise errors.method_not_allowed(request.method, "/sim/faults")
        answer: dict[str, Any] = self.config.to_dict()
        return json_response(answer)
