"""The server side of SPDY/3.1 framing, as much as Kubernetes' streaming protocols use (``portforward.k8s.io``).

kubectl 1.31+ tunnels SPDY inside a WebSocket (KEP-4006; subprotocol ``SPDY/3.1+portforward.k8s.io``): every
binary message carries SPDY bytes, which ``SpdySession.feed`` splits into frames. Clients open streams with
SYN_STREAM (headers zlib-compressed with the SPDY/3 dictionary, one compression context per direction), the server
answers each with SYN_REPLY, DATA frames carry bytes (FIN half-closes), PING is echoed, RST_STREAM and GOAWAY end
streams and the session. Flow-control frames (WINDOW_UPDATE, SETTINGS) are accepted and ignored, as Go's
``spdystream`` does.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["SPDY_DICTIONARY", "SpdyError", "SpdySession", "StreamEvent"]

_NAMES = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location", "content-md5",
    "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host", "if-match",
    "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
    "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer", "retry-after",
    "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning",
    "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie",
    "keep-alive", "origin",
)  # fmt: skip
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
SPDY_DICTIONARY = b"".join(len(n).to_bytes(4, "big") + n.encode() for n in _NAMES) + _TAIL.encode()
"""The SPDY/3 header-compression dictionary (its adler32 is 0xe3c6a7c2, the DICTID every SPDY/3 peer expects)."""

_VERSION = 3
_SYN_STREAM, _SYN_REPLY, _RST_STREAM, _PING, _GOAWAY = 1, 2, 3, 6, 7
FLAG_FIN = 0x01
_MAX_DATA = 1 << 16


class SpdyError(Exception):
    """The peer sent something this session cannot parse; the connection is dropped."""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """What happened on a stream: ``opened`` (with headers), ``data`` (maybe with ``fin``), or ``reset``."""

    kind: str
    stream_id: int
    headers: dict[str, str]
    data: bytes = b""
    fin: bool = False


Send = Callable[[bytes], Awaitable[None]]


class SpdySession:
    """One SPDY connection's server side: parses what the client sends and frames what the server answers."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=SPDY_DICTIONARY)
        self._deflate = zlib.compressobj(zdict=SPDY_DICTIONARY)
        self.closed = False

    def feed(self, data: bytes) -> tuple[list[StreamEvent], list[bytes]]:
        """Parse ``data``: the stream events and the frames to answer at once (SYN_REPLY, PING echoes)."""
        self._buffer.extend(data)
        events: list[StreamEvent] = []
        replies: list[bytes] = []
        while len(self._buffer) >= 8:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < 8 + length:
                break
            head = bytes(self._buffer[:8])
            payload = bytes(self._buffer[8 : 8 + length])
            del self._buffer[: 8 + length]
            flags = head[4]
            if head[0] & 0x80:
                self._control(struct.unpack(">H", head[2:4])[0], flags, payload, events, replies)
            else:
                stream_id = struct.unpack(">I", head[:4])[0] & 0x7FFFFFFF
                events.append(StreamEvent("data", stream_id, {}, payload, bool(flags & FLAG_FIN)))
        return events, replies

    def _control(self, kind: int, flags: int, payload: bytes, events: list[StreamEvent], replies: list[bytes]) -> None:
        if kind == _SYN_STREAM:
            if len(payload) < 10:
                raise SpdyError("short SYN_STREAM")
            stream_id = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF
            headers = self._headers(payload[10:])
            replies.append(self._frame(_SYN_REPLY, 0, struct.pack(">I", stream_id) + self._header_block({})))
            events.append(StreamEvent("opened", stream_id, headers, fin=bool(flags & FLAG_FIN)))
        elif kind == _RST_STREAM and len(payload) >= 4:
            events.append(StreamEvent("reset", struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF, {}))
        elif kind == _PING:
            replies.append(self._frame(_PING, 0, payload))
        elif kind == _GOAWAY:
            self.closed = True

    def _headers(self, block: bytes) -> dict[str, str]:
        try:
            raw = self._inflate.decompress(block)
        except zlib.error as exc:
            raise SpdyError(f"bad header block: {exc}") from None
        headers: dict[str, str] = {}
        try:
            (count,) = struct.unpack_from(">I", raw, 0)
            offset = 4
            for _ in range(count):
                (size,) = struct.unpack_from(">I", raw, offset)
                name = raw[offset + 4 : offset + 4 + size].decode()
                offset += 4 + size
                (size,) = struct.unpack_from(">I", raw, offset)
                value = raw[offset + 4 : offset + 4 + size].decode()
                offset += 4 + size
                headers[name.lower()] = value.split("\x00")[0]
        except (struct.error, UnicodeDecodeError) as exc:
            raise SpdyError(f"bad header block: {exc}") from None
        return headers

    def _header_block(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers))
        for name, value in headers.items():
            raw += struct.pack(">I", len(name)) + name.encode() + struct.pack(">I", len(value)) + value.encode()
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    @staticmethod
    def _frame(kind: int, flags: int, payload: bytes) -> bytes:
        return struct.pack(">HHI", 0x8000 | _VERSION, kind, (flags << 24) | len(payload)) + payload

    async def send_data(self, stream_id: int, data: bytes, *, fin: bool = False) -> None:
        """DATA frames on ``stream_id`` (split at 64 KiB); ``fin`` half-closes the stream after them."""
        chunks = [data[i : i + _MAX_DATA] for i in range(0, len(data), _MAX_DATA)] or [b""]
        for i, chunk in enumerate(chunks):
            flags = FLAG_FIN if fin and i == len(chunks) - 1 else 0
            if chunk or flags:
                await self._send(struct.pack(">II", stream_id, (flags << 24) | len(chunk)) + chunk)

    async def reply(self, frames: list[bytes]) -> None:
        """Send frames ``feed`` prepared."""
        for frame in frames:
            await self._send(frame)
