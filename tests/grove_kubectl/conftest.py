"""A demo-like cluster for the plugin tests: grove-sim, the CRDs, grove-operator and grove-scheduler as processes,
and the real kubectl with the plugin on its PATH (`kubectl grove` runs `.venv/bin/kubectl-grove`).

Five 8-GPU nodes, each its own rack; node-0..3 carry `node-type=gpu-compute` (what the first-API example's node
affinity asks for); pods already hold 5, 5, 1 and 2 GPUs on node-0, node-1, node-2 and node-4.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator

import pytest

from grove_sim.cluster import nodes_from_flags
from grove_sim.testing import SimCluster

from ._cluster import BIN, KUBECTL, ROOT, Run

BUSY = {0: 5, 1: 5, 2: 1, 4: 2}


def _background(node: int, gpus: int) -> str:
    limits = {"nvidia.com/gpu": str(gpus)}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"background-{node}", "namespace": "default"},
        "spec": {
            "nodeName": f"node-{node}",
            "containers": [{"name": "job", "image": "busy", "resources": {"requests": limits, "limits": limits}}],
        },
    }
    return json.dumps(pod)


@pytest.fixture(scope="module")
def grove(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The cluster with both programs running; yields `kubectl(*args, input=None, check=True)`."""
    home = tmp_path_factory.mktemp("grove")
    with SimCluster(nodes=nodes_from_flags(5, 8, "rack=5")) as sim:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBECONFIG", "HTTP_PROXY", "HTTPS_PROXY"))}
        env.update(
            KUBECONFIG=sim.kubeconfig,
            KUBECACHEDIR=str(home / "cache"),
            NO_PROXY="127.0.0.1,localhost",
            PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        )
        env.pop("NO_COLOR", None)

        def kubectl(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
            result = subprocess.run(
                [KUBECTL, *args], input=input, capture_output=True, text=True, env=env, timeout=120, check=False
            )
            if check and result.returncode != 0:
                raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
            return result

        kubectl("apply", "-f", str(ROOT / "crds"))
        kubectl("create", "namespace", "grove-system")
        for n in range(4):
            kubectl("label", "node", f"node-{n}", "node-type=gpu-compute")
        for node, gpus in BUSY.items():
            kubectl("apply", "-f", "-", input=_background(node, gpus))
        logs = (home / "programs.log").open("wb")
        flags = ["--kubeconfig", sim.kubeconfig, "--no-leader-elect", "--metrics-port", "0"]
        procs = [
            subprocess.Popen(
                [str(BIN / "grove-operator"), *flags, "--health-port", "0", "--webhook-port", "0"],
                stdout=logs,
                stderr=logs,
                env=env,
            ),
            subprocess.Popen([str(BIN / "grove-scheduler"), *flags], stdout=logs, stderr=logs, env=env),
        ]
        try:
            yield kubectl
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            logs.close()
