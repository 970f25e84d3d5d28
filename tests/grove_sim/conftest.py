"""Fixtures shared by the grove-sim tests that talk to a running simulated cluster: a namespace, a small CRD, a
polling helper."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from kubernetes_asyncio import client

from grove_sim.testing import SimCluster

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.dev"},
    "spec": {
        "group": "example.dev",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer", "minimum": 0, "default": 1},
                                    "color": {"type": "string", "enum": ["red", "blue"]},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer"},
                                    "selector": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
async def namespace(api_client: client.ApiClient) -> str:
    """A fresh namespace for one test."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    await client.CoreV1Api(api_client).create_namespace({"metadata": {"name": name}})
    return name


@pytest.fixture(scope="module")
def widget_crd(sim: SimCluster) -> dict[str, Any]:
    """The Widget CRD installed once per module (through the store, as kubectl apply would)."""

    def install(server: Any) -> dict[str, Any]:
        info = server.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        existing = server.store.get(info.key, "", "widgets.example.dev")
        return existing if existing is not None else server.core.create(info, "", WIDGET_CRD)

    return sim.call(install)


T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T | None]], *, attempts: int = 500, delay: float = 0.02) -> T:
    """Poll ``probe`` until it returns something truthy; fail the test if it never does."""
    for _ in range(attempts):
        value = await probe()
        if value:
            return value
        await asyncio.sleep(delay)
    raise AssertionError("condition never became true")


@pytest.fixture
def poll() -> Callable[..., Awaitable[Any]]:
    """The ``eventually`` polling helper."""
    return eventually
