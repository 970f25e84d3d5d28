"""Grove installed the way a user installs it: `kubectl apply -k deploy/overlays/sim` into grove-sim with RBAC
authorization on, the Deployments' containers run as local processes (the image `grove:dev` mapped to the installed
programs: a container's `command` runs that program, the operator's init container the mapped grove-initc), both
Deployments become Available with one Lease holder each, the operator injects its CA bundle, `kubectl logs
deployment/grove-scheduler` works, an upstream sample workload is admitted (the webhook reached through its Service's
endpoints), placed by the installed scheduler and Running, the scheduler's metrics answer through `kubectl
port-forward svc/grove-scheduler-metrics`, killing the scheduler leader's process while it binds a burst of gangs
binds no pod twice, leaves no gang below its minimum and passes its Lease on after it expired, and `kubectl delete -k`
removes what the overlay created. The overlay is applied exactly as rendered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

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
HANDOVER_SLACK = 10.0
"""Seconds past the lease duration the takeover may come: the standby's retry period (2 s) to notice the last renewal
and again to find the Lease expired, and the rest for a loaded 2-core machine (a guard, not a measurement)."""
LIMIT = 120.0
"""Seconds a workload may take to run, or the burst to be bound across the handover (15 s lease duration): a guard
against hangs, not a measurement."""


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


GANGS, PODS_PER_GANG = 12, 4
"""The burst the scheduler leader is killed in: twelve gangs of four small pods (enough that binding is in flight)."""
BURST = f"""apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {{name: burst, namespace: burst}}
spec:
  replicas: {GANGS}
  template:
    cliques:
      - name: w
        spec:
          roleName: w
          replicas: {PODS_PER_GANG}
          podSpec:
            containers: [{{name: c, image: registry.example.com/w:1, resources: {{requests: {{cpu: 10m}}}}}}]
"""
WATCH = "{.type}|{.object.metadata.uid}|{.object.metadata.resourceVersion}|{.object.spec.nodeName}{'\\n'}"


class PodWatch:
    """An independent `kubectl get pods --watch` of one namespace: every event in resourceVersion order, with each
    pod's node as that event shows it (kubectl is neither the scheduler's nor the operator's client)."""

    def __init__(self, kubectl_env: dict[str, str], namespace: str) -> None:
        self.events: list[tuple[str, str, int, str]] = []
        self.proc = subprocess.Popen(
            [KUBECTL, "get", "pods", "-n", namespace, "--watch", "--output-watch-events", "-o", f"jsonpath={WATCH}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=kubectl_env,
        )  # fmt: skip
        self._lock = threading.Lock()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            kind, uid, version, node = line.rstrip("\n").split("|")
            with self._lock:
                self.events.append((kind, uid, int(version), node))

    def nodes(self) -> dict[str, str]:
        """Each live pod's node ('' while unbound), as the events so far leave it."""
        with self._lock:
            events = list(self.events)
        live: dict[str, str] = {}
        for kind, uid, _, node in events:
            if kind == "DELETED":
                live.pop(uid, None)
            else:
                live[uid] = node
        return live

    def stop(self) -> list[tuple[str, str, int, str]]:
        self.proc.terminate()
        self.proc.wait(30)
        with self._lock:
            return list(self.events)


def _until(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + LIMIT
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _lease(kubectl: Kubectl) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(
        kubectl("get", "lease", "-n", m.NAMESPACE, "grove-scheduler", "-o", "json").stdout
    )["spec"]
    return spec


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _leader_killed_mid_binding(kubectl: Kubectl, kubectl_env: dict[str, str], holder: str) -> None:
    """SIGKILL the scheduler leader's process (its identity ends with its pid) as soon as it has bound the first pod
    of a burst of gangs, while the rest wait; then, from an independent watch of the pods: no pod's node ever changed
    once set (nothing bound twice), every pod of the burst ends bound, each gang whole (none below its minimum), and
    a live replica took the Lease no earlier than its duration after the dead leader's last renewal."""
    pid = holder.rpartition("-")[2]
    assert pid in _scheduler_pids(kubectl)
    kubectl("create", "namespace", "burst")
    watch = PodWatch(kubectl_env, "burst")
    kubectl("apply", "-f", "-", input=BURST)
    _until(lambda: any(watch.nodes().values()), "the leader bound no pod of the burst")
    os.kill(int(pid), signal.SIGKILL)
    at_kill = watch.nodes()
    last_renewal = _last_renewal(kubectl, holder)
    expected = GANGS * PODS_PER_GANG
    _until(lambda: (n := watch.nodes()) and len(n) == expected and all(n.values()), "the burst was not bound")
    events = watch.stop()
    bound_at_kill = sum(1 for node in at_kill.values() if node)
    assert 0 < bound_at_kill < expected, f"binding was not in flight when the leader died ({bound_at_kill} bound)"

    versions = [version for _, _, version, _ in events]
    assert versions == sorted(versions), "the watch delivers events in resourceVersion order"
    first_node: dict[str, str] = {}
    for _, uid, _, node in events:
        if node:
            assert first_node.setdefault(uid, node) == node, f"pod {uid} moved from {first_node[uid]} to {node}"
    each = "jsonpath={range .items[*]}{.metadata.labels.grove\\.io/podclique}={.spec.nodeName}{'\\n'}{end}"
    gangs = kubectl("get", "pods", "-n", "burst", "-o", each)
    per_clique: dict[str, int] = {}
    for line in gangs.stdout.split():
        clique, _, node = line.partition("=")
        assert node, f"a pod of {clique} is unbound"
        per_clique[clique] = per_clique.get(clique, 0) + 1
    assert sorted(per_clique.values()) == [PODS_PER_GANG] * GANGS

    # The dead leader may have sent every bind before it died (the pod watch lags its binds), so the burst can end
    # bound before a live replica takes the Lease, which it may do only once the dead leader's renewal expired.
    _until(lambda: _lease(kubectl)["holderIdentity"] != holder, "no live replica took the Lease")
    lease = _lease(kubectl)
    assert lease["holderIdentity"].rpartition("-")[2] in _scheduler_pids(kubectl)
    gap = (_stamp(lease["acquireTime"]) - last_renewal).total_seconds()
    duration = float(lease["leaseDurationSeconds"])
    assert gap >= duration, f"the Lease was taken {gap:.1f} s after the last renewal, before it expired"
    assert gap <= duration + HANDOVER_SLACK, f"the Lease was taken only {gap:.1f} s after the last renewal"
    taker = lease["holderIdentity"]
    print(f"leader killed with {bound_at_kill}/{expected} bound; {taker} took the Lease {gap:.1f} s after its renewal")
    kubectl("delete", "namespace", "burst", "--wait=true", "--timeout=180s", timeout=240)


def _last_renewal(kubectl: Kubectl, holder: str) -> datetime:
    lease = _lease(kubectl)
    assert lease["holderIdentity"] == holder
    return _stamp(lease["renewTime"])


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
    _leader_killed_mid_binding(kubectl, kubectl_env, leases["grove-scheduler"])
    kubectl("delete", "namespace", "work", "--wait=true", "--timeout=180s", timeout=240)

    kubectl("delete", "-k", OVERLAY, "--ignore-not-found", "--wait=true", timeout=240)
    left = kubectl("get", "namespace", m.NAMESPACE, "--ignore-not-found", "-o", "name").stdout
    assert left.strip() == ""
    crds = kubectl("get", "crd", "-o", "name").stdout
    assert "grove" not in crds
