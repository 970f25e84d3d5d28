"""``SimCluster``: a simulated cluster in a background thread, for tests of every package.

The server gets its own event loop in a daemon thread, listens on 127.0.0.1 with a free port and writes a
kubeconfig file, so test code (sync or async, on any loop) talks to it over real HTTP exactly like the operator,
the scheduler and kubectl will. ``call`` runs a function on the server loop for white-box checks; ``stop`` is
thread-safe and idempotent.
"""

from __future__ import annotations

import asyncio
import base64
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from grove_sim.machinery import errors
from grove_sim.server import SimOptions, SimServer, write_kubeconfig

__all__ = ["SimCluster", "console_script"]

T = TypeVar("T")


def console_script(name: str) -> str:
    """The console script ``name`` installed beside this interpreter (``.venv/bin/<name>``), for instance the
    command of ``--exec-image grove-initc=<command>``; raises FileNotFoundError when it is not installed."""
    path = Path(sys.executable).parent / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not installed (make venv installs the console scripts)")
    return str(path)


class SimCluster:
    """Run a ``SimServer`` in a thread; use as a context manager or call ``start``/``stop``."""

    def __init__(
        self,
        options: SimOptions | None = None,
        *,
        kubeconfig: str | Path | None = None,
        nodes: list[dict[str, Any]] | None = None,
        exec_images: dict[str, str] | None = None,
        ready_delay: float | None = None,
    ) -> None:
        self.options = options or SimOptions()
        if nodes is not None:
            self.options.nodes = nodes
        if exec_images is not None:
            self.options.exec_images = exec_images
        if ready_delay is not None:
            self.options.ready_delay = ready_delay
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if kubeconfig is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="grove-sim-")
            kubeconfig = Path(self._tmp.name) / "kubeconfig"
        self.kubeconfig = str(kubeconfig)
        self.url = ""
        self.server: SimServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> SimCluster:
        """Start the server and wait until it listens and the kubeconfig is written."""
        ready: Future[str] = Future()
        self._loop = asyncio.new_event_loop()
        loop = self._loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                self.server = SimServer(self.options)
                url = loop.run_until_complete(self.server.start())
            except BaseException as exc:
                ready.set_exception(exc)
                loop.close()
                return
            ready.set_result(url)
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="grove-sim", daemon=True)
        self._thread.start()
        self.url = ready.result(timeout=30)
        assert self.server is not None
        write_kubeconfig(self.kubeconfig, self.url, ca_data=self.server.ca_pem)
        return self

    def call(self, fn: Callable[[SimServer], T], timeout: float = 30) -> T:
        """Run ``fn(server)`` on the server loop and return its result (thread-safe)."""
        if self._loop is None or self.server is None:
            raise RuntimeError("SimCluster is not running")
        server = self.server

        async def invoke() -> T:
            return fn(server)

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop).result(timeout)

    def service_account_kubeconfig(self, namespace: str, name: str, path: str | Path | None = None) -> str:
        """A kubeconfig carrying the token of ServiceAccount ``namespace``/``name`` (namespace, account and token
        Secret ``NAME-token`` are created if missing), so a program talks to the cluster as that account."""

        def ensure(server: SimServer) -> str | None:
            core = server.core
            for plural, ns, body in (
                ("namespaces", "", {"metadata": {"name": namespace}}),
                ("serviceaccounts", namespace, {"metadata": {"name": name}}),
                (
                    "secrets",
                    namespace,
                    {
                        "metadata": {
                            "name": f"{name}-token",
                            "annotations": {"kubernetes.io/service-account.name": name},
                        },
                        "type": "kubernetes.io/service-account-token",
                    },
                ),
            ):
                info = core.registry.get("", "v1", plural)
                assert info is not None
                try:
                    core.create(info, ns, body)
                except errors.ApiError as exc:
                    if exc.code != 409:
                        raise
            secret = core.store.get(("", "secrets"), namespace, f"{name}-token")
            token = ((secret or {}).get("data") or {}).get("token")
            return base64.b64decode(token).decode() if token else None

        deadline = time.monotonic() + 30
        while (token := self.call(ensure)) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no token for service account {namespace}/{name}")
            time.sleep(0.01)
        target = Path(path) if path is not None else Path(self.kubeconfig).with_name(f"{namespace}-{name}.kubeconfig")
        write_kubeconfig(target, self.url, token=token, ca_data=self.server.ca_pem if self.server else None)
        return str(target)

    def stop(self) -> None:
        """Stop the server and join its thread (safe to call twice, from any thread)."""
        with self._lock:
            loop, thread, server = self._loop, self._thread, self.server
            self._loop = self._thread = None
        if loop is not None and server is not None and thread is not None:
            asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> SimCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
