"""Container probes as a kubelet runs them: one check (HTTP GET, TCP, exec) and the threshold bookkeeping.

``check`` answers one probe attempt against a process on the pod's IP: an ``httpGet`` succeeds on a status in
200..399 (kubelet's rule; redirects are not followed), a ``tcpSocket`` on an accepted connection, an ``exec`` on
exit code 0 (the command runs as a local process with the container's environment). ``ProbeState`` turns results
into the probe's verdict with ``successThreshold``/``failureThreshold`` as kubelet's prober worker does.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ProbeState", "ProbeTiming", "check"]


@dataclass(frozen=True, slots=True)
class ProbeTiming:
    """A probe's schedule in seconds (kubelet's defaults); delays and periods are scaled by the kubelet's time
    scale, the timeout of one attempt is not (a slow answer is slow on any clock)."""

    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int

    @classmethod
    def of(cls, probe: Mapping[str, Any], scale: float) -> ProbeTiming:
        """The timing of ``probe``; ``scale`` shrinks seconds (tests run probes on a fast clock)."""
        return cls(
            initial_delay=float(probe.get("initialDelaySeconds") or 0) * scale,
            period=float(probe.get("periodSeconds") or 10) * scale,
            timeout=float(probe.get("timeoutSeconds") or 1),
            success_threshold=int(probe.get("successThreshold") or 1),
            failure_threshold=int(probe.get("failureThreshold") or 3),
        )


@dataclass(slots=True)
class ProbeState:
    """Consecutive results of one probe and its verdict (None until the first threshold is reached)."""

    timing: ProbeTiming
    verdict: bool | None = None
    successes: int = 0
    failures: int = 0

    def record(self, ok: bool) -> bool:
        """Count one attempt; True when the verdict changed."""
        if ok:
            self.successes, self.failures = self.successes + 1, 0
            new = True if self.successes >= self.timing.success_threshold else self.verdict
        else:
            self.successes, self.failures = 0, self.failures + 1
            new = False if self.failures >= self.timing.failure_threshold else self.verdict
        changed = new != self.verdict
        self.verdict = new
        return changed


def _port(value: Any, container: Mapping[str, Any]) -> int:
    """A probe port: a number, or the name of one of the container's ports."""
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return int(value)
    for port in container.get("ports") or []:
        if port.get("name") == value:
            return int(port.get("containerPort") or 0)
    return 0


async def _http_get(spec: Mapping[str, Any], host: str, port: int) -> bool:
    context: ssl.SSLContext | None = None
    if str(spec.get("scheme", "HTTP")).upper() == "HTTPS":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    path = str(spec.get("path") or "/")
    headers = "".join(f"{h.get('name')}: {h.get('value')}\r\n" for h in spec.get("httpHeaders") or [])
    reader, writer = await asyncio.open_connection(host, port, ssl=context)
    try:
        request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: kube-probe/1.32\r\n{headers}"
        writer.write(f"{request}Connection: close\r\n\r\n".encode())
        await writer.drain()
        status_line = await reader.readline()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    parts = status_line.split()
    return len(parts) >= 2 and parts[1].isdigit() and 200 <= int(parts[1]) < 400


async def _tcp(host: str, port: int) -> bool:
    _, writer = await asyncio.open_connection(host, port)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def _exec(command: list[str], env: Mapping[str, str]) -> bool:
    proc = await asyncio.create_subprocess_exec(
        *command,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        return await proc.wait() == 0
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())


async def _attempt(probe: Mapping[str, Any], container: Mapping[str, Any], host: str, env: Mapping[str, str]) -> bool:
    if "httpGet" in probe:
        spec = probe["httpGet"] or {}
        return await _http_get(spec, str(spec.get("host") or host), _port(spec.get("port"), container))
    if "tcpSocket" in probe:
        spec = probe["tcpSocket"] or {}
        return await _tcp(str(spec.get("host") or host), _port(spec.get("port"), container))
    if "exec" in probe:
        command = [str(c) for c in (probe["exec"] or {}).get("command") or []]
        return bool(command) and await _exec(command, env)
    return True


async def check(
    probe: Mapping[str, Any], container: Mapping[str, Any], host: str, env: Mapping[str, str], seconds: float
) -> bool:
    """One attempt of ``probe`` on ``container`` listening at ``host`` (the pod's IP), given ``seconds`` to
    answer; False on any failure."""
    try:
        async with asyncio.timeout(seconds):
            return await _attempt(probe, container, host, env)
    except (OSError, TimeoutError, ValueError):
        return False
