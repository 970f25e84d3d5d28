"""``kind: List`` manifests with the real kubectl: ``apply -f list.yaml`` and ``get -o yaml | apply -f -``.

kubectl never validates a ``v1 List`` server-side: it validates it client-side against ``/openapi/v2`` (protobuf),
so these tests fail with "could not find the requested resource" when the sim does not serve that document.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.kubectl

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
NAMESPACE = "lists"


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "list-demo"}},
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]},
    }


def _list(*items: dict[str, Any]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": list(items)})


def _pods(kubectl: Kubectl) -> dict[str, dict[str, Any]]:
    listed = json.loads(kubectl("get", "pods", "-n", NAMESPACE, "-o", "json").stdout)
    assert listed["kind"] == "List"
    return {p["metadata"]["name"]: p for p in listed["items"]}


def test_apply_list_file(kubectl: Kubectl, tmp_path: Path) -> None:
    """Every item of a List file is created (namespace first), and a second apply reports each one unchanged."""
    manifest = tmp_path / "list.yaml"
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": NAMESPACE}}
    manifest.write_text(
        _list(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            {**config, "data": {"mode": "fast"}},
            _pod("list-a"),
            _pod("list-b"),
        )
    )
    created = kubectl("apply", "-f", str(manifest)).stdout.splitlines()
    assert created == [
        f"namespace/{NAMESPACE} created",
        "configmap/settings created",
        "pod/list-a created",
        "pod/list-b created",
    ]
    stored = json.loads(kubectl("get", "configmap", "settings", "-n", NAMESPACE, "-o", "json").stdout)
    assert stored["data"] == {"mode": "fast"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]
    assert set(_pods(kubectl)) == {"list-a", "list-b"}
    again = kubectl("apply", "-f", str(manifest)).stdout.splitlines()
    assert all(line.endswith(" unchanged") for line in again), again
    manifest.write_text(_list({**config, "data": {"mode": "safe"}}))
    assert kubectl("apply", "-f", str(manifest)).stdout.strip() == "configmap/settings configured"
    stored = json.loads(kubectl("get", "configmap", "settings", "-n", NAMESPACE, "-o", "json").stdout)
    assert stored["data"] == {"mode": "safe"}


def test_get_yaml_apply_round_trip(kubectl: Kubectl) -> None:
    """``kubectl get pods -o yaml | kubectl apply -f -`` re-applies live pods (bound, with status) without change."""
    kubectl("run", "imperative", "--image=busybox", "-n", NAMESPACE)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "list-a"}, "target": {"name": "node-1"}}
    kubectl("create", "-n", NAMESPACE, "-f", "-", input=json.dumps(binding))
    kubectl("wait", "--for=condition=Ready", "pod/list-a", "-n", NAMESPACE, "--timeout=20s")
    before = _pods(kubectl)
    exported = kubectl("get", "pods", "-n", NAMESPACE, "-o", "yaml").stdout
    assert yaml.safe_load(exported)["kind"] == "List"
    result = kubectl("apply", "-f", "-", input=exported)
    lines = sorted(result.stdout.splitlines())
    assert lines == ["pod/imperative configured", "pod/list-a configured", "pod/list-b configured"], result.stdout
    assert "missing the kubectl.kubernetes.io/last-applied-configuration annotation" in result.stderr
    after = _pods(kubectl)
    assert set(after) == set(before)
    for name, pod in after.items():
        assert pod["metadata"]["uid"] == before[name]["metadata"]["uid"]
        assert pod["spec"] == before[name]["spec"]
        assert "kubectl.kubernetes.io/last-applied-configuration" in pod["metadata"]["annotations"]
    assert after["list-a"]["spec"]["nodeName"] == "node-1"
    assert after["list-a"]["status"]["phase"] == "Running"
    second = kubectl("apply", "-f", "-", input=kubectl("get", "pods", "-n", NAMESPACE, "-o", "yaml").stdout)
    assert second.returncode == 0
    assert len(second.stdout.splitlines()) == 3
