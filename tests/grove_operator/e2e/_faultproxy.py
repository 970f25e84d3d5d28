"""A fault-injecting HTTP proxy in front of grove-sim, for tests of what a client does when responses are lost.

Every request is forwarded to the API server and its answer streamed back (watches included). For a seeded
fraction of the requests a rule selects (by default pod creations), the request is forwarded and performed, but
the client gets a 500 `Status` or a dropped connection instead of the answer: the API server did the write and
the client does not know it, as with a lost response in a real cluster. The draws come from one seeded
`random.Random` in request order, so a seed fixes which selected requests fail.

It runs on its own thread and event loop (like `grove_sim.testing.SimCluster`) and writes a kubeconfig pointing at
itself; give that kubeconfig to the program under test and keep using the sim's own for the test's checks.
Temporary: grove-sim will get its own fault injection, and this proxy will then be replaced by it.
"""

from __future__ import annotations

import asyncio
import random
import re
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType

import aiohttp
from aiohttp import web

from grove_sim.server import write_kubeconfig

__all__ = ["FaultProxy", "is_pod_create"]

Selector = Callable[[str, str], bool]
"""(method, path) -> whether the request may be faulted."""

_POD_COLLECTION = re.compile(r"^/api/v1/namespaces/[^/]+/pods$")
_HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade", "proxy-connection", "te")
)
_LOST = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the response was lost (injected by the test's fault proxy)",
    "reason": "InternalError",
    "code": 500,
}


def is_pod_create(method: str, path: str) -> bool:
    """POST to a namespace's pod collection."""
    return method == "POST" and _POD_COLLECTION.match(path) is not None


def _forwardable(headers: object) -> dict[str, str]:
    items = headers.items() if hasattr(headers, "items") else ()
    return {k: v for k, v in items if k.lower() not in _HOP_BY_HOP}


class FaultProxy:
    """Forward to `upstream`; answer a `rate` of the `select`ed requests with a 500 or a dropped connection."""

    def __init__(self, upstream: str, *, rate: float = 0.05, seed: int = 0, select: Selector = is_pod_create) -> None:
        self.upstream = upstream.rstrip("/")
        self.rate = rate
        self.select = select
        self.selected = 0
        self.faults = 0
        self._rng = random.Random(seed)
        self._tmp = tempfile.TemporaryDirectory(prefix="grove-faultproxy-")
        self.kubeconfig = str(Path(self._tmp.name) / "kubeconfig")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    def reseed(self, seed: int) -> None:
        """Start a new draw sequence (thread-safe enough for tests: the proxy reads it on its own loop)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._rng.seed, seed)

    def _draw(self, method: str, path: str) -> str | None:
        """None to answer normally, else the fault: "500" or "drop"."""
        if not self.select(method, path):
            return None
        self.selected += 1
        if self._rng.random() >= self.rate:
            return None
        self.faults += 1
        return "500" if self._rng.random() < 0.5 else "drop"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        body = await request.read()
        fault = self._draw(request.method, request.path)
        async with self._session.request(
            request.method,
            self.upstream + request.path_qs,
            headers=_forwardable(request.headers),
            data=body or None,
            allow_redirects=False,
        ) as upstream:
            if fault == "500":
                await upstream.read()
                return web.json_response(_LOST, status=500)
            if fault == "drop":
                await upstream.read()
                assert request.transport is not None
                request.transport.abort()
                raise asyncio.CancelledError
            response = web.StreamResponse(status=upstream.status, headers=_forwardable(upstream.headers))
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    async def _start(self) -> str:
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        self._session = aiohttp.ClientSession(timeout=timeout, auto_decompress=False)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = int(self._runner.addresses[0][1])
        return f"http://127.0.0.1:{port}"

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def start(self) -> FaultProxy:
        """Listen on a free port of 127.0.0.1 and write the kubeconfig."""
        ready: Future[str] = Future()
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                ready.set_result(loop.run_until_complete(self._start()))
            except BaseException as exc:
                ready.set_exception(exc)
                loop.close()
                return
            loop.run_forever()
            loop.run_until_complete(self._stop())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="fault-proxy", daemon=True)
        self._thread.start()
        write_kubeconfig(self.kubeconfig, ready.result(timeout=30))
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
        self._loop = self._thread = None
        self._tmp.cleanup()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
