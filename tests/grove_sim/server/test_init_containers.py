"""Init containers as a kubelet runs them: executable images get the pod's own token and files, run while the pod
shows ``Init:0/1``, crash-loop with kubelet's backoff, and are stopped (SIGTERM, then SIGKILL) when the pod goes."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS, SECRETS, SERVICEACCOUNTS
from grove_sim.cluster import nodes_from_flags
from grove_sim.controllers.initcontainers import CrashBackoff, go_duration
from grove_sim.server import SIM_TOKEN, SimOptions
from grove_sim.testing import SimCluster

from ...fixtures import exec_probe
from .conftest import until

Obj = dict[str, Any]
PROBE = f"{sys.executable} {exec_probe.__file__}"
SA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
KUBECTL = "/usr/bin/kubectl"
slow = pytest.mark.slow


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """One node; ``probe`` images run the probe script; a fast crash-loop backoff (0.3 s doubling to 0.6 s)."""
    options = SimOptions(
        nodes=nodes_from_flags(1, 8), exec_images={"probe": PROBE}, restart_backoff=0.3, max_restart_backoff=0.6
    )
    with SimCluster(options) as sim:
        yield sim


def probe_pod(
    name: str, out: Path, mode: str, *, spec: Obj | None = None, mounts: list[Obj] | None = None, **env: str
) -> Obj:
    """A pod bound to node-0 whose init container runs the probe in ``mode`` (its output under ``out``)."""
    variables = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "OUT", "value": str(out)},
        {"name": "MODE", "value": mode},
        *({"name": k, "value": v} for k, v in env.items()),
    ]
    init = {"name": "wait", "image": "probe:v1", "args": ["--x=1"], "env": variables, "volumeMounts": mounts or []}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"nodeName": "node-0", "initContainers": [init], "containers": [{"name": "c", "image": "app"}],
                 **(spec or {})},
    }  # fmt: skip


async def phase(kube: KubeClient, namespace: str, name: str, wanted: str) -> Obj | None:
    pod = await kube.get(PODS, name, namespace)
    return pod if (pod.get("status") or {}).get("phase") == wanted else None


def kubeconfig_token(text: str) -> str | None:
    """The bearer token of a kubeconfig's (only) user."""
    user: Obj = yaml.safe_load(text)["users"][0]["user"]
    return user.get("token")


@slow
async def test_exec_process_gets_its_pods_token_and_files(
    sim: SimCluster, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """The token mounted at the service-account path (else the pod's service account's, unless automount is off)
    is the one in the process's own kubeconfig, never the administrator's; Secret and downward-API volumes are
    materialised, arguments passed."""
    await kube.create(SERVICEACCOUNTS, {"metadata": {"name": "runner"}}, namespace)
    token_secret = {
        "metadata": {"name": "runner-token", "annotations": {"kubernetes.io/service-account.name": "runner"}},
        "type": "kubernetes.io/service-account-token",
    }
    await kube.create(SECRETS, token_secret, namespace)

    async def filled() -> str | None:
        data = (await kube.get(SECRETS, "runner-token", namespace)).get("data") or {}
        return base64.b64decode(data["token"]).decode() if "token" in data else None

    runner_token = await until(filled)
    volumes = [
        {"name": "sa", "secret": {"secretName": "runner-token"}},
        {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
    ]
    mounts = [{"name": "sa", "mountPath": SA_PATH, "readOnly": True}, {"name": "info", "mountPath": "/etc/info"}]
    await kube.create(
        PODS, probe_pod("mounted", tmp_path, "record", spec={"volumes": volumes}, mounts=mounts), namespace
    )
    await kube.create(PODS, probe_pod("default-sa", tmp_path, "record"), namespace)
    await kube.create(
        PODS, probe_pod("no-token", tmp_path, "record", spec={"automountServiceAccountToken": False}), namespace
    )
    for name in ("mounted", "default-sa", "no-token"):
        await until(lambda name=name: phase(kube, namespace, name, "Running"))
    mounted = json.loads((tmp_path / "mounted.json").read_text())
    assert kubeconfig_token(mounted["kubeconfig"]) == runner_token
    assert mounted["files"][f"{SA_PATH}/token"] == runner_token
    assert mounted["files"][f"{SA_PATH}/namespace"] == namespace
    assert mounted["files"]["/etc/info/labels"] == 'app="mounted"'
    assert mounted["args"] == ["--x=1"]
    default_token = kubeconfig_token(json.loads((tmp_path / "default-sa.json").read_text())["kubeconfig"])
    assert default_token not in (None, SIM_TOKEN, runner_token)
    assert sim.call(lambda s: s.user_of(default_token)) == f"system:serviceaccount:{namespace}:default"
    assert sim.call(lambda s: s.user_of(runner_token)) == f"system:serviceaccount:{namespace}:runner"
    assert kubeconfig_token(json.loads((tmp_path / "no-token.json").read_text())["kubeconfig"]) is None


@slow
async def test_missing_secret_holds_the_container_until_it_exists(
    kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """A Secret volume that does not exist yet keeps the init container from starting (kubelet's FailedMount);
    once the Secret is created it runs."""
    volumes = [{"name": "creds", "secret": {"secretName": "later"}}]
    mounts = [{"name": "creds", "mountPath": "/etc/creds"}]
    await kube.create(PODS, probe_pod("waits", tmp_path, "record", spec={"volumes": volumes}, mounts=mounts), namespace)
    await asyncio.sleep(1.5)
    assert not (tmp_path / "waits.json").exists()
    assert (await kube.get(PODS, "waits", namespace))["status"].get("phase") != "Running"
    await kube.create(
        SECRETS, {"metadata": {"name": "later"}, "data": {"key": base64.b64encode(b"value").decode()}}, namespace
    )
    await until(lambda: phase(kube, namespace, "waits", "Running"))
    assert json.loads((tmp_path / "waits.json").read_text())["files"]["/etc/creds/key"] == "value"


async def watch_statuses(sim: SimCluster, kube: KubeClient, namespace: str) -> asyncio.subprocess.Process:
    """`kubectl get pods -w` in ``ns``, listening once it has printed an unscheduled marker pod created first."""
    marker = {"metadata": {"name": "marker"}, "spec": {"containers": [{"name": "c", "image": "app"}]}}
    await kube.create(PODS, marker, namespace)
    env = dict(os.environ, KUBECONFIG=sim.kubeconfig)
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "get", "pods", "-n", namespace, "-w", "--no-headers", stdout=asyncio.subprocess.PIPE, env=env
    )
    assert proc.stdout is not None
    assert (await asyncio.wait_for(proc.stdout.readline(), 30)).startswith(b"marker ")
    return proc


async def read_until(proc: asyncio.subprocess.Process, pod: str, last: str) -> list[str]:
    """The STATUS column of each row kubectl prints for ``pod``, repeats folded, up to a row showing ``last``."""
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        while not seen or seen[-1] != last:
            line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
            assert line, f"kubectl stopped; saw {seen}"
            name, _, status = line.split()[:3]
            if name == pod and (not seen or seen[-1] != status):
                seen.append(status)
    finally:
        proc.terminate()
        await proc.wait()
    return seen


@slow
async def test_failing_init_container_crash_loops_like_kubelet(
    sim: SimCluster, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """Three failures: Init:Error and an immediate restart, then Init:Error and Init:CrashLoopBackOff before each
    restart; each restart counted; after the success PodInitializing, then Running (read from real kubectl -w)."""
    watcher = await watch_statuses(sim, kube, namespace)
    await kube.create(PODS, probe_pod("flaky", tmp_path, "fail", CODE="3", TIMES="3"), namespace)
    seen = await read_until(watcher, "flaky", "Running")
    assert seen[seen.index("Init:0/1") :] == [
        "Init:0/1", "Init:Error", "Init:0/1",
        "Init:Error", "Init:CrashLoopBackOff", "Init:0/1",
        "Init:Error", "Init:CrashLoopBackOff", "Init:0/1",
        "PodInitializing", "Running",
    ]  # fmt: skip
    status = (await kube.get(PODS, "flaky", namespace))["status"]
    init = status["initContainerStatuses"][0]
    assert init["restartCount"] == 3
    assert init["state"]["terminated"]["reason"] == "Completed"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Initialized"] == "True"


@slow
async def test_failed_init_container_fails_a_never_restarting_pod(
    kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """restartPolicy Never: the first failure fails the pod, its init container terminated with the exit code."""
    await kube.create(
        PODS, probe_pod("once", tmp_path, "fail", spec={"restartPolicy": "Never"}, CODE="3", TIMES="9"), namespace
    )
    pod = await until(lambda: phase(kube, namespace, "once", "Failed"))
    terminated = pod["status"]["initContainerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert (tmp_path / "once.runs").read_text() == "1"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def gone(kube: KubeClient, namespace: str, name: str) -> bool:
    return name not in [p["metadata"]["name"] for p in (await kube.list(PODS, namespace))["items"]]


@slow
async def test_deleting_a_pod_stops_its_init_process(kube: KubeClient, namespace: str, tmp_path: Path) -> None:
    """Deletion sends the running init container SIGTERM; one that ignores it is killed after the grace period;
    either way the pod goes once the process has stopped."""
    await kube.create(PODS, probe_pod("polite", tmp_path, "term"), namespace)
    await kube.create(PODS, probe_pod("stubborn", tmp_path, "stubborn"), namespace)
    pids = {}
    for name in ("polite", "stubborn"):
        started = tmp_path / f"{name}.started"

        async def exists(path: Path = started) -> bool:
            return await asyncio.to_thread(lambda: path.exists() and path.read_text().isdigit())

        await until(exists)
        pids[name] = int(started.read_text())
        pod = await kube.get(PODS, name, namespace)
        assert pod["status"]["initContainerStatuses"][0]["containerID"] == f"grove-sim://{pids[name]}"
    await kube.delete(PODS, "polite", namespace)
    await kube.delete(PODS, "stubborn", namespace, grace_period_seconds=1)
    await until(lambda: gone(kube, namespace, "polite"))
    assert (tmp_path / "polite.term").read_text() == "SIGTERM"
    await until(lambda: gone(kube, namespace, "stubborn"))
    assert not alive(pids["polite"])
    assert not alive(pids["stubborn"])


def test_go_duration_reads_like_kubelet() -> None:
    """Back-off messages print durations as Go does."""
    assert [go_duration(s) for s in (10, 20, 300, 80, 0.3, 3725)] == ["10s", "20s", "5m0s", "1m20s", "300ms", "1h2m5s"]


@given(
    initial=st.floats(0.1, 20),
    factor=st.integers(2, 40),
    gaps=st.lists(st.floats(0, 50), min_size=1, max_size=12),
)
def test_crash_backoff_is_immediate_then_doubles_to_the_cap(initial: float, factor: int, gaps: list[float]) -> None:
    """Failures close together: the first restart is immediate, then initial, 2x, 4x... never above the cap."""
    maximum = initial * factor
    backoff = CrashBackoff(initial, maximum)
    now = 0.0
    delays = []
    for gap in gaps:
        delay = backoff.restart_delay(now)
        delays.append(delay)
        now += delay + min(gap, maximum)
    expected = [0.0] + [min(initial * 2**k, maximum) for k in range(len(gaps) - 1)]
    assert delays == pytest.approx(expected)


def test_crash_backoff_starts_over_after_a_long_healthy_run() -> None:
    """A container that ran for more than twice the cap before failing restarts at once again."""
    backoff = CrashBackoff(10, 300)
    assert [backoff.restart_delay(t) for t in (0, 1, 12)] == [0, 10, 20]
    assert backoff.restart_delay(12 + 20 + 601) == 0
    assert backoff.restart_delay(12 + 20 + 602) == 10
