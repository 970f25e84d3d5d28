"""The ``pods/portforward`` subresource over the protocol kubectl 1.32 speaks: SPDY tunneled in a WebSocket.

kubectl (1.31+, ``PortForwardWebsockets`` on by default) opens a WebSocket with the subprotocol
``SPDY/3.1+portforward.k8s.io`` and runs SPDY inside it (``grove_sim.http.spdy``). For every local connection it
opens two streams with the same ``requestid`` and ``port`` headers: an ``error`` stream (the server writes a message
there when forwarding fails) and a ``data`` stream, whose bytes are copied to and from ``podIP:port`` — with
grove-sim's loopback pod IPs, the process a container runs. When the pod side ends, the data stream and then the
error stream are half-closed, which is what kubectl waits for before it closes the local connection. A plain SPDY
upgrade (kubectl's fallback when WebSockets are off) is answered 400.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field

from aiohttp import WSMsgType, web

from grove_sim.http.context import ApiContext, Target
from grove_sim.http.spdy import SpdyError, SpdySession, StreamEvent
from grove_sim.machinery import errors

__all__ = ["PROTOCOL", "port_forward"]

PROTOCOL = "SPDY/3.1+portforward.k8s.io"
_INBOUND_CHUNKS = 64
"""Chunks from kubectl a pod may leave unread before the tunnel stops reading (backpressure, bounded memory)."""
_MAX_MESSAGE = 4 << 20


def _reason(exc: OSError) -> str:
    """Why a connection failed, in Go's words (``connection refused``)."""
    return os.strerror(exc.errno).lower() if exc.errno else str(exc)


@dataclass
class _Request:
    """One forwarded connection: its two streams and the bytes kubectl sent that the pod has not read yet."""

    port: int
    error_id: int = 0
    data_id: int = 0
    inbound: asyncio.Queue[bytes | None] = field(default_factory=lambda: asyncio.Queue(_INBOUND_CHUNKS))
    task: asyncio.Task[None] | None = None


class _Forwarder:
    """Pairs the streams of each request and copies bytes between the data stream and the pod."""

    def __init__(self, session: SpdySession, pod: str, uid: str, ip: str) -> None:
        self._session = session
        self._pod, self._uid, self._ip = pod, uid, ip
        self._requests: dict[str, _Request] = {}
        self._streams: dict[int, str] = {}

    async def handle(self, event: StreamEvent) -> None:
        if event.kind == "opened":
            request_id = event.headers.get("requestid", "")
            port = event.headers.get("port", "")
            request = self._requests.get(request_id)
            if request is None:
                request = self._requests[request_id] = _Request(int(port) if port.isdigit() else 0)
            self._streams[event.stream_id] = request_id
            if event.headers.get("streamtype") == "error":
                request.error_id = event.stream_id
            elif event.headers.get("streamtype") == "data":
                request.data_id = event.stream_id
                request.task = asyncio.get_running_loop().create_task(self._pump(request))
            return
        request = self._requests.get(self._streams.get(event.stream_id, ""))
        if request is None:
            return
        if event.kind == "reset":
            self._end(self._streams.pop(event.stream_id, ""))
        elif event.stream_id == request.data_id:
            if event.data:
                await self._offer(request, event.data)
            if event.fin:
                await self._offer(request, None)

    @staticmethod
    async def _offer(request: _Request, item: bytes | None) -> None:
        """Queue bytes for the pod, waiting while it is behind, unless its connection ended (then they are dropped)."""
        if request.task is None or request.task.done():
            return
        put = asyncio.ensure_future(request.inbound.put(item))
        await asyncio.wait({put, request.task}, return_when=asyncio.FIRST_COMPLETED)
        if not put.done():
            put.cancel()

    def _end(self, request_id: str) -> None:
        request = self._requests.pop(request_id, None)
        if request is not None and request.task is not None:
            request.task.cancel()

    async def close(self) -> None:
        tasks = [r.task for r in self._requests.values() if r.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._requests.clear()

    async def _pump(self, request: _Request) -> None:
        session = self._session
        try:
            reader, writer = await asyncio.open_connection(self._ip, request.port)
        except OSError as exc:
            message = (
                f"error forwarding port {request.port} to pod {self._pod}, uid {self._uid}: "
                f"dial tcp {self._ip}:{request.port}: connect: {_reason(exc)}"
            )
            await session.send_data(request.data_id, b"", fin=True)
            if request.error_id:
                await session.send_data(request.error_id, message.encode(), fin=True)
            return

        async def upstream() -> None:
            while (chunk := await request.inbound.get()) is not None:
                writer.write(chunk)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()

        copier = asyncio.get_running_loop().create_task(upstream())
        try:
            while chunk := await reader.read(65536):
                await session.send_data(request.data_id, chunk)
            await session.send_data(request.data_id, b"", fin=True)
            if request.error_id:
                await session.send_data(request.error_id, b"", fin=True)
        except (OSError, ConnectionError):
            pass
        finally:
            copier.cancel()
            writer.close()


async def port_forward(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """Upgrade to the WebSocket tunnel and forward each requested connection to the running pod."""
    name = target.name or ""
    pod = ctx.core.store.get(("", "pods"), target.ns, name)
    if pod is None:
        raise errors.not_found("", "pods", name)
    ip = str((pod.get("status") or {}).get("podIP") or "")
    if (pod.get("status") or {}).get("phase") != "Running" or not ip:
        raise errors.bad_request(f"pod {name} is not running")
    ws = web.WebSocketResponse(protocols=(PROTOCOL,), compress=False, max_msg_size=_MAX_MESSAGE, autoping=True)
    if not ws.can_prepare(request).ok:
        raise errors.bad_request(f"port-forward needs a WebSocket upgrade with the {PROTOCOL} subprotocol")
    await ws.prepare(request)
    lock = asyncio.Lock()

    async def send(frame: bytes) -> None:
        async with lock:
            await ws.send_bytes(frame)

    session = SpdySession(send)
    forwarder = _Forwarder(session, name, str(pod["metadata"].get("uid", "")), ip)
    try:
        async for message in ws:
            if message.type != WSMsgType.BINARY:
                continue
            events, replies = session.feed(message.data)
            await session.reply(replies)
            for event in events:
                await forwarder.handle(event)
            if session.closed:
                break
    except (SpdyError, ConnectionError):
        pass
    finally:
        await forwarder.close()
        await ws.close()
    return ws
