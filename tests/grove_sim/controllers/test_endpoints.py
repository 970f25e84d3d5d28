"""The Endpoints controller follows label changes both ways (a pod that stops matching leaves), Service selector
changes, and caps an Endpoints object at 1,000 addresses as kube-controller-manager does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from grove_sim.controllers.endpoints import MAX_ENDPOINTS, EndpointsController
from grove_sim.registry.core import Core
from grove_sim.registry.resources import Registry
from grove_sim.storage.store import Store

Obj = dict[str, Any]


def make() -> tuple[Core, EndpointsController]:
    core = Core(Store(), Registry())
    controller = EndpointsController(core)
    info = core.registry.get("", "v1", "namespaces")
    assert info is not None
    core.create(info, "", {"metadata": {"name": "ns"}})
    return core, controller


def create(core: Core, plural: str, obj: Obj) -> Obj:
    """Create ``obj``, then write its status (a create drops it, as kube-apiserver does for pods)."""
    info = core.registry.get("", "v1", plural)
    assert info is not None
    created = core.create(info, "ns", obj)
    if "status" in obj:
        created = core.replace(info, created, {**created, "status": obj["status"]}, subresource="status")
    return created


def update(core: Core, plural: str, name: str, change: Callable[[Obj], Obj]) -> None:
    info = core.registry.get("", "v1", plural)
    assert info is not None
    current = core.store.get(("", plural), "ns", name)
    assert current is not None
    core.replace(info, current, change(current))


def running(name: str, ip: str, labels: Obj) -> Obj:
    ready = {"type": "Ready", "status": "True"}
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"name": "http", "containerPort": 80}]}]},
            "status": {"phase": "Running", "podIP": ip, "conditions": [ready]}}  # fmt: skip


async def settle(controller: EndpointsController) -> None:
    controller.queue.start()
    while not controller.queue.idle():  # noqa: ASYNC110 - the queue has no event to await
        await asyncio.sleep(0.01)
    await controller.queue.stop()


def ips(core: Core) -> list[str]:
    endpoints = core.store.get(("", "endpoints"), "ns", "svc") or {}
    return sorted(a["ip"] for s in endpoints.get("subsets") or [] for a in s.get("addresses") or [])


async def test_pods_join_and_leave_with_their_labels_and_the_selector() -> None:
    core, controller = make()
    create(core, "services", {"metadata": {"name": "svc"}, "spec": {"selector": {"app": "a"},
           "ports": [{"port": 8080, "targetPort": "http"}]}})  # fmt: skip
    create(core, "pods", running("p1", "127.1.0.1", {"app": "a"}))
    create(core, "pods", running("p2", "127.1.0.2", {"app": "b"}))
    await settle(controller)
    assert ips(core) == ["127.1.0.1"]
    update(core, "pods", "p1", lambda p: {**p, "metadata": {**p["metadata"], "labels": {"app": "b"}}})
    await settle(controller)
    assert ips(core) == []
    update(core, "services", "svc", lambda svc: {**svc, "spec": {**svc["spec"], "selector": {"app": "b"}}})
    await settle(controller)
    assert ips(core) == ["127.1.0.1", "127.1.0.2"]
    endpoints = core.store.get(("", "endpoints"), "ns", "svc")
    assert endpoints is not None
    assert endpoints["subsets"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]


async def test_endpoints_hold_at_most_a_thousand_addresses() -> None:
    core, controller = make()
    create(core, "services", {"metadata": {"name": "svc"}, "spec": {"selector": {"app": "a"},
           "ports": [{"port": 80}]}})  # fmt: skip
    for i in range(MAX_ENDPOINTS + 5):
        create(core, "pods", running(f"p{i:04d}", f"127.2.{i // 254}.{1 + i % 254}", {"app": "a"}))
    await settle(controller)
    endpoints = core.store.get(("", "endpoints"), "ns", "svc")
    assert endpoints is not None
    assert len(ips(core)) == MAX_ENDPOINTS
    assert endpoints["metadata"]["annotations"] == {"endpoints.kubernetes.io/over-capacity": "truncated"}
    slices = core.store.list(("discovery.k8s.io", "endpointslices"), "ns")
    assert len(slices[0]["endpoints"]) == MAX_ENDPOINTS + 5
