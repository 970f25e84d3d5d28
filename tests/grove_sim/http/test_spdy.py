"""SPDY/3.1 framing as kubectl's port-forward client speaks it: SYN_STREAM headers compressed with the SPDY/3
dictionary across frames, SYN_REPLY for each stream, PING echoed, DATA with FIN."""

from __future__ import annotations

import struct
import zlib

from grove_sim.http.spdy import FLAG_FIN, SPDY_DICTIONARY, SpdySession


class Client:
    """The client half: its own compression context, as Go's spdystream keeps one per connection."""

    def __init__(self) -> None:
        self.deflate = zlib.compressobj(zdict=SPDY_DICTIONARY)
        self.inflate = zlib.decompressobj(zdict=SPDY_DICTIONARY)

    def syn_stream(self, stream_id: int, headers: dict[str, str], flags: int = 0) -> bytes:
        raw = struct.pack(">I", len(headers))
        for name, value in headers.items():
            raw += struct.pack(">I", len(name)) + name.encode() + struct.pack(">I", len(value)) + value.encode()
        block = self.deflate.compress(raw) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        payload = struct.pack(">IIBB", stream_id, 0, 0, 0) + block
        return struct.pack(">HHI", 0x8003, 1, (flags << 24) | len(payload)) + payload


async def _discard(frame: bytes) -> None:
    return None


def test_the_dictionary_is_spdy3s() -> None:
    assert zlib.adler32(SPDY_DICTIONARY) == 0xE3C6A7C2


def test_streams_open_with_their_headers_and_get_a_reply() -> None:
    client = Client()
    session = SpdySession(_discard)
    wire = client.syn_stream(1, {"streamtype": "error", "port": "8080", "requestid": "0"})
    wire += client.syn_stream(3, {"streamtype": "data", "port": "8080", "requestid": "0"})
    wire += struct.pack(">II", 3, (FLAG_FIN << 24) | 5) + b"hello"
    ping = struct.pack(">HHII", 0x8003, 6, 4, 7)
    events, replies = session.feed(wire[:7])
    assert (events, replies) == ([], [])
    events, replies = session.feed(wire[7:] + ping)
    assert [(e.kind, e.stream_id) for e in events] == [("opened", 1), ("opened", 3), ("data", 3)]
    assert events[1].headers == {"streamtype": "data", "port": "8080", "requestid": "0"}
    assert events[2].data == b"hello"
    assert events[2].fin
    assert replies[-1] == ping
    for stream_id, reply in zip((1, 3), replies[:2], strict=True):
        kind, length = struct.unpack(">HI", reply[2:8])
        assert kind == 2
        assert struct.unpack(">I", reply[8:12])[0] == stream_id
        assert client.inflate.decompress(reply[12 : 8 + length]) == struct.pack(">I", 0)


async def test_data_is_framed_in_chunks_with_fin_on_the_last() -> None:
    sent: list[bytes] = []

    async def send(frame: bytes) -> None:
        sent.append(frame)

    session = SpdySession(send)
    await session.send_data(5, b"x" * 70000, fin=True)
    await session.send_data(7, b"", fin=True)
    heads = [struct.unpack(">II", frame[:8]) for frame in sent]
    assert [(stream, word >> 24, word & 0xFFFFFF) for stream, word in heads] == [
        (5, 0, 65536), (5, FLAG_FIN, 70000 - 65536), (7, FLAG_FIN, 0),
    ]  # fmt: skip
