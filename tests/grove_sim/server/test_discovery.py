"""Discovery, OpenAPI, version and health endpoints as kubectl and kubernetes-asyncio read them."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from grove_sim.http.discovery import AGGREGATED_V2, OPENAPI_V2_PROTOBUF
from grove_sim.testing import SimCluster


async def _get(sim: SimCluster, path: str, accept: str = "application/json") -> tuple[int, str, Any]:
    async with aiohttp.ClientSession() as session, session.get(sim.url + path, headers={"Accept": accept}) as resp:
        text = await resp.text()
        body = json.loads(text) if resp.content_type.startswith("application/json") else text
        return resp.status, resp.headers.get("Content-Type", ""), body


async def test_version_and_health(sim: SimCluster) -> None:
    """/version reports minor 32 (it picks kubectl 1.32) and health endpoints answer ok."""
    status, _, body = await _get(sim, "/version")
    assert status == 200
    assert body["major"] == "1"
    assert body["minor"] == "32"
    for path in ("/healthz", "/readyz", "/livez"):
        assert (await _get(sim, path))[2] == "ok"


async def test_legacy_and_aggregated_discovery(sim: SimCluster, widget_crd: dict[str, Any]) -> None:
    """Legacy lists carry subresources and shortNames; aggregated discovery only with its exact media type."""
    _, _, core = await _get(sim, "/api/v1")
    names = {r["name"]: r for r in core["resources"]}
    assert "pods/binding" in names
    assert "pods/status" in names
    assert names["pods"]["shortNames"] == ["po"]
    _, _, widgets = await _get(sim, "/apis/example.dev/v1")
    scale = next(r for r in widgets["resources"] if r["name"] == "widgets/scale")
    assert scale["group"] == "autoscaling"
    assert scale["kind"] == "Scale"
    accept = f"{AGGREGATED_V2},application/json"
    _, content_type, aggregated = await _get(sim, "/apis", accept)
    assert content_type == AGGREGATED_V2
    groups = {item["metadata"]["name"] for item in aggregated["items"]}
    assert "example.dev" in groups
    assert "apiextensions.k8s.io" in groups
    _, content_type, legacy = await _get(sim, "/apis")
    assert legacy["kind"] == "APIGroupList"
    assert content_type.startswith("application/json")


async def test_openapi_v3(sim: SimCluster, widget_crd: dict[str, Any]) -> None:
    """The OpenAPI index lists every group-version; the per-GV doc has PATCH with the GVK and fieldValidation."""
    _, _, index = await _get(sim, "/openapi/v3")
    assert "api/v1" in index["paths"]
    assert "apis/example.dev/v1" in index["paths"]
    _, _, doc = await _get(sim, index["paths"]["apis/example.dev/v1"]["serverRelativeURL"])
    patch = doc["paths"]["/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "example.dev", "version": "v1", "kind": "Widget"}
    assert any(p["name"] == "fieldValidation" for p in patch["parameters"])


async def test_openapi_v2_protobuf_and_json(sim: SimCluster) -> None:
    """/openapi/v2 answers kubectl's protobuf Accept with a gnostic Document, and JSON clients with Swagger 2.0."""
    accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    url = sim.url + "/openapi/v2"
    async with aiohttp.ClientSession() as session, session.get(url, headers={"Accept": accept}) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == OPENAPI_V2_PROTOBUF
        raw = await resp.read()
    # Document.swagger (field 1) = "2.0", then Document.info (field 2) holding title (1) and version (2).
    assert raw.startswith(b"\x0a\x032.0\x12")
    assert b"grove-sim" in raw
    assert b"v1.32.5" in raw
    status, content_type, doc = await _get(sim, "/openapi/v2")
    assert status == 200
    assert content_type.startswith("application/json")
    assert doc["swagger"] == "2.0"
    assert doc["definitions"] == {}


async def test_errors_are_status_objects(sim: SimCluster) -> None:
    """Unknown resources and bad booleans answer with a metav1.Status."""
    status, _, body = await _get(sim, "/apis/nope.dev/v1/things")
    assert status == 404
    assert body["kind"] == "Status"
    assert body["reason"] == "NotFound"
    status, _, body = await _get(sim, "/api/v1/pods?watch=maybe")
    assert status == 400
    assert body["reason"] == "BadRequest"
