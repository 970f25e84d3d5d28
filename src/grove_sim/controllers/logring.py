"""A container's captured output as ``kubectl logs`` reads it: a bounded ring of timestamped lines.

A kubelet keeps container logs in files it rotates at a size limit; grove-sim keeps the newest ``limit`` bytes of
each container run in memory (older lines fall off the front), so a chatty process never grows the simulator.
Readers take a tail (``tailLines``) or follow (``follow=true``): a follower waits for lines appended after the
ones it has read and ends when the run's output ends.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

from grove_sim.machinery.logstamps import stamp

__all__ = ["DEFAULT_LOG_LIMIT", "ContainerLogs", "LogRing", "LogStore"]

DEFAULT_LOG_LIMIT = 1 << 20
"""Bytes of output kept per container run (the newest ones)."""


class LogRing:
    """The newest ``limit`` bytes of one container run's output, as whole lines with their arrival time."""

    def __init__(self, limit: int = DEFAULT_LOG_LIMIT) -> None:
        self._limit = max(limit, 1)
        self._lines: deque[tuple[str, bytes]] = deque()
        self._first = 0
        """Sequence number of ``_lines[0]``; a follower's position survives lines falling off the front."""
        self._size = 0
        self._partial = b""
        self._closed = False
        self._changed = asyncio.Event()

    @property
    def closed(self) -> bool:
        """Whether the run's output has ended (the process exited)."""
        return self._closed

    def append(self, data: bytes) -> None:
        """Add output; complete lines become readable, a trailing partial line waits for its newline."""
        if self._closed or not data:
            return
        *complete, self._partial = (self._partial + data).split(b"\n")
        if len(self._partial) > self._limit:
            complete.append(self._partial)
            self._partial = b""
        for line in complete:
            self._add(line + b"\n")
        if complete:
            self._wake()

    def close(self) -> None:
        """The output ended: a partial last line is kept and followers finish."""
        if self._closed:
            return
        if self._partial:
            self._add(self._partial + b"\n")
            self._partial = b""
        self._closed = True
        self._wake()

    def _add(self, line: bytes) -> None:
        line = line[-self._limit :]
        self._lines.append((stamp(), line))
        self._size += len(line)
        while self._size > self._limit:
            _, dropped = self._lines.popleft()
            self._size -= len(dropped)
            self._first += 1

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _render(self, entry: tuple[str, bytes], timestamps: bool) -> bytes:
        stamp, line = entry
        return f"{stamp} ".encode() + line if timestamps else line

    def tail(
        self, lines: int | None = None, *, timestamps: bool = False, since: str | None = None
    ) -> tuple[bytes, int]:
        """The last ``lines`` lines (all kept when None) printed at or after ``since`` (a ``stamp``), and the
        position after them, for :meth:`follow`."""
        kept = [e for e in self._lines if since is None or e[0] >= since]
        if lines is not None:
            kept = kept[len(kept) - lines :] if lines > 0 else []
        return b"".join(self._render(e, timestamps) for e in kept), self._first + len(self._lines)

    async def follow(self, position: int, *, timestamps: bool = False) -> AsyncIterator[bytes]:
        """Lines from ``position`` on as they arrive, until the output ends."""
        while True:
            changed = self._changed
            start = max(position - self._first, 0)
            fresh = [self._lines[i] for i in range(start, len(self._lines))]
            position = self._first + len(self._lines)
            if fresh:
                yield b"".join(self._render(e, timestamps) for e in fresh)
            elif self._closed:
                return
            else:
                await changed.wait()


class ContainerLogs:
    """The output of one container: the current run's ring and the previous run's (``kubectl logs --previous``)."""

    def __init__(self, limit: int = DEFAULT_LOG_LIMIT) -> None:
        self._limit = limit
        self.current: LogRing | None = None
        self.previous: LogRing | None = None

    def new_run(self) -> LogRing:
        """A new run starts: the current ring becomes the previous one."""
        if self.current is not None:
            self.current.close()
            self.previous = self.current
        self.current = LogRing(self._limit)
        return self.current


class LogStore:
    """Every container's output by pod, kept until the pod is deleted (as a kubelet keeps a dead container's)."""

    def __init__(self, limit: int = DEFAULT_LOG_LIMIT) -> None:
        self.limit = limit
        self._pods: dict[tuple[str, str], dict[str, ContainerLogs]] = {}

    def container(self, namespace: str, pod: str, container: str) -> ContainerLogs:
        """The logs of ``container`` of a pod (made on first use)."""
        return self._pods.setdefault((namespace, pod), {}).setdefault(container, ContainerLogs(self.limit))

    def forget(self, namespace: str, pod: str) -> None:
        """Drop a deleted pod's logs."""
        self._pods.pop((namespace, pod), None)

    def container_logs(self, namespace: str, name: str, container: str, previous: bool = False) -> LogRing | None:
        """The captured output of a container run as a process (the previous run's with ``previous``)."""
        logs = self._pods.get((namespace, name), {}).get(container)
        if logs is None:
            return None
        return logs.previous if previous else logs.current
