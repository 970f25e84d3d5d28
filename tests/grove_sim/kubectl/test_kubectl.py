"""The real kubectl (1.32 via the gcloud dispatcher) against grove-sim: CRDs, samples, get/describe/scale/wait."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grove_sim.testing import SimCluster

pytestmark = pytest.mark.kubectl

ROOT = Path(__file__).resolve().parents[3]
CRDS = ROOT / "crds"
SAMPLES = ROOT / "tests" / "fixtures" / "pcs"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def _crd_files() -> list[Path]:
    return sorted(CRDS.glob("*.yaml"))


@pytest.fixture(scope="module")
def grove_crds(kubectl: Kubectl) -> list[Path]:
    """The project's CRDs applied with kubectl."""
    files = _crd_files()
    assert files, "crds/ is empty (make crds writes it)"
    kubectl("apply", "-f", str(CRDS))
    return files


def test_apply_crds_and_every_sample(kubectl: Kubectl, grove_crds: list[Path]) -> None:
    """Every CRD is Established and every upstream sample is accepted as-is; get pcs/grove show printer columns."""
    crds = json.loads(kubectl("get", "crd", "-o", "json").stdout)["items"]
    assert {c["metadata"]["name"] for c in crds} >= {"podcliquesets.grove.io", "podgangs.scheduler.grove.io"}
    for crd in crds:
        assert {c["type"]: c["status"] for c in crd["status"]["conditions"]}["Established"] == "True"
    samples = sorted(SAMPLES.rglob("*.yaml"))
    assert samples
    for sample in samples:
        result = kubectl("apply", "-f", str(sample))
        assert "created" in result.stdout or "configured" in result.stdout or "unchanged" in result.stdout
    again = kubectl("apply", "-f", str(SAMPLES / "simple" / "simple3-explicit-startup-order.yaml"))
    assert "unchanged" in again.stdout
    table = kubectl("get", "pcs").stdout.splitlines()
    assert table[0].split()[:2] == ["NAME", "REPLICAS"]
    assert any(line.startswith("simple1 ") for line in table)
    grove = kubectl("get", "grove").stdout
    assert "podcliqueset.grove.io/simple1" in grove


def test_scale_label_cordon_describe(kubectl: Kubectl, grove_crds: list[Path]) -> None:
    """scale goes through the scale subresource; label/cordon patch nodes; describe works for pod, node and pcs."""
    kubectl("apply", "-f", str(SAMPLES / "simple" / "simple1.yaml"))
    kubectl("scale", "pcs/simple1", "--replicas=2")
    pcs = json.loads(kubectl("get", "pcs", "simple1", "-o", "json").stdout)
    assert pcs["spec"]["replicas"] == 2
    kubectl("label", "node", "node-0", "gpu=true")
    kubectl("cordon", "node-1")
    nodes = kubectl("get", "nodes", "-l", "gpu=true", "-o", "name").stdout.split()
    assert nodes == ["node/node-0"]
    assert "SchedulingDisabled" in kubectl("get", "node", "node-1").stdout
    described = kubectl("describe", "node", "node-0").stdout
    assert "Name:               node-0" in described
    assert "nvidia.com/gpu" in described
    assert "Name:         simple1" in kubectl("describe", "pcs", "simple1").stdout


def test_invalid_podcliqueset_is_refused(kubectl: Kubectl, grove_crds: list[Path]) -> None:
    """Negative replicas, an unknown startup type and missing cliques are refused naming each field."""
    manifest = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "bad"},
        "spec": {"replicas": -1, "template": {"cliqueStartupType": "Sometimes"}},
    }
    result = kubectl("apply", "-f", "-", input=json.dumps(manifest), check=False)
    assert result.returncode != 0
    assert 'The PodCliqueSet "bad" is invalid' in result.stderr
    for field in ("spec.replicas", "spec.template.cliques", "spec.template.cliqueStartupType"):
        assert field in result.stderr


def test_imperative_create_run_wait_and_wide(kubectl: Kubectl, sim: SimCluster) -> None:
    """create namespace and run (protobuf bodies) work; a bound pod turns Ready for kubectl wait; -o wide shows NODE."""
    kubectl("create", "namespace", "team-a")
    kubectl("run", "web", "--image=nginx", "-n", "team-a")
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web"},
        "target": {"kind": "Node", "name": "node-2"},
    }
    kubectl("create", "-n", "team-a", "-f", "-", input=json.dumps(binding))
    kubectl("wait", "--for=condition=Ready", "pod/web", "-n", "team-a", "--timeout=20s")
    wide = kubectl("get", "pods", "-n", "team-a", "-o", "wide").stdout.splitlines()
    assert "NODE" in wide[0]
    assert "node-2" in wide[1]
    assert "Running" in wide[1]
    kubectl(
        "apply",
        "--server-side",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "ssa", "namespace": "team-a"},
                "data": {"k": "v"},
            }
        ),
    )
    assert json.loads(kubectl("get", "cm", "ssa", "-n", "team-a", "-o", "json").stdout)["data"] == {"k": "v"}
    assert "Node:             node-2" in kubectl("describe", "pod", "web", "-n", "team-a").stdout


def test_get_watch_sees_changes(kubectl: Kubectl, kubectl_env: dict[str, str]) -> None:
    """kubectl get -w prints a row for an object created after the watch started."""
    kubectl("create", "namespace", "watched")
    kubectl("create", "configmap", "existing", "-n", "watched")
    proc = subprocess.Popen(
        ["/usr/bin/kubectl", "get", "configmaps", "-n", "watched", "-w", "--request-timeout=20s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kubectl_env,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("existing"):
                break
        kubectl("create", "configmap", "seen-by-watch", "-n", "watched")
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("seen-by-watch"):
                break
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert lines[0].split() == ["NAME", "DATA", "AGE"]
    assert lines[-1].startswith("seen-by-watch")


def test_delete_cascades_to_owned_objects(kubectl: Kubectl, grove_crds: list[Path]) -> None:
    """Deleting a PodCliqueSet deletes a ConfigMap that names it as owner."""
    kubectl("apply", "-f", str(SAMPLES / "simple" / "simple1.yaml"))
    pcs: dict[str, Any] = json.loads(kubectl("get", "pcs", "simple1", "-o", "json").stdout)
    owner = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "name": "simple1",
        "uid": pcs["metadata"]["uid"],
    }
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "child-of-pcs", "ownerReferences": [owner]}}
    kubectl("create", "-f", "-", input=json.dumps(child))
    kubectl("delete", "pcs", "simple1")
    for _ in range(100):
        if "child-of-pcs" not in kubectl("get", "cm", "-o", "name").stdout:
            break
        time.sleep(0.05)
    assert "child-of-pcs" not in kubectl("get", "cm", "-o", "name").stdout
