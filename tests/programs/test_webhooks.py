"""grove-operator as a process serves its webhooks on the port asked for and registers them; a taken port is one
line and exit code 2, like the other listeners."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from grove_sim.testing import SimCluster

from ._proc import clean_env, run_to_exit, running

pytestmark = pytest.mark.slow

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def env(cluster: SimCluster, kubectl: Kubectl, tmp_path: Path) -> dict[str, str]:
    """$KUBECONFIG for the programs, and the namespace the certificate Secret goes to."""
    kubectl("create", "namespace", "grove-system", check=False)
    config = tmp_path / "kubeconfig"
    shutil.copyfile(cluster.kubeconfig, config)
    return clean_env(tmp_path, KUBECONFIG=str(config))


async def test_any_free_port_and_a_bad_apply_refused(env: dict[str, str], kubectl: Kubectl) -> None:
    """``--webhook-port 0`` listens on a free loopback port, logged like the other listeners; the configurations
    point there, so a bad PodCliqueSet is refused by kubectl as soon as the operator says so; afterwards the
    operator exits 0."""
    args = ("--no-leader-elect", "--health-port", "0", "--metrics-port", "0", "--webhook-port", "0")
    async with running("grove-operator", *args, env=env) as proc:
        listening = await proc.event("listening", serves="webhooks")
        await proc.event("webhooks registered")
        port = listening["port"]
        assert listening["address"] == f"127.0.0.1:{port}"
        hooks = kubectl("get", "validatingwebhookconfiguration", "podcliqueset-validating-webhook", "-o", "yaml").stdout
        assert f"url: https://127.0.0.1:{port}/webhooks/validate-podcliqueset" in hooks
        bad = kubectl("apply", "-f", "-", check=False, input=BAD)
        assert bad.returncode != 0
        assert "spec.template.cliques[0].spec.minAvailable" in bad.stderr


async def test_taken_webhook_port_is_one_line_and_exit_2(env: dict[str, str], taken: int) -> None:
    """A webhook port in use ends the operator with one line naming it and exit code 2."""
    code, lines = await run_to_exit(
        "grove-operator", "--no-leader-elect", "--health-port", "0", "--metrics-port", "0",
        "--webhook-port", str(taken), "--log-level", "ERROR", env=env,
    )  # fmt: skip
    assert code == 2
    assert lines == [f"grove-operator: cannot listen on 127.0.0.1:{taken} for webhooks: Address already in use"]


BAD = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: bad}
spec:
  replicas: 1
  template:
    cliques:
      - name: a
        spec: {roleName: a, replicas: 1, minAvailable: 2, podSpec: {containers: [{name: c, image: busybox}]}}
"""
