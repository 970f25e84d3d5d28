"""Grove installed the way a user installs it: `kubectl apply -k deploy/overlays/sim` into grove-sim with RBAC
authorization on, the Deployments' containers run as local processes (the image `grove:dev` mapped to the installed
programs: a container's `command` runs that program, the operator's init container the mapped grove-initc), both
Deployments become Available with one Lease holder each, the operator injects its CA bundle, `kubectl logs
deployment/grove-scheduler` works, an upstream sample workload is admitted (the webhook reached through its Service's
endpoints), placed by the installed scheduler and Running, the scheduler's metrics answer through `kubectl
port-forward svc/grove-scheduler-metrics`, killing the scheduler leader's process passes its Lease on, and `kubectl
delete -k` removes what the overlay created. The overlay is applied exactly as rendered.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from grove_sim import cli
from grove_sim.overlay import overlay_env, overlay_flags
from grove_sim.testing import SimCluster

from ..conftest import KUBECTL
from ..fixtures.net import fetch, free_port
from ..fixtures.samples import sample_path
from . import _manifests as m

pytestmark = pytest.mark.slow

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
OVERLAY = str(m.DEPLOY / "overlays" / "sim")
WAIT = "180s"
"""How long kubectl waits for a rollout on a loaded 2-core machine (a guard against hangs, not a measurement)."""
LIMIT = 120.0
"""Seconds the Lease may take to pass over (15 s lease duration; a guard against hangs, not a measurement)."""


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """grove-sim set up for the sim overlay as `make demo` sets it up (``grove_sim.overlay``: RBAC, TLS, the image
    grove:dev run from this environment's programs, found on PATH as in the image), on four nodes."""
    options = cli.options(["--nodes", "4", "--topology", "block=2,rack=4", "--ready-delay", "0.2", *overlay_flags()])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", overlay_env(os.environ)["PATH"])
        with SimCluster(options) as cluster:
            yield cluster


def _scheduler_pids(kubectl: Kubectl) -> set[str]:
    ids = kubectl("get", "pods", "-n", m.NAMESPACE, "-l", "app.kubernetes.io/name=grove-scheduler", "-o",
                  "jsonpath={.items[*].status.containerStatuses[0].containerID}").stdout  # fmt: skip
    return {i.removeprefix("grove-sim://") for i in ids.split()}


def _leader_killed_hands_over(kubectl: Kubectl, holder: str) -> None:
    """SIGKILL the scheduler leader's process (its identity ends with its pid): once the Lease expires (15 s) a live
    replica holds it (the other one, or the killed one restarted by the kubelet)."""
    pid = holder.rpartition("-")[2]
    assert pid in _scheduler_pids(kubectl)
    os.kill(int(pid), signal.SIGKILL)
    deadline = time.monotonic() + LIMIT
    while True:
        now = kubectl("get", "lease", "-n", m.NAMESPACE, "grove-scheduler", "-o",
                      "jsonpath={.spec.holderIdentity}").stdout  # fmt: skip
        if now and now != holder:
            break
        assert time.monotonic() < deadline, "no replica took the Lease over"
        time.sleep(0.5)
    assert now.rpartition("-")[2] in _scheduler_pids(kubectl)


def _sample_workload_runs(kubectl: Kubectl) -> None:
    """simple1 (9 pods) is admitted through the installed webhooks and bound by the installed scheduler."""
    kubectl("create", "namespace", "work")
    kubectl("apply", "-n", "work", "-f", str(sample_path("simple/simple1.yaml")))
    deadline = time.monotonic() + LIMIT
    while True:
        phases = kubectl("get", "pods", "-n", "work", "-o", "jsonpath={.items[*].status.phase}").stdout.split()
        if len(phases) == 9 and set(phases) == {"Running"}:
            break
        assert time.monotonic() < deadline, f"simple1 not Running: {phases}"
        time.sleep(0.5)
    nodes = kubectl("get", "pods", "-n", "work", "-o", "jsonpath={.items[*].spec.nodeName}").stdout.split()
    assert len(nodes) == 9


def _metrics_through_port_forward(kubectl_env: dict[str, str]) -> None:
    """The documented troubleshooting command: port-forward the scheduler's metrics Service, then read grove_*."""
    port = free_port()
    forward = subprocess.Popen(
        [KUBECTL, "port-forward", "-n", m.NAMESPACE, "svc/grove-scheduler-metrics", f"{port}:8080"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=kubectl_env,
    )  # fmt: skip
    try:
        assert forward.stdout is not None
        assert forward.stdout.readline().startswith(f"Forwarding from 127.0.0.1:{port} -> 8080")
        assert "grove_scheduler_" in fetch(f"http://127.0.0.1:{port}/metrics")
    finally:
        forward.terminate()
        forward.wait(30)


def test_apply_k_installs_grove_and_delete_k_removes_it(kubectl: Kubectl, kubectl_env: dict[str, str]) -> None:
    kubectl("apply", "-k", OVERLAY)
    for name in ("grove-operator", "grove-scheduler"):
        kubectl("rollout", "status", "-n", m.NAMESPACE, f"deployment/{name}", f"--timeout={WAIT}", timeout=240)
        kubectl("wait", "-n", m.NAMESPACE, "--for=condition=Available", f"deployment/{name}", f"--timeout={WAIT}",
                timeout=240)  # fmt: skip
    ready = kubectl("get", "-n", m.NAMESPACE, "deployments", "-o", "jsonpath={.items[*].status.readyReplicas}")
    assert ready.stdout.split() == ["2", "2"]
    each = "jsonpath={range .items[*]}{.metadata.name}={.spec.holderIdentity}{'\\n'}{end}"
    holders = kubectl("get", "-n", m.NAMESPACE, "leases", "-o", each).stdout
    leases = dict(line.split("=", 1) for line in holders.split())
    assert set(leases) == {"grove-operator-leader-election", "grove-scheduler"}
    assert all(leases.values())
    bundle = kubectl("get", "validatingwebhookconfiguration", "podcliqueset-validating-webhook", "-o",
                     "jsonpath={.webhooks[0].clientConfig.caBundle}").stdout  # fmt: skip
    assert bundle, "the operator injects its CA bundle"
    logs = kubectl("logs", "-n", m.NAMESPACE, "deployment/grove-scheduler").stdout
    assert '"event": "caches synced"' in logs
    assert leases["grove-scheduler"].startswith("grove-scheduler-"), "the Lease names the pod that holds it"
    _sample_workload_runs(kubectl)
    _metrics_through_port_forward(kubectl_env)
    _leader_killed_hands_over(kubectl, leases["grove-scheduler"])
    kubectl("delete", "namespace", "work", "--wait=true", "--timeout=180s", timeout=240)

    kubectl("delete", "-k", OVERLAY, "--ignore-not-found", "--wait=true", timeout=240)
    left = kubectl("get", "namespace", m.NAMESPACE, "--ignore-not-found", "-o", "name").stdout
    assert left.strip() == ""
    crds = kubectl("get", "crd", "-o", "name").stdout
    assert "grove" not in crds
