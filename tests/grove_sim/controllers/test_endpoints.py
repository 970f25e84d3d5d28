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


async def test_a_selector_of_several_labels_and_services_coming_and_going() -> None:
    """Services are found by one label pair of their selector; the pod must still match all of it, and a Service
    deleted and created again with another selector is followed."""
    core, controller = make()
    create(core, "services", {"metadata": {"name": "svc"}, "spec": {"selector": {"app": "a", "role": "w"},
           "ports": [{"port": 80}]}})  # fmt: skip
    create(core, "pods", running("p1", "127.3.0.1", {"app": "a", "role": "w"}))
    create(core, "pods", running("p2", "127.3.0.2", {"app": "a", "role": "x"}))
    await settle(controller)
    assert ips(core) == ["127.3.0.1"]
    update(core, "pods", "p1", lambda p: {**p, "metadata": {**p["metadata"], "labels": {"role": "w"}}})
    await settle(controller)
    assert ips(core) == []
    info = core.registry.get("", "v1", "services")
    assert info is not None
    core.delete(info, "ns", "svc", {})
    create(core, "services", {"metadata": {"name": "svc"}, "spec": {"selector": {"role": "w"},
           "ports": [{"port": 80}]}})  # fmt: skip
    await settle(controller)
    assert ips(core) == ["127.3.0.1"]
    update(core, "pods", "p2", lambda p: {**p, "metadata": {**p["metadata"], "labels": {"role": "w"}}})
    await settle(controller)
    assert ips(core) == ["127.3.0.1", "127.3.0.2"]


async def test_a_pod_event_looks_only_at_services_sharing_a_label_with_it(monkeypatch: Any) -> None:
    """With 300 Services in the namespace, each selecting its own pods by a label of their own and one they all
    share (as Grove's headless Services do), a pod event matches the pod against the Services filed under its
    labels, not all 300 (the cost of every pod write in grove-sim)."""
    from grove_sim.machinery import label_selectors

    core, controller = make()
    for i in range(300):
        create(core, "services", {"metadata": {"name": f"svc-{i}"}, "spec": {"selector": {"app": f"a{i}", "aa": "g"},
               "ports": [{"port": 80}]}})  # fmt: skip
    calls = 0
    original = label_selectors.LabelSelector.matches

    def counting(self: Any, labels: Any) -> bool:
        nonlocal calls
        calls += 1
        return original(self, labels)

    monkeypatch.setattr(label_selectors.LabelSelector, "matches", counting)
    create(core, "pods", running("p", "127.4.0.1", {"app": "a7", "aa": "g", "team": "t"}))
    # two writes (the pod, then its status); at each its own Service and at most the first one created, which was
    # filed under the shared pair before any other Service existed
    assert calls <= 4
    await settle(controller)
    endpoints = core.store.get(("", "endpoints"), "ns", "svc-7")
    assert endpoints is not None
    assert [a["ip"] for s in endpoints["subsets"] for a in s["addresses"]] == ["127.4.0.1"]
