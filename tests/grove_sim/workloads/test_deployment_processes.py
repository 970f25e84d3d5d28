"""The control plane end to end, as a user of a cluster meets it: a plain Deployment of a local program goes Ready
through its readiness probe, its logs stream, port-forward and services/proxy reach it, `kubectl rollout restart`
replaces its pods and deleting it stops the processes; with RBAC on, a container whose service account lacks
``pods/binding`` is refused a bind and `kubectl auth can-i` agrees.

Everything goes through the real kubectl against grove-sim; the program is the tiny HTTP app of tests/fixtures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grove_sim.cluster import nodes_from_flags
from grove_sim.server import SimOptions
from grove_sim.testing import SimCluster

from ...conftest import KUBECTL, Kubectl
from ...fixtures import http_app
from ...fixtures.net import fetch, free_port

Obj = dict[str, Any]
APP = [sys.executable, http_app.__file__]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """Two nodes with the default scheduler; ``app`` images run the HTTP app; probes on a fast clock."""
    options = SimOptions(
        nodes=nodes_from_flags(2, 8),
        exec_images={"app": " ".join(APP)},
        default_scheduler=True,
        probe_time_scale=0.05,
        restart_backoff=0.2,
        max_restart_backoff=0.4,
    )
    with SimCluster(options) as cluster:
        yield cluster


def deployment(out: Path) -> Obj:
    container = {
        "name": "app",
        "image": "app:v1",
        "env": [{"name": "OUT", "value": str(out)}],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}},
        },
    }


SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 8080, "targetPort": "http"}]},
}


def pods(kubectl: Kubectl, ns: str) -> dict[str, int]:
    """The Deployment's live pods and the pid of each one's process."""
    listed = json.loads(kubectl("get", "pods", "-n", ns, "-l", "app=web", "-o", "json").stdout)["items"]
    found = {}
    for pod in listed:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        found[pod["metadata"]["name"]] = int(str(statuses[0].get("containerID", "0")).removeprefix("grove-sim://"))
    return found


def exited(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_until(check: Any, what: str, limit: float = 60.0) -> None:
    """Poll a condition of the outside world (processes, kubectl output); the limit only guards against a hang."""
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.1)


def test_a_deployment_of_a_local_program_runs_is_reachable_rolls_and_stops(
    kubectl: Kubectl, kubectl_env: dict[str, str], tmp_path: Path
) -> None:
    ns = f"d-{os.urandom(4).hex()}"
    kubectl("create", "namespace", ns)
    manifest = {"apiVersion": "v1", "kind": "List", "items": [deployment(tmp_path), SERVICE]}
    kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(manifest))
    kubectl("rollout", "status", "-n", ns, "deployment/web", "--timeout=90s", timeout=120)
    first = pods(kubectl, ns)
    assert len(first) == 2
    assert all(pid > 0 for pid in first.values())
    assert "started web-" in kubectl("logs", "-n", ns, "deployment/web").stdout

    follow = subprocess.Popen(
        [KUBECTL, "logs", "-f", "-n", ns, f"pod/{sorted(first)[0]}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=kubectl_env,
    )  # fmt: skip
    try:
        assert follow.stdout is not None
        assert follow.stdout.readline().startswith("started web-")
        answer = kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/pods/{sorted(first)[0]}:8080/proxy/hello").stdout
        assert answer.startswith(f"hello from {sorted(first)[0]} at 127.")
        seen = ""
        while "GET /hello" not in seen:  # the request shows up in the followed log (probes print GET / too)
            seen = follow.stdout.readline()
            assert seen, "the followed log ended"
    finally:
        follow.terminate()
        follow.wait(30)

    through_service = kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/services/web:http/proxy/").stdout
    assert through_service.startswith("hello from web-")
    port = free_port()
    forward = subprocess.Popen(
        [KUBECTL, "port-forward", "-n", ns, "svc/web", f"{port}:8080"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=kubectl_env,
    )  # fmt: skip
    try:
        assert forward.stdout is not None
        assert forward.stdout.readline().startswith(f"Forwarding from 127.0.0.1:{port} -> 8080")
        assert fetch(f"http://127.0.0.1:{port}/").startswith("hello from web-")
    finally:
        forward.terminate()
        forward.wait(30)

    kubectl("rollout", "restart", "-n", ns, "deployment/web")
    kubectl("rollout", "status", "-n", ns, "deployment/web", "--timeout=90s", timeout=120)
    wait_until(lambda: len(pods(kubectl, ns)) == 2 and not set(pods(kubectl, ns)) & set(first), "new pods only")
    wait_until(lambda: all(exited(pid) for pid in first.values()), "the replaced pods' processes exited")
    second = pods(kubectl, ns)

    kubectl("delete", "-n", ns, "deployment/web", "--wait=true", "--timeout=90s", timeout=120)
    wait_until(lambda: not pods(kubectl, ns), "no pod left")
    wait_until(lambda: all(exited(pid) for pid in second.values()), "every process exited")
    assert kubectl("get", "replicasets", "-n", ns, "-o", "name").stdout == ""


BIND_AND_REPORT = """
import base64, json, os, ssl, sys, urllib.error, urllib.request, yaml
config = yaml.safe_load(open(os.environ["KUBECONFIG"]))
cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
context = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
ns = os.environ["POD_NAMESPACE"]
body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "target"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-0"}}
request = urllib.request.Request(cluster["server"] + f"/api/v1/namespaces/{ns}/pods/target/binding",
    data=json.dumps(body).encode(), method="POST",
    headers={"Authorization": "Bearer " + user["token"], "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, context=context) as response:
        print(response.status)
except urllib.error.HTTPError as error:
    print(error.code, json.loads(error.read())["message"])
"""


def test_with_rbac_a_container_without_pods_binding_is_refused_and_can_i_agrees(tmp_path: Path) -> None:
    options = SimOptions(nodes=nodes_from_flags(1, 8), exec_images={"local/": ""}, authorization_mode="RBAC", tls=True)
    with SimCluster(options) as cluster:
        env = {**os.environ, "KUBECONFIG": cluster.kubeconfig, "KUBECACHEDIR": str(tmp_path / "cache")}

        def kubectl(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
            return subprocess.run([KUBECTL, *args], input=input, capture_output=True, text=True, env=env,
                                  check=check, timeout=90)  # fmt: skip

        kubectl("create", "namespace", "team")
        kubectl("create", "serviceaccount", "binder", "-n", "team")
        kubectl("create", "role", "reader", "-n", "team", "--verb=get,list,watch", "--resource=pods")
        kubectl("create", "rolebinding", "binder", "-n", "team", "--role=reader", "--serviceaccount=team:binder")
        target = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "target"},
                  "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
        namespace_env = {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}
        binder = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "binder"}, "spec": {
            "nodeName": "node-0", "serviceAccountName": "binder", "restartPolicy": "Never",
            "containers": [{"name": "bind", "image": "local/tool", "env": [namespace_env],
                            "command": [sys.executable, "-c", BIND_AND_REPORT]}]}}  # fmt: skip
        kubectl("apply", "-n", "team", "-f", "-", input=json.dumps({"kind": "List", "apiVersion": "v1",
                "items": [target, binder]}))  # fmt: skip
        kubectl("wait", "-n", "team", "--for=jsonpath={.status.phase}=Succeeded", "pod/binder", "--timeout=60s")
        logged = kubectl("logs", "-n", "team", "binder").stdout
        assert logged.strip() == (
            '403 pods "target" is forbidden: User "system:serviceaccount:team:binder" cannot create resource '
            '"pods/binding" in API group "" in the namespace "team"'
        )
        as_binder = ["--as=system:serviceaccount:team:binder", "-n", "team"]
        can_i = kubectl("auth", "can-i", "create", "pods", "--subresource=binding", *as_binder, check=False)
        assert (can_i.returncode, can_i.stdout.strip()) == (1, "no")
        assert kubectl("auth", "can-i", "get", "pods", *as_binder).stdout.strip() == "yes"
        assert kubectl("get", "pod", "target", "-n", "team", "-o", "jsonpath={.spec.nodeName}").stdout == ""
