"""Non-resource paths: ``/version``, health, legacy and aggregated discovery, and the OpenAPI documents.

kubectl reads these before any resource request (apiserver-notes §1.1); the documents come from
``grove_sim.http.discovery`` and always reflect the registry's current kinds.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from grove_sim.http import discovery
from grove_sim.http.context import json_response
from grove_sim.machinery import errors
from grove_sim.registry.resources import Registry

__all__ = ["serve_nonresource"]

_HEALTH = ("/healthz", "/readyz", "/livez")


def _aggregated_type(accept: str) -> str | None:
    """The aggregated discovery media type the client prefers, if any (v2 before v2beta1, in Accept order)."""
    for part in accept.split(","):
        if "as=APIGroupDiscoveryList" in part and "g=apidiscovery.k8s.io" in part:
            if "v=v2beta1" in part:
                return discovery.AGGREGATED_V2BETA1
            if "v=v2" in part:
                return discovery.AGGREGATED_V2
    return None


def serve_nonresource(registry: Registry, request: web.Request) -> web.StreamResponse | None:
    """Answer a GET on a non-resource path, or None when the path names resources."""
    path = request.path.rstrip("/") or "/"
    if path in ("/api", "/apis"):
        media = _aggregated_type(request.headers.get("Accept", ""))
        if media is not None:
            version = (
                "apidiscovery.k8s.io/v2beta1" if media == discovery.AGGREGATED_V2BETA1 else "apidiscovery.k8s.io/v2"
            )
            response = json_response(discovery.aggregated_discovery(registry, core=path == "/api", api_version=version))
            response.headers["Content-Type"] = media
            response.headers["Vary"] = "Accept"
            return response
        if path == "/api":
            return json_response(discovery.api_versions(request.host))
        return json_response(discovery.api_group_list(registry))
    if path == "/version":
        return json_response(discovery.version_info())
    if path in _HEALTH or path.startswith(tuple(h + "/" for h in _HEALTH)):
        return web.Response(text="ok", content_type="text/plain")
    if path == "/openapi/v3":
        return json_response(discovery.openapi_index(registry))
    if path.startswith("/openapi/v3/"):
        rest = path.removeprefix("/openapi/v3/").split("/")
        openapi: dict[str, Any] | None = None
        if len(rest) == 2 and rest[0] == "api":
            openapi = discovery.openapi_gv_document(registry, "", rest[1])
        elif len(rest) == 3 and rest[0] == "apis":
            openapi = discovery.openapi_gv_document(registry, rest[1], rest[2])
        if openapi is None:
            raise errors.route_not_found()
        return json_response(openapi)
    if path == "/openapi/v2":
        if "protobuf" in request.headers.get("Accept", ""):
            response = web.Response(body=discovery.openapi_v2_protobuf())
            response.headers["Content-Type"] = discovery.OPENAPI_V2_PROTOBUF
        else:
            response = json_response(discovery.openapi_v2_document())
        response.headers["Vary"] = "Accept"
        return response
    if path.startswith("/openapi/"):
        raise errors.route_not_found()
    parts = [p for p in path.split("/") if p]
    listing: dict[str, Any] | None
    if len(parts) == 2 and parts[0] == "api":
        listing = discovery.resource_list(registry, "", parts[1])
    elif len(parts) == 3 and parts[0] == "apis":
        listing = discovery.resource_list(registry, parts[1], parts[2])
    elif len(parts) == 2 and parts[0] == "apis":
        group = next((g for g in discovery.api_group_list(registry)["groups"] if g["name"] == parts[1]), None)
        if group is None:
            raise errors.route_not_found()
        return json_response({"kind": "APIGroup", "apiVersion": "v1", **group})
    else:
        return None
    if listing is None:
        raise errors.route_not_found()
    return json_response(listing)
