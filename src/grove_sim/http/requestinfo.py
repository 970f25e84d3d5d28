"""Parsing of incoming requests the way the real apiserver's ``RequestInfo`` and decoders do.

Path → (group, version, namespace, resource, name, subresource); query strings with Go ``strconv.ParseBool``
booleans (kubernetes-asyncio sends ``watch=True``, apiserver-notes §0.6); bodies as JSON, YAML or the protobuf
envelope kubectl 1.32 uses for ``create namespace``/``run``; and content negotiation for Table output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from grove_sim.http.protobuf import ProtobufError, decode_k8s_protobuf
from grove_sim.machinery import errors
from grove_sim.storage.store import loads

__all__ = [
    "RequestInfo",
    "parse_bool",
    "parse_dry_run",
    "parse_int",
    "parse_path",
    "read_body",
    "read_delete_options",
    "wants_table",
]

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_JSON_TYPES = (
    "application/json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
)
_YAML_TYPES = ("application/yaml", "application/apply-patch+yaml", "application/x-yaml", "text/yaml")
_PROTOBUF = "application/vnd.kubernetes.protobuf"
_ACCEPTED = ("application/json", "application/yaml", _PROTOBUF)


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """The resource a request addresses; ``plural`` is empty for a group-version discovery request."""

    group: str
    version: str
    namespace: str | None
    plural: str
    name: str | None
    subresource: str | None


def parse_path(path: str) -> RequestInfo | None:
    """Split ``/api/v1/...`` or ``/apis/<g>/<v>/...``; None when the path is not a resource path (a ``proxy``
    subresource may be followed by the path it forwards to)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and not (len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3 and rest[2] != "proxy":
        return None
    return RequestInfo(
        group=group,
        version=version,
        namespace=namespace,
        plural=rest[0] if rest else "",
        name=rest[1] if len(rest) > 1 else None,
        subresource=rest[2] if len(rest) > 2 else None,
    )


def parse_bool(request: web.Request, name: str) -> bool:
    """A boolean query parameter parsed like Go's ``strconv.ParseBool`` (400 on anything else)."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return False
    if raw in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if raw in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise errors.bad_request(f'invalid boolean value for {name}: strconv.ParseBool: parsing "{raw}": invalid syntax')


def parse_int(request: web.Request, name: str) -> int | None:
    """An integer query parameter or None (400 when malformed)."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(
            f'invalid value for {name}: strconv.ParseInt: parsing "{raw}": invalid syntax'
        ) from None


def media_type(request: web.Request) -> str:
    """The request's Content-Type without parameters (JSON when absent)."""
    raw = request.headers.get("Content-Type", "application/json")
    return raw.split(";", 1)[0].strip().lower() or "application/json"


async def read_body(request: web.Request, *, allowed: tuple[str, ...] | None = None) -> object:
    """Decode the body as JSON, YAML or Kubernetes protobuf; 415 for other media types, 400 when undecodable."""
    content_type = media_type(request)
    if allowed is not None and content_type not in allowed:
        raise errors.unsupported_media_type(content_type, allowed)
    raw = await request.read()
    try:
        if content_type in _JSON_TYPES:
            return loads(raw) if raw.strip() else None
        if content_type in _YAML_TYPES:
            return yaml.safe_load(raw) if raw.strip() else None
        if content_type == _PROTOBUF:
            return decode_k8s_protobuf(raw)
    except (ValueError, yaml.YAMLError, ProtobufError) as exc:
        raise errors.bad_request(f"the body of the request could not be decoded: {exc}") from exc
    raise errors.unsupported_media_type(content_type, _ACCEPTED)


def wants_table(request: web.Request) -> bool:
    """Whether the Accept header asks for ``meta.k8s.io`` Table output (kubectl get)."""
    return "as=Table" in request.headers.get("Accept", "")


def parse_dry_run(request: web.Request) -> bool:
    """Whether ``dryRun=All`` was asked for (400 for any other value)."""
    values = request.query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise errors.bad_request(f'Invalid value: "{value}": supported values: "All"')
    return bool(values)


async def read_delete_options(request: web.Request) -> dict[str, Any]:
    """``DeleteOptions`` from the body, overridden by the query's ``gracePeriodSeconds``, ``propagationPolicy`` and
    ``orphanDependents``."""
    body: Any = None
    if request.can_read_body:
        body = await read_body(request)
    options: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    grace = parse_int(request, "gracePeriodSeconds")
    if grace is not None:
        options["gracePeriodSeconds"] = grace
    if request.query.get("propagationPolicy"):
        options["propagationPolicy"] = request.query["propagationPolicy"]
    if request.query.get("orphanDependents"):
        options["orphanDependents"] = parse_bool(request, "orphanDependents")
    return options
