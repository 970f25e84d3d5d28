"""grove-initc as a process against grove-sim: it waits for its gang's parents by label, exits 0 once they have
their minimum of Ready pods, 1 on SIGTERM, 2 (with one clear line) when it cannot start; and it starts light."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from grove_api import labels as glabels
from grove_operator.initc.cli import SIM_POD_INFO_ENV, pod_info_dir
from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS
from grove_sim.testing import SimCluster, console_script

Obj = dict[str, Any]
WAIT = 60.0
pytestmark = pytest.mark.slow


def test_pod_info_dir_is_the_flag_else_grove_sims_stand_in_else_the_mount_path() -> None:
    assert pod_info_dir("/x", {SIM_POD_INFO_ENV: "/sim"}) == Path("/x")
    assert pod_info_dir(None, {SIM_POD_INFO_ENV: "/sim"}) == Path("/sim") / glabels.INIT_POD_INFO_VOLUME
    assert pod_info_dir(None, {}) == Path(glabels.INIT_POD_INFO_MOUNT_PATH)


def run_initc(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script("grove-initc"), *args], capture_output=True, text=True, timeout=WAIT, env=env, check=False
    )


def clean_env(tmp: Path) -> dict[str, str]:
    """No Kubernetes configuration at all, HOME in a temporary directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "KUBECONFIG", "GROVE_SIM_"))}
    return {**env, "HOME": str(tmp)}


def pod_info(tmp: Path, namespace: str, podgang: str) -> Path:
    folder = tmp / "pod-info"
    folder.mkdir(exist_ok=True)
    (folder / glabels.INIT_POD_INFO_NAMESPACE_FILE).write_text(namespace)
    (folder / glabels.INIT_POD_INFO_PODGANG_FILE).write_text(podgang)
    return folder


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no parent PodClique given"),
        (["--podcliques=a:0"], "minAvailable must be a positive integer"),
        (["--podcliques", "a"], "expected <podclique>:<minAvailable>"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(args: list[str], message: str) -> None:
    result = run_initc(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_or_empty_pod_info_and_missing_configuration_exit_2(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    missing = run_initc("--podcliques=a:1", "--pod-info-dir", str(tmp_path / "nowhere"), env=env)
    assert missing.returncode == 2
    assert f"cannot read {tmp_path / 'nowhere' / 'namespace'}" in missing.stderr
    assert "is the pod-info volume mounted?" in missing.stderr
    folder = pod_info(tmp_path, "ns", "")
    empty = run_initc("--podcliques=a:1", "--pod-info-dir", str(folder), env=env)
    assert empty.returncode == 2
    assert f"{folder / 'podgangname'} is empty" in empty.stderr
    pod_info(tmp_path, "ns", "gang")
    unconfigured = run_initc("--podcliques=a:1", "--pod-info-dir", str(folder), env=env)
    assert unconfigured.returncode == 2
    assert unconfigured.stderr.startswith("grove-initc: no Kubernetes configuration")
    assert "Traceback" not in missing.stderr + empty.stderr + unconfigured.stderr


def test_it_starts_without_the_operator_the_models_or_the_generated_client() -> None:
    """One process runs per waiting pod: importing the program loads no pydantic, no kubernetes-asyncio, no
    prometheus-client, no operator code."""
    heavy = ["kubernetes_asyncio", "pydantic", "prometheus_client", "ortools", "numpy", "grove_operator.wiring"]
    code = (
        "import sys, grove_operator.initc.cli\n"
        f"print([m for m in {heavy!r} if m in sys.modules])\n"
    )  # fmt: skip
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT, check=True)
    assert result.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """A cluster without nodes: the test's pods are never run by a kubelet, so their status is the test's."""
    with SimCluster() as cluster:
        yield cluster


class Initc:
    """A running grove-initc and the JSON lines it logged."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[Obj] = []

    async def logged(self, event: str) -> Obj:
        """The next log entry ``event`` (earlier lines are kept), failing if the process exits first."""
        assert self.proc.stderr is not None
        while True:
            for entry in self.lines:
                if entry.get("event") == event and not entry.get("_seen"):
                    entry["_seen"] = True
                    return entry
            line = await asyncio.wait_for(self.proc.stderr.readline(), WAIT)
            assert line, f"grove-initc exited with {await self.proc.wait()} before logging {event!r}: {self.lines}"
            self.lines.append(json.loads(line))

    async def exit_code(self) -> int:
        """Read what is left of the log, then the exit code."""
        assert self.proc.stderr is not None
        rest = await asyncio.wait_for(self.proc.stderr.read(), WAIT)
        self.lines.extend(json.loads(line) for line in rest.splitlines() if line.strip())
        return await asyncio.wait_for(self.proc.wait(), WAIT)


@pytest.fixture
async def start_initc(sim: SimCluster, namespace: str, tmp_path: Path) -> AsyncIterator[Any]:
    started: list[Initc] = []

    async def start(*parents: str, podgang: str = "gang") -> Initc:
        folder = pod_info(tmp_path, namespace, podgang)
        env = {**clean_env(tmp_path), "KUBECONFIG": sim.kubeconfig}
        proc = await asyncio.create_subprocess_exec(
            console_script("grove-initc"), *(f"--podcliques={p}" for p in parents), "--pod-info-dir", str(folder),
            env=env, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        started.append(Initc(proc))
        return started[-1]

    yield start
    for initc in started:
        if initc.proc.returncode is None:
            initc.proc.kill()
            await initc.proc.wait()


async def make_pod(
    kube: KubeClient, namespace: str, name: str, clique: str, *, gang: str = "gang", ready: bool
) -> None:
    labels = {glabels.LABEL_PODCLIQUE: clique, glabels.LABEL_PODGANG: gang}
    body = {"metadata": {"name": name, "labels": labels}, "spec": {"containers": [{"name": "c", "image": "app"}]}}
    if name not in [p["metadata"]["name"] for p in (await kube.list(PODS, namespace))["items"]]:
        await kube.create(PODS, body, namespace)
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    await kube.patch(PODS, name, {"status": status}, namespace, subresource="status")


async def test_waits_by_label_within_its_gang_and_exits_0_once_every_minimum_is_met(
    kube: KubeClient, namespace: str, start_initc: Any
) -> None:
    """Ready pods of a sibling `p-ab` or of another gang never count for `p-a`; the wait is logged once per change
    of the parents still waited for, and ends the moment the last minimum is met."""
    await make_pod(kube, namespace, "p-a-0", "p-a", ready=False)
    initc = await start_initc("p-a:2", "p-b:1")
    first = await initc.logged("waiting for parent podcliques")
    assert first["waiting"] == [
        {"podclique": "p-a", "ready": 0, "needed": 2},
        {"podclique": "p-b", "ready": 0, "needed": 1},
    ]
    assert (first["namespace"], first["podgang"]) == (namespace, "gang")
    await make_pod(kube, namespace, "p-ab-0", "p-ab", ready=True)
    await make_pod(kube, namespace, "p-a-9", "p-a", gang="other", ready=True)
    await make_pod(kube, namespace, "p-a-0", "p-a", ready=True)
    await make_pod(kube, namespace, "p-b-0", "p-b", ready=True)
    second = await initc.logged("waiting for parent podcliques")
    assert second["waiting"] == [{"podclique": "p-a", "ready": 1, "needed": 2}]
    await make_pod(kube, namespace, "p-a-1", "p-a", ready=True)
    done = await initc.logged("parent podcliques ready")
    assert done["parents"] == {"p-a": 2, "p-b": 1}
    assert await initc.exit_code() == 0
    assert len([e for e in initc.lines if e.get("event") == "waiting for parent podcliques"]) == 2


async def test_sigterm_stops_the_wait_with_exit_1(start_initc: Any) -> None:
    """A stopped wait is a failure, so a pod whose init container was stopped never starts early."""
    initc = await start_initc("never-0-x:1")
    await initc.logged("waiting for parent podcliques")
    initc.proc.send_signal(signal.SIGTERM)
    assert await initc.exit_code() == 1
    assert [e for e in initc.lines if e.get("event") == "stopped before the parents were ready"]
