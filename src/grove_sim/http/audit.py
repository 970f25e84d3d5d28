"""An audit log as kube-apiserver writes one with ``--audit-log-path``: one ``audit.k8s.io/v1`` Event per request.

Each event (level ``Metadata``, stage ``RequestReceived``) names who asked (``user.username``, as the request
authenticated: a service account's ``system:serviceaccount:<namespace>:<name>``, the administrator's
``kubernetes-admin``, an impersonated user, else ``system:anonymous``), the verb and the object. grove-sim
authorizes nothing yet; the log is how one checks what a program actually asks for, e.g. that ``grove-initc``
stays within its Role.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any, TextIO

from aiohttp import web

from grove_sim.http.dispatch import request_verb
from grove_sim.http.requestinfo import parse_path
from grove_sim.machinery import errors

__all__ = ["AuditLog"]


def _object_ref(request: web.Request) -> tuple[str, dict[str, Any] | None]:
    ri = parse_path(request.path)
    if ri is None or not ri.plural:
        return request.method.lower(), None
    try:
        verb = request_verb(request.method, ri.name is None, request)
    except errors.ApiError:
        verb = request.method.lower()
    ref: dict[str, Any] = {"resource": ri.plural, "apiGroup": ri.group, "apiVersion": ri.version}
    for key, value in (("namespace", ri.namespace), ("name", ri.name), ("subresource", ri.subresource)):
        if value:
            ref[key] = value
    return verb, ref


class AuditLog:
    """Appends one JSON line per request to a file (flushed per line, so a reader sees whole events)."""

    def __init__(self, path: str) -> None:
        self._file: TextIO | None = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 (closed in close())

    def record(self, request: web.Request, username: str) -> None:
        """Write the event of ``request`` (made by ``username``) as it is received."""
        if self._file is None:
            return
        verb, ref = _object_ref(request)
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        event: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "auditID": str(uuid.uuid4()),
            "stage": "RequestReceived",
            "requestURI": request.path_qs,
            "verb": verb,
            "user": {"username": username},
            "sourceIPs": [request.remote or ""],
            "userAgent": request.headers.get("User-Agent", ""),
            "requestReceivedTimestamp": now,
            "stageTimestamp": now,
        }
        if ref is not None:
            event["objectRef"] = ref
        self._file.write(json.dumps(event, separators=(",", ":")) + "\n")

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None
