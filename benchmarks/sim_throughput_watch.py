"""Cluster-wide raw pod watchers for the throughput benchmark: they make every write fan out, and check delivery.

Each watcher holds ``GET /api/v1/pods?watch=true&allowWatchBookmarks=true`` open and drains it with cheap byte
parsing (full ``json.loads`` of every ~2 KB pod event would make the load generator, not the server, the
bottleneck). It records every resourceVersion it receives and the last resourceVersion per pod, so the benchmark
can tell, after a final sentinel write, how long delivery lagged behind the writers and whether any event or any
pod's final state was missed. A stream that ends is resumed from the last resourceVersion seen, as a reflector does.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp

__all__ = ["PodWatcher", "WatchEvent", "WatchStats", "parse_event_line"]

_TYPE_PREFIX = b'{"type":"'
_METADATA_NAME = b'"metadata":{"name":"'
_RV_KEY = b'"resourceVersion":"'


@dataclass(frozen=True)
class WatchEvent:
    """What the benchmark needs from one watch line."""

    type: str
    name: str
    rv: int
    code: int | None = None


def _parse_slow(line: bytes) -> WatchEvent:
    doc: dict[str, Any] = json.loads(line)
    obj: dict[str, Any] = doc.get("object") or {}
    meta: dict[str, Any] = obj.get("metadata") or {}
    code = obj.get("code") if doc.get("type") == "ERROR" else None
    return WatchEvent(str(doc["type"]), str(meta.get("name", "")), int(meta.get("resourceVersion") or 0), code)


def parse_event_line(line: bytes) -> WatchEvent:
    """Type, object name and resourceVersion of one watch line, by byte search with a full-JSON fallback.

    The fast path relies on the server's layout (``{"type":"T","object":{…"metadata":{"name":"N",…
    "resourceVersion":"R"…``); a quote can never appear unescaped inside a JSON string, so these byte patterns only
    match real keys. Anything else (ERROR events, bookmarks, other layouts) takes the ``json.loads`` path.
    """
    if not line.startswith(_TYPE_PREFIX):
        return _parse_slow(line)
    end = line.find(b'"', len(_TYPE_PREFIX))
    meta = line.find(_METADATA_NAME, end)
    if end < 0 or meta < 0:
        return _parse_slow(line)
    type_ = line[len(_TYPE_PREFIX) : end].decode()
    if type_ == "ERROR":
        return _parse_slow(line)
    name_start = meta + len(_METADATA_NAME)
    name_end = line.find(b'"', name_start)
    rv_at = line.find(_RV_KEY, name_end)
    if name_end < 0 or rv_at < 0 or line.find(b"\\", name_start, name_end) >= 0:
        return _parse_slow(line)
    rv_start = rv_at + len(_RV_KEY)
    rv_end = line.find(b'"', rv_start)
    return WatchEvent(type_, line[name_start:name_end].decode(), int(line[rv_start:rv_end]))


@dataclass
class WatchStats:
    """Delivery counters of one watcher."""

    events: int = 0
    bookmarks: int = 0
    reconnects: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "events": self.events,
            "bookmarks": self.bookmarks,
            "reconnects": self.reconnects,
            "by_type": dict(sorted(self.by_type.items())),
            "errors": list(self.errors),
        }


class PodWatcher:
    """One cluster-wide pod watch stream, resumed on end of stream, with delivery bookkeeping."""

    def __init__(self, base_url: str, headers: dict[str, str], since_rv: int) -> None:
        self._base_url = base_url
        self._headers = headers
        self.last_rv = since_rv
        self.start_rv = since_rv
        self.stats = WatchStats()
        self.seen_rvs: set[int] = set()
        self.last_rv_by_pod: dict[str, int] = {}
        self._advanced = asyncio.Event()
        self._connected = asyncio.Event()
        self.expired = False

    def handle(self, line: bytes) -> None:
        """Account for one watch line."""
        event = parse_event_line(line)
        if event.type == "BOOKMARK":
            self.stats.bookmarks += 1
        elif event.type == "ERROR":
            self.stats.errors.append(f"ERROR event code {event.code}")
            self.expired = event.code == 410
            return
        else:
            self.stats.events += 1
            self.stats.by_type[event.type] += 1
            self.seen_rvs.add(event.rv)
            self.last_rv_by_pod[event.name] = event.rv
        self.last_rv = max(self.last_rv, event.rv)

    async def run(self, session: aiohttp.ClientSession) -> None:
        """Stream until cancelled (or until the server answers 410 Expired, which the benchmark reports)."""
        while not self.expired:
            url = (
                f"{self._base_url}/api/v1/pods?watch=true&allowWatchBookmarks=true"
                f"&resourceVersion={self.last_rv}&timeoutSeconds=3600"
            )
            try:
                async with session.get(url, headers=self._headers) as resp:
                    if resp.status != 200:
                        self.stats.errors.append(f"HTTP {resp.status}: {(await resp.text())[:200]}")
                        return
                    self._connected.set()
                    pending = b""
                    async for chunk in resp.content.iter_any():
                        lines = (pending + chunk).split(b"\n")
                        pending = lines.pop()
                        for line in lines:
                            if line:
                                self.handle(line)
                        self._advanced.set()
            except aiohttp.ClientPayloadError as exc:
                self.stats.errors.append(f"payload error: {exc}")
            self.stats.reconnects += 1

    async def connected(self) -> None:
        """Wait until the first stream is open (its response headers arrived)."""
        await self._connected.wait()

    async def wait_for_rv(self, rv: int, within: float) -> bool:
        """Wait up to ``within`` seconds until an event at or after ``rv`` arrived; False if none did."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while self.last_rv < rv:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            self._advanced.clear()
            try:
                await asyncio.wait_for(self._advanced.wait(), remaining)
            except TimeoutError:
                return self.last_rv >= rv
        return True

    def missed(self, known_rvs: set[int], upto: int) -> int:
        """How many known pod events with resourceVersion in (start, upto] this watcher never received."""
        return sum(1 for rv in known_rvs if self.start_rv < rv <= upto and rv not in self.seen_rvs)

    def stale_pods(self, final_rvs: dict[str, int], upto: int) -> int:
        """Pods whose final state (written after the watch began, at or before ``upto``) this watcher lacks."""
        return sum(
            1 for name, rv in final_rvs.items() if self.start_rv < rv <= upto and self.last_rv_by_pod.get(name) != rv
        )
