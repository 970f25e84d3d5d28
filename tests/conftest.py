"""Shared fixtures: a simulated cluster per test module, the real kubectl against it, a kubernetes-asyncio client."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from grove_sim.cluster import nodes_from_flags
from grove_sim.testing import SimCluster

KUBECTL = "/usr/bin/kubectl"

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """A fresh simulated cluster (4 nodes with 8 GPUs each, block/rack topology) shared by one test module."""
    with SimCluster(nodes=nodes_from_flags(4, 8, "block=2,rack=4")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def kubectl_env(sim: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for kubectl: the sim's kubeconfig and a private discovery cache."""
    env = dict(os.environ)
    env["KUBECONFIG"] = sim.kubeconfig
    env["KUBECACHEDIR"] = str(tmp_path_factory.mktemp("kubecache"))
    env["NO_PROXY"] = "127.0.0.1,localhost"
    env.pop("HTTP_PROXY", None)
    env.pop("HTTPS_PROXY", None)
    return env


@pytest.fixture(scope="module")
def kubectl(kubectl_env: dict[str, str]) -> Kubectl:
    """Run the real kubectl: ``kubectl("get", "pods", input=None, check=True, timeout=60)``."""

    def run(
        *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [KUBECTL, *args], input=input, capture_output=True, text=True, env=kubectl_env, timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
            )
        return result

    return run


@pytest.fixture
async def api_client(sim: SimCluster) -> AsyncIterator[client.ApiClient]:
    """A kubernetes-asyncio ApiClient for the sim built from a private Configuration (never the global default)."""
    configuration = client.Configuration()
    await config.load_kube_config(config_file=sim.kubeconfig, client_configuration=configuration)
    api = client.ApiClient(configuration=configuration)
    try:
        yield api
    finally:
        await api.close()


@pytest.fixture
def repo_root() -> Path:
    """The repository root (for crds/ and samples)."""
    return Path(__file__).resolve().parent.parent
