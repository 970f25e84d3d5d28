"""Shared fixtures: a simulated cluster per test module, the real kubectl against it, a kubernetes-asyncio client;
the ``slow`` marker's rules and the leaked-task guard every async test runs under.

``slow`` marks what ``make test-fast`` leaves out: tests under an ``e2e/`` or ``kubectl/`` folder and tests marked
``kubectl`` (they start clusters, programs or kubectl), plus tests that carry ``@pytest.mark.slow`` themselves
(heavy property tests, program and demo tests, benchmark smoke runs).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from kubernetes_asyncio import client, config

from grove_runtime.client import KubeClient
from grove_runtime.resources import NAMESPACES
from grove_sim.cluster import nodes_from_flags
from grove_sim.testing import SimCluster, console_script

KUBECTL = "/usr/bin/kubectl"

settings.register_profile("fast", max_examples=20)
"""``make test-fast`` (``--hypothesis-profile=fast``): fewer examples for properties that do not set their own."""

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """A fresh simulated cluster (4 nodes with 8 GPUs each, block/rack topology) shared by one test module; the
    `grove-initc` image runs as the installed program, so pods that start after others wait as in a cluster."""
    initc = {"grove-initc": console_script("grove-initc")}
    with SimCluster(nodes=nodes_from_flags(4, 8, "block=2,rack=4"), exec_images=initc) as cluster:
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
async def kube(sim: SimCluster) -> AsyncIterator[KubeClient]:
    """A grove_runtime client for the module's sim, with the administrator's kubeconfig."""
    client = await KubeClient.from_kubeconfig(sim.kubeconfig)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def namespace(kube: KubeClient) -> str:
    """A fresh namespace per test."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.fixture
def repo_root() -> Path:
    """The repository root (for crds/ and samples)."""
    return Path(__file__).resolve().parent.parent


TESTS = Path(__file__).resolve().parent
SLOW_FOLDERS = frozenset({"e2e", "kubectl"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark end-to-end and kubectl tests ``slow`` by where they live, so no such file needs its own marker."""
    for item in items:
        folders = set(item.path.resolve().relative_to(TESTS).parts[:-1])
        if folders & SLOW_FOLDERS or item.get_closest_marker("kubectl") is not None:
            item.add_marker(pytest.mark.slow)


def _leaked(before: set[asyncio.Task[object]]) -> list[asyncio.Task[object]]:
    """Tasks started since ``before`` that still run (aiohttp's own test-server tasks excepted)."""
    current = asyncio.current_task()
    return [
        task
        for task in asyncio.all_tasks() - before
        if not task.done() and task is not current and "aiohttp" not in repr(task.get_coro())
        and "TestServer" not in repr(task)
    ]  # fmt: skip


@pytest.fixture
async def _async_leak_guard() -> AsyncIterator[None]:
    """Fail an async test that leaves asyncio tasks running (a controller, watch or binding that outlived it)."""
    before = set(asyncio.all_tasks())
    yield
    await asyncio.sleep(0)
    leaked = _leaked(before)
    assert not leaked, f"leaked tasks: {leaked}"


@pytest.fixture(autouse=True)
def _no_leaked_tasks(request: pytest.FixtureRequest) -> None:
    """Every async test runs under the leaked-task guard (sync tests have no loop to leak into)."""
    if inspect.iscoroutinefunction(getattr(request, "function", None)):
        request.getfixturevalue("_async_leak_guard")
