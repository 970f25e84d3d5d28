"""Deployments and ReplicaSets through the real kubectl: create, scale, roll out, restart, roll back, delete."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_sim.controllers.workloads.owned import PODS, active, available
from grove_sim.server import SimServer
from grove_sim.storage.store import Event, Listener
from grove_sim.testing import SimCluster

pytestmark = pytest.mark.kubectl

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def _json(kubectl: Kubectl, *args: str) -> Any:
    return json.loads(kubectl(*args, "-o", "json").stdout)


def _pods(kubectl: Kubectl, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = _json(kubectl, "get", "pods", "-n", namespace, "-l", selector)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _wait_gone(kubectl: Kubectl, namespace: str, *kinds: str) -> None:
    for _ in range(300):
        if not any(_json(kubectl, "get", kind, "-n", namespace)["items"] for kind in kinds):
            return
        time.sleep(0.02)
    raise AssertionError(f"{kinds} still present in {namespace}")


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    name = f"d-{time.monotonic_ns() % 10**9}"
    kubectl("create", "namespace", name)
    return name


def test_create_scale_rollout_restart_delete(kubectl: Kubectl, ns: str) -> None:
    """A plain Deployment runs (the default scheduler binds its pods), scales both ways, rolls out a new image and
    a restart with new pods each time, and deleting it removes its ReplicaSets and pods."""
    kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3", "-n", ns)
    assert "successfully rolled out" in kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=30s").stdout
    first = {p["metadata"]["name"] for p in _pods(kubectl, ns, "app=web")}
    assert len(first) == 3
    deployment = _json(kubectl, "get", "deployment", "web", "-n", ns)
    assert deployment["status"]["availableReplicas"] == 3
    assert {c["type"]: c["reason"] for c in deployment["status"]["conditions"]} == {
        "Available": "MinimumReplicasAvailable",
        "Progressing": "NewReplicaSetAvailable",
    }
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"

    kubectl("scale", "deployment/web", "--replicas=5", "-n", ns)
    kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=30s")
    assert len(_pods(kubectl, ns, "app=web")) == 5
    kubectl("scale", "deployment/web", "--replicas=2", "-n", ns)
    kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=30s")
    assert len(_pods(kubectl, ns, "app=web")) == 2

    kubectl("set", "image", "deployment/web", "nginx=nginx:1.27", "-n", ns)
    kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=30s")
    images = {p["spec"]["containers"][0]["image"] for p in _pods(kubectl, ns, "app=web")}
    assert images == {"nginx:1.27"}
    before_restart = {p["metadata"]["name"] for p in _pods(kubectl, ns, "app=web")}
    kubectl("rollout", "restart", "deployment/web", "-n", ns)
    kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=30s")
    after_restart = _pods(kubectl, ns, "app=web")
    assert len(after_restart) == 2
    assert not before_restart & {p["metadata"]["name"] for p in after_restart}
    assert all("kubectl.kubernetes.io/restartedAt" in p["metadata"]["annotations"] for p in after_restart)
    history = kubectl("rollout", "history", "deployment/web", "-n", ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2", "3"]

    kubectl("rollout", "undo", "deployment/web", "--to-revision=1", "-n", ns)
    kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=30s")
    assert {p["spec"]["containers"][0]["image"] for p in _pods(kubectl, ns, "app=web")} == {"nginx"}
    replica_sets = _json(kubectl, "get", "rs", "-n", ns)["items"]
    assert len(replica_sets) == 3
    assert all(rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment" for rs in replica_sets)

    table = kubectl("get", "deployment", "web", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1].split()[:4] == ["web", "2/2", "2", "2"]

    kubectl("delete", "deployment", "web", "-n", ns)
    _wait_gone(kubectl, ns, "replicasets", "pods")


def test_recreate_strategy_stops_old_pods_first(kubectl: Kubectl, ns: str) -> None:
    """With Recreate no pod of the new template exists while a pod of the old one does."""
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "batch", "namespace": ns},
        "spec": {
            "replicas": 2,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app": "batch"}},
            "template": {
                "metadata": {"labels": {"app": "batch"}},
                "spec": {"containers": [{"name": "c", "image": "a"}]},
            },
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(manifest))
    kubectl("rollout", "status", "deployment/batch", "-n", ns, "--timeout=30s")
    kubectl("set", "image", "deployment/batch", "c=b", "-n", ns)
    kubectl("rollout", "status", "deployment/batch", "-n", ns, "--timeout=30s")
    assert {p["spec"]["containers"][0]["image"] for p in _pods(kubectl, ns, "app=batch")} == {"b"}
    events = _json(kubectl, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=batch")["items"]
    messages = [e["message"] for e in sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))]
    scaled_down = next(i for i, m in enumerate(messages) if "from 2 to 0" in m)
    assert any("Scaled up" in m and "from 0 to 2" in m for m in messages[scaled_down + 1 :])


def test_invalid_deployments_are_refused_with_field_paths(kubectl: Kubectl, ns: str) -> None:
    """A selector that does not select the template, both rolling bounds zero, or a changed selector: 422s
    naming the field, as kube-apiserver words them."""
    bad = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bad", "namespace": ns},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "other"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    result = kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert result.returncode != 0
    mismatch = 'map[string]string{"app":"other"}: `selector` does not match template `labels`'
    assert f"spec.template.metadata.labels: Invalid value: {mismatch}" in result.stderr
    assert (
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
        in result.stderr
    )
    missing = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "namespace": ns}, "spec": {}}
    result = kubectl("apply", "-f", "-", input=json.dumps(missing), check=False)
    assert "spec.selector: Required value" in result.stderr
    kubectl("create", "deployment", "keep", "--image=i", "-n", ns)
    result = kubectl(
        "patch", "deployment", "keep", "-n", ns, "--type=merge", "-p",
        json.dumps({"spec": {"selector": {"matchLabels": {"app": "keep", "x": "y"}},
                             "template": {"metadata": {"labels": {"app": "keep", "x": "y"}}}}}),
        check=False,
    )  # fmt: skip
    assert "spec.selector: Invalid value" in result.stderr
    assert "field is immutable" in result.stderr


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(replicas=st.integers(1, 5), surge=st.integers(0, 2), unavailable=st.integers(0, 2))
def test_rollout_bounds_hold_in_every_committed_state(
    kubectl: Kubectl, sim: SimCluster, replicas: int, surge: int, unavailable: int
) -> None:
    """During a real rollout (kubectl set image), every state the server commits has at most replicas + maxSurge
    active pods and at least replicas - maxUnavailable available ones."""
    if surge == unavailable == 0:
        unavailable = 1
    ns = f"r-{time.monotonic_ns() % 10**9}"
    kubectl("create", "namespace", ns)
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "app", "namespace": ns},
        "spec": {
            "replicas": replicas,
            "strategy": {"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
            "selector": {"matchLabels": {"app": "app"}},
            "template": {"metadata": {"labels": {"app": "app"}}, "spec": {"containers": [{"name": "c", "image": "a"}]}},
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(manifest))
    kubectl("rollout", "status", "deployment/app", "-n", ns, "--timeout=30s")
    seen: list[tuple[int, int]] = []

    def observe(server: SimServer) -> Listener:
        def listener(event: Event) -> None:
            if event.key == PODS and event.obj["metadata"].get("namespace") == ns:
                pods = server.store.list(PODS, ns)
                seen.append((sum(1 for p in pods if active(p)), sum(1 for p in pods if available(p))))

        server.store.add_listener(listener)
        return listener

    listener = sim.call(observe)
    try:
        kubectl("set", "image", "deployment/app", "c=b", "-n", ns)
        kubectl("rollout", "status", "deployment/app", "-n", ns, "--timeout=30s")
    finally:
        sim.call(lambda server: server.store.remove_listener(listener))
    assert seen
    assert max(count for count, _ in seen) <= replicas + surge
    assert min(ready for _, ready in seen) >= replicas - min(unavailable, replicas)
    kubectl("delete", "namespace", ns, "--wait=false")
