"""The built-in default scheduler through the real kubectl: it binds only its own pods, honours node selectors,
required node affinity, taints and resources, and explains a refusal as kube-scheduler does."""

from __future__ import annotations

import json
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_sim.machinery.quantity import parse_quantity

pytestmark = pytest.mark.kubectl

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
_COUNTER = [0]


def _node(name: str, cpu: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
        },
    }


def _pod(name: str, namespace: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}], **spec},
    }


def _apply(kubectl: Kubectl, *objects: dict[str, Any]) -> None:
    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def _settled(
    kubectl: Kubectl, namespace: str, count: int, ignore: frozenset[str] | set[str] = frozenset()
) -> list[dict[str, Any]]:
    """The namespace's ``count`` pods once each (but those in ``ignore``) is bound or marked unschedulable."""
    for _ in range(500):
        pods = json.loads(kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
        done = [
            p for p in pods
            if p["spec"].get("nodeName")
            or any(c.get("reason") == "Unschedulable" for c in p.get("status", {}).get("conditions") or [])
        ]  # fmt: skip
        if len(pods) == count and len(done) == count - len(ignore):
            return pods
        time.sleep(0.02)
    raise AssertionError(f"pods of {namespace} never settled")


def _namespace(kubectl: Kubectl) -> str:
    _COUNTER[0] += 1
    name = f"s-{_COUNTER[0]}-{time.monotonic_ns() % 10**6}"
    kubectl("create", "namespace", name)
    return name


def test_selectors_affinity_taints_and_other_schedulers(kubectl: Kubectl) -> None:
    """Each constraint steers its pod to the one node that satisfies it; a pod naming another scheduler stays
    pending and untouched."""
    ns = _namespace(kubectl)
    _apply(
        kubectl,
        _node("sel-a", "4", {"zone": "a"}),
        _node("sel-b", "4", {"zone": "b", "tier": "7"}),
        _node("sel-t", "4", {"zone": "t"}, [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
    )
    only_t = {"nodeSelector": {"zone": "t"}}
    _apply(
        kubectl,
        _pod("by-selector", ns, "1", nodeSelector={"zone": "b"}),
        _pod("by-affinity", ns, "1", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["5"]}]}]}}}),
        _pod("tolerates", ns, "1", tolerations=[{"key": "gpu", "operator": "Exists"}], **only_t),
        _pod("intolerant", ns, "1", **only_t),
        _pod("grove", ns, "1", schedulerName="grove-scheduler"),
    )  # fmt: skip
    pods = {p["metadata"]["name"]: p for p in _settled(kubectl, ns, 5, ignore={"grove"})}
    assert pods["by-selector"]["spec"]["nodeName"] == "sel-b"
    assert pods["by-affinity"]["spec"]["nodeName"] == "sel-b"
    assert pods["tolerates"]["spec"]["nodeName"] == "sel-t"
    assert "nodeName" not in pods["intolerant"]["spec"]
    assert "nodeName" not in pods["grove"]["spec"]
    assert "conditions" not in pods["grove"]["status"]
    condition = next(c for c in pods["intolerant"]["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    total = int(condition["message"].split("/")[1].split()[0])
    assert condition["message"].startswith(
        f"0/{total} nodes are available: 1 node(s) had untolerated taint {{gpu: true}}, "
    )
    assert f"{total - 1} node(s) didn't match Pod's node affinity/selector." in condition["message"]
    assert condition["message"].endswith(
        f"preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
    )
    events = kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.name=intolerant").stdout
    assert "FailedScheduling" in events
    assert "default-scheduler" in kubectl("describe", "pod", "intolerant", "-n", ns).stdout
    toleration = {"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}}
    kubectl("patch", "pod", "intolerant", "-n", ns, "--type=merge", "-p", json.dumps(toleration))
    node = ""
    for _ in range(500):
        node = kubectl("get", "pod", "intolerant", "-n", ns, "-o", "jsonpath={.spec.nodeName}").stdout
        if node:
            break
        time.sleep(0.02)
    assert node == "sel-t"
    kubectl("delete", "node", "sel-a", "sel-b", "sel-t")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    capacities=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    requests=st.lists(st.sampled_from(["250m", "500m", "1", "1500m", "2", "3"]), min_size=1, max_size=10),
)
def test_no_node_is_overcommitted(kubectl: Kubectl, capacities: list[int], requests: list[str]) -> None:
    """Whatever pods arrive, the CPU requested on each node stays within its allocatable, and a pod is refused
    only when it fits on no node."""
    ns = _namespace(kubectl)
    nodes = [_node(f"{ns}-n{i}", str(cpu), {"pool": ns}) for i, cpu in enumerate(capacities)]
    _apply(kubectl, *nodes)
    _apply(kubectl, *[_pod(f"p{i}", ns, cpu, nodeSelector={"pool": ns}) for i, cpu in enumerate(requests)])
    pods = _settled(kubectl, ns, len(requests))
    used: defaultdict[str, Fraction] = defaultdict(Fraction)
    for pod in pods:
        if pod["spec"].get("nodeName"):
            used[pod["spec"]["nodeName"]] += parse_quantity(
                pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            )
    for node, cpu in zip(nodes, capacities, strict=True):
        assert used[node["metadata"]["name"]] <= cpu
    for pod in pods:
        if not pod["spec"].get("nodeName"):
            need = parse_quantity(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"])
            assert all(used[n["metadata"]["name"]] + need > cpu for n, cpu in zip(nodes, capacities, strict=True))
    kubectl("delete", "namespace", ns, "--wait=false")
    kubectl("delete", "node", *[n["metadata"]["name"] for n in nodes])
