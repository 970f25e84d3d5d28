"""The real kubectl against grove-sim: refused objects print kube-apiserver's ``The Pod "x" is invalid: ...``."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(not Path("/usr/bin/kubectl").exists(), reason="the kubectl binary is not installed"),
]

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def apply(kubectl: Kubectl, manifest: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return kubectl("apply", "-f", "-", input=json.dumps(manifest), check=False)


def test_apply_refuses_long_label_value_and_accepts_63(kubectl: Kubectl) -> None:
    """A 64-character label value is refused naming metadata.labels; 63 characters are fine."""
    manifest = pod("labelled")
    manifest["metadata"]["labels"] = {"app": "x" * 64}
    result = apply(kubectl, manifest)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f'The Pod "labelled" is invalid: metadata.labels: Invalid value: "{"x" * 64}": must be no more than 63 '
        "characters"
    )
    manifest["metadata"]["labels"] = {"app": "x" * 63}
    assert apply(kubectl, manifest).stdout.strip() == "pod/labelled created"


def test_apply_refuses_fractional_gpu(kubectl: Kubectl) -> None:
    """``nvidia.com/gpu: 0.5`` is refused on the limit and on the request defaulted from it; 1 is fine."""
    manifest = pod("half-gpu")
    manifest["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 0.5}}
    result = apply(kubectl, manifest)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        'The Pod "half-gpu" is invalid: ',
        '* spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
        '* spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
    ]
    manifest["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    assert apply(kubectl, manifest).stdout.strip() == "pod/half-gpu created"


def test_apply_refuses_hostname_that_is_no_dns_label(kubectl: Kubectl) -> None:
    """``spec.hostname`` longer than 63 characters is refused; a 63-character label is fine."""
    result = apply(kubectl, pod("host", hostname="h" * 64))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f'The Pod "host" is invalid: spec.hostname: Invalid value: "{"h" * 64}": must be no more than 63 characters'
    )
    assert apply(kubectl, pod("host", hostname="h" * 63)).stdout.strip() == "pod/host created"


def test_create_namespace_refuses_a_non_label_name(kubectl: Kubectl) -> None:
    """``kubectl create namespace`` (a protobuf body) gets the DNS-1123 label message."""
    result = kubectl("create", "namespace", "Team_A", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f'The Namespace "Team_A" is invalid: metadata.name: Invalid value: "Team_A": {LABEL_MSG}'
    )
    assert kubectl("create", "namespace", "team-a").stdout.strip() == "namespace/team-a created"


def test_patch_refuses_frozen_pod_fields(kubectl: Kubectl) -> None:
    """Changing a pod's hostname after create is forbidden; changing its image is allowed."""
    apply(kubectl, pod("frozen", hostname="web-0"))
    result = kubectl("patch", "pod", "frozen", "-p", json.dumps({"spec": {"hostname": "web-1"}}), check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(
        'The Pod "frozen" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    )
    image = {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}
    assert kubectl("patch", "pod", "frozen", "-p", json.dumps(image)).stdout.strip() == "pod/frozen patched"
