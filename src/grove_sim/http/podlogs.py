"""The ``pods/log`` subresource: what ``kubectl logs`` reads (``container``, ``follow``, ``tailLines``,
``previous``, ``timestamps``), answered as kube-apiserver does with the kubelet's captured output.

The output comes from a ``LogSource`` (the simulated kubelet, wired by the server): a container run as a local
process has a ring of its output per run; a simulated container prints nothing, so its log is empty. Refusals use
kube-apiserver's and kubelet's messages: a pod with several containers needs ``container``, an unknown container
is not valid, ``previous`` needs a previous run, a container that never started is waiting to start.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from aiohttp import web

from grove_sim.http.context import ApiContext, Target
from grove_sim.http.requestinfo import parse_bool, parse_int
from grove_sim.machinery import errors
from grove_sim.machinery.logstamps import stamp

__all__ = ["LogReader", "LogSource", "pod_logs"]

_PODS = ("", "pods")


class LogReader(Protocol):
    """One container run's captured output."""

    def tail(
        self, lines: int | None = None, *, timestamps: bool = False, since: str | None = None
    ) -> tuple[bytes, int]:
        """The last ``lines`` lines printed at or after ``since`` and the position after them."""

    def follow(self, position: int, *, timestamps: bool = False) -> AsyncIterator[bytes]:
        """Lines from ``position`` on as they arrive, until the output ends."""


class LogSource(Protocol):
    """Where container output is kept (the kubelet)."""

    def container_logs(self, namespace: str, name: str, container: str, previous: bool = False) -> LogReader | None:
        """The output of the current (or previous) run of ``container``, if it ran as a process."""


def _names(containers: list[dict[str, Any]]) -> str:
    return "[" + " ".join(str(c.get("name")) for c in containers) + "]"


def _container(pod: dict[str, Any], wanted: str | None) -> str:
    """The container the request reads, checked as kube-apiserver's ``LogLocation`` does."""
    spec = pod.get("spec") or {}
    name = pod["metadata"]["name"]
    containers = list(spec.get("containers") or [])
    inits = list(spec.get("initContainers") or [])
    if not wanted:
        if len(containers) == 1:
            return str(containers[0].get("name"))
        message = f"a container name must be specified for pod {name}, choose one of: {_names(containers)}"
        if inits:
            message += f" or one of the init containers: {_names(inits)}"
        raise errors.bad_request(message)
    if not any(c.get("name") == wanted for c in containers + inits):
        raise errors.bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def _waiting_reason(pod: dict[str, Any], container: str) -> str | None:
    """Why ``container`` has not started yet (its waiting reason), or None once it ran."""
    status = pod.get("status") or {}
    entries = (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
    entry = next((e for e in entries if e.get("name") == container), None)
    if entry is None:
        return "ContainerCreating"
    waiting = (entry.get("state") or {}).get("waiting")
    if waiting is not None and not entry.get("lastState") and not entry.get("containerID"):
        return str(waiting.get("reason") or "ContainerCreating")
    return None


def _since(request: web.Request) -> str | None:
    """``sinceSeconds`` or ``sinceTime`` (RFC 3339) as a ring timestamp; None when neither is given."""
    seconds = parse_int(request, "sinceSeconds")
    if seconds is not None:
        if seconds < 1:
            raise errors.bad_request("sinceSeconds: Invalid value: must be greater than 0")
        return stamp(datetime.now(UTC) - timedelta(seconds=seconds))
    text = request.query.get("sinceTime")
    if not text:
        return None
    try:
        return stamp(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        raise errors.bad_request(f'parsing time "{text}" as RFC3339: cannot parse') from None


async def _write(response: web.StreamResponse, data: bytes, budget: int | None) -> int | None:
    """Write ``data`` within ``limitBytes`` (``budget`` left; None: no limit); returns what is left."""
    if budget is not None:
        data = data[:budget]
        budget -= len(data)
    if data:
        await response.write(data)
    return budget


async def pod_logs(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """GET ``pods/NAME/log``: the container's output, streamed while it runs with ``follow=true``."""
    name = target.name or ""
    pod = ctx.core.store.get(_PODS, target.ns, name)
    if pod is None:
        raise errors.not_found("", "pods", name)
    container = _container(pod, request.query.get("container"))
    previous = parse_bool(request, "previous")
    follow = parse_bool(request, "follow")
    timestamps = parse_bool(request, "timestamps")
    lines = parse_int(request, "tailLines")
    since = _since(request)
    limit = parse_int(request, "limitBytes")
    reader = ctx.pod_logs.container_logs(target.ns, name, container, previous) if ctx.pod_logs else None
    if reader is None:
        if previous:
            raise errors.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        reason = _waiting_reason(pod, container)
        if reason is not None:
            raise errors.bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(request)
    budget = limit if limit is not None and limit > 0 else None
    if reader is not None:
        text, position = reader.tail(max(lines, 0) if lines is not None else None, timestamps=timestamps, since=since)
        budget = await _write(response, text, budget)
        if follow and budget != 0:
            async for chunk in reader.follow(position, timestamps=timestamps):
                budget = await _write(response, chunk, budget)
                if budget == 0:
                    break
    await response.write_eof()
    return response
