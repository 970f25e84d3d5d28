"""Discovery and OpenAPI documents generated from the resource registry.

kubectl builds its REST mapper from discovery (legacy ``APIResourceList`` per group-version, or one aggregated
``APIGroupDiscoveryList`` when its Accept header asks for it) and, for ``apply``/``create -f``, checks in the
OpenAPI v3 document of the group-version that the PATCH operation takes ``fieldValidation`` (apiserver-notes §2.1,
§2.3). The documents are derived, never stored, so a CRD shows up in all of them as soon as it is registered.

A ``kind: List`` file is the exception: kubectl's v3 verifier never claims server-side validation for ``v1 List``
(``queryParamVerifierV3.HasSupport``), so ``--validate=strict`` falls back to client-side validation against the
OpenAPI **v2** document, fetched as protobuf. The sim serves a v2 document without definitions: kubectl then finds
no model for any item and leaves validation to the server, as it does for a kind the real v2 document lacks.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from grove_sim.registry.resources import Registry, ResourceInfo

__all__ = [
    "AGGREGATED_V2",
    "AGGREGATED_V2BETA1",
    "OPENAPI_V2_PROTOBUF",
    "aggregated_discovery",
    "api_group_list",
    "api_versions",
    "openapi_gv_document",
    "openapi_index",
    "openapi_v2_document",
    "openapi_v2_protobuf",
    "resource_list",
    "version_info",
]

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""What kube-openapi answers to kubectl's ``…spec.v2@v1.0+protobuf`` Accept (Go's mime parser rejects the ``@``)."""
_OPENAPI_TITLE = "Kubernetes (grove-sim)"
_OPENAPI_VERSION = "v1.32.5"

_SUB_VERBS = {
    "status": ("get", "patch", "update"),
    "scale": ("get", "patch", "update"),
    "binding": ("create",),
    "eviction": ("create",),
    "finalize": ("update",),
    "log": ("get",),
    "proxy": ("create", "delete", "get", "patch", "update"),
    "portforward": ("create", "get"),
}


def version_info() -> dict[str, str]:
    """``/version``: minor 32 makes the gcloud kubectl dispatcher pick kubectl 1.32 (apiserver-notes §0.1)."""
    return {
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.5-grove-sim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    """Legacy ``/api``."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group_list(registry: Registry) -> dict[str, Any]:
    """Legacy ``/apis``."""
    groups = []
    for group, versions in registry.group_versions().items():
        if not group:
            continue
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _sub_entry(info: ResourceInfo, sub: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"{info.plural}/{sub}",
        "singularName": "",
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": list(_SUB_VERBS[sub]),
    }
    if sub == "scale":
        entry.update(group="autoscaling", version="v1", kind="Scale")
    elif sub == "binding":
        entry["kind"] = "Binding"
    elif sub == "eviction":
        entry.update(group="policy", version="v1", kind="Eviction")
    return entry


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """Legacy ``/api/v1`` or ``/apis/<g>/<v>`` (None when the group-version is not served)."""
    infos = [i for i in registry if i.group == group and i.version == version]
    if not infos:
        return None
    resources: list[dict[str, Any]] = []
    for info in infos:
        entry: dict[str, Any] = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": list(info.verbs),
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        resources.append(entry)
        resources.extend(_sub_entry(info, sub) for sub in sorted(info.subresources))
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def aggregated_discovery(registry: Registry, *, core: bool, api_version: str) -> dict[str, Any]:
    """``APIGroupDiscoveryList`` for ``/api`` (core only) or ``/apis`` (every named group)."""
    items = []
    for group, versions in registry.group_versions().items():
        if core != (group == ""):
            continue
        version_docs = []
        for version in versions:
            resources = []
            for info in registry:
                if info.group != group or info.version != version:
                    continue
                entry: dict[str, Any] = {
                    "resource": info.plural,
                    "responseKind": {"group": group, "version": version, "kind": info.kind},
                    "scope": "Namespaced" if info.namespaced else "Cluster",
                    "singularResource": info.singular,
                    "verbs": list(info.verbs),
                }
                if info.short_names:
                    entry["shortNames"] = list(info.short_names)
                if info.categories:
                    entry["categories"] = list(info.categories)
                subs = []
                for sub in sorted(info.subresources):
                    kind = {"scale": ("autoscaling", "v1", "Scale"), "binding": ("", "v1", "Binding")}.get(
                        sub, (group, version, info.kind)
                    )
                    if sub == "eviction":
                        kind = ("policy", "v1", "Eviction")
                    subs.append(
                        {
                            "subresource": sub,
                            "responseKind": {"group": kind[0], "version": kind[1], "kind": kind[2]},
                            "verbs": list(_SUB_VERBS[sub]),
                        }
                    )
                if subs:
                    entry["subresources"] = subs
                resources.append(entry)
            version_docs.append({"version": version, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": group}, "versions": version_docs})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def openapi_gv_document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """A minimal OpenAPI v3 document whose PATCH operations let kubectl use server-side field validation."""
    infos = [i for i in registry if i.group == group and i.version == version]
    if not infos:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for info in infos:
        base = "/" + _gv_path(group, version)
        item = (
            f"{base}/namespaces/{{namespace}}/{info.plural}/{{name}}"
            if info.namespaced
            else f"{base}/{info.plural}/{{name}}"
        )
        gvk = {"group": group, "version": version, "kind": info.kind}
        body = {"schema": {"type": "object"}}
        paths[item] = {
            "patch": {
                "operationId": f"patch{info.kind}",
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "patch",
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                ],
                "requestBody": {
                    "content": {
                        "application/json-patch+json": body,
                        "application/merge-patch+json": body,
                        "application/apply-patch+yaml": body,
                    }
                },
                "responses": {"200": {"description": "OK"}},
            }
        }
        schemas[f"{group or 'core'}.{version}.{info.kind}"] = {
            "type": "object",
            "x-kubernetes-group-version-kind": [gvk],
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": _OPENAPI_TITLE, "version": _OPENAPI_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def openapi_index(registry: Registry) -> dict[str, Any]:
    """``/openapi/v3``: every served group-version with a hash that changes when its resources change."""
    paths = {}
    for group, versions in registry.group_versions().items():
        for version in versions:
            doc = openapi_gv_document(registry, group, version)
            digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
            path = _gv_path(group, version)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def openapi_v2_document() -> dict[str, Any]:
    """``/openapi/v2`` as JSON: a valid Swagger 2.0 document with no paths and no definitions (see module doc)."""
    return {
        "swagger": "2.0",
        "info": {"title": _OPENAPI_TITLE, "version": _OPENAPI_VERSION},
        "paths": {},
        "definitions": {},
    }


def _pb_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _pb_bytes(field: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (strings and embedded messages)."""
    return _pb_varint(field << 3 | 2) + _pb_varint(len(payload)) + payload


def openapi_v2_protobuf() -> bytes:
    """The same document as a gnostic ``openapi_v2.Document`` message, the encoding kubectl asks for.

    Field numbers from gnostic's ``OpenAPIv2.proto``: Document.swagger = 1, Document.info = 2, Document.paths = 8,
    Document.definitions = 9; Info.title = 1, Info.version = 2.
    """
    info = _pb_bytes(1, _OPENAPI_TITLE.encode()) + _pb_bytes(2, _OPENAPI_VERSION.encode())
    return _pb_bytes(1, b"2.0") + _pb_bytes(2, info) + _pb_bytes(8, b"") + _pb_bytes(9, b"")
