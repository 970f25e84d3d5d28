"""App containers run as local processes: environment and kubeconfig, probes driving Ready and restarts, restart
policies, SIGTERM/SIGKILL on deletion, a loopback IP per pod, Endpoints/EndpointSlices, and what kubectl reaches
through the API (logs, services/pods proxy, port-forward), all through the real kubectl and an API client.

Probes run on a fast clock (``probe_time_scale``: a probe's second is 20 ms) and the crash-loop backoff is short,
so restarts and readiness follow quickly without the tests sleeping.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_runtime.client import KubeClient
from grove_runtime.errors import ApiError
from grove_runtime.resources import CONFIGMAPS, EVENTS, PODS, SECRETS, SERVICES, ResourceType
from grove_sim.cluster import nodes_from_flags
from grove_sim.server import SimOptions
from grove_sim.testing import SimCluster

from ...conftest import KUBECTL, Kubectl
from ...fixtures import http_app
from ...fixtures.net import fetch, free_port
from .conftest import until

Obj = dict[str, Any]
APP = [sys.executable, http_app.__file__]
ENDPOINTS = ResourceType("", "v1", "endpoints", "Endpoints")
ENDPOINTSLICES = ResourceType("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
LISTENING = {"tcpSocket": {"port": 8080}, "periodSeconds": 1}
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """One node; ``local/`` images run the container's own command, ``app`` images the HTTP app; fast probes."""
    options = SimOptions(
        nodes=nodes_from_flags(1, 8),
        exec_images={"local/": "", "app": " ".join(APP)},
        restart_backoff=0.2,
        max_restart_backoff=0.4,
        probe_time_scale=0.02,
    )
    with SimCluster(options) as cluster:
        yield cluster


def app_pod(name: str, out: Path, *, labels: Obj | None = None, container: Obj | None = None, **spec: Any) -> Obj:
    """A pod on node-0 running the HTTP app (its files under ``out``), Ready once it listens."""
    main = {
        "name": "app",
        "image": "app:v1",
        "env": [{"name": "OUT", "value": str(out)}],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": LISTENING,
        **(container or {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": {"nodeName": "node-0", "containers": [main], **spec},
    }


def ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def container_status(pod: Obj) -> Obj:
    statuses: list[Obj] = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return statuses[0]


async def pod_where(kube: KubeClient, namespace: str, name: str, check: Any) -> Obj:
    async def probe() -> Obj | None:
        pod = await kube.get(PODS, name, namespace)
        return pod if check(pod) else None

    result: Obj = await until(probe)
    return result


def read_json(path: Path) -> Obj | None:
    """A JSON file the app wrote, or None while it has not."""
    return json.loads(path.read_text()) if path.exists() else None


def read_text(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def read_yaml(path: str) -> Obj:
    loaded: Obj = yaml.safe_load(Path(path).read_text())
    return loaded


async def written(path: Path) -> Obj:
    """The JSON file at ``path`` once the app wrote it."""

    async def probe() -> Obj | None:
        return read_json(path)

    result: Obj = await until(probe)
    return result


async def gone(kube: KubeClient, namespace: str, name: str) -> bool:
    try:
        await kube.get(PODS, name, namespace)
    except ApiError as exc:
        return exc.status == 404
    return False


async def test_process_environment_and_kubeconfig(
    sim: SimCluster, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """HOSTNAME is the pod's name, POD_IP its IP, the API server is named in KUBERNETES_SERVICE_HOST/PORT, the
    downward API resolves, $(VAR) in the arguments expands, KUBECONFIG carries the pod's service-account token
    (never the administrator's), and TMPDIR is a directory of the container's own (removed with it)."""
    env = [
        {"name": "OUT", "value": str(tmp_path)},
        {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
    ]
    resources = {"limits": {"memory": "64Mi", "cpu": "1"}}
    args = ["--bind=$(MY_IP):8080", "$$(MY_IP)", "$(UNSET)"]
    container = {"env": env, "resources": resources, "args": args}
    await kube.create(PODS, app_pod("envy", tmp_path, container=container), namespace)
    pod = await pod_where(kube, namespace, "envy", ready)
    seen = await written(tmp_path / "envy.1.env.json")
    ip = pod["status"]["podIP"]
    assert ip.startswith("127.")
    assert ip != "127.0.0.1"
    assert seen["HOSTNAME"] == seen["POD_NAME"] == "envy"
    assert seen["POD_NAMESPACE"] == namespace
    assert seen["POD_IP"] == seen["MY_IP"] == ip
    assert seen["MY_NODE"] == "node-0"
    assert seen["MEM_MI"] == "64"
    assert seen["ARGV"] == f"--bind={ip}:8080 $(MY_IP) $(UNSET)"
    assert f"{seen['KUBERNETES_SERVICE_HOST']}:{seen['KUBERNETES_SERVICE_PORT']}" in sim.url
    kubeconfig = read_yaml(seen["KUBECONFIG"])
    token = kubeconfig["users"][0]["user"]["token"]
    assert token == sim.call(lambda s: s.tokens.token_for(namespace, "default"))
    assert sim.call(lambda s: s.user_of(token)) == f"system:serviceaccount:{namespace}:default"
    assert kubeconfig["clusters"][0]["cluster"]["server"] == sim.url
    assert Path(seen["TMPDIR"]) == Path(seen["KUBECONFIG"]).parent / "tmp", "a temp directory of the container's own"


async def test_env_from_configmap_and_secret_keys_waits_for_them(
    kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """`configMapKeyRef`/`secretKeyRef` values reach the process; while a referenced ConfigMap is missing the
    container does not start (kubelet's CreateContainerConfigError), and an optional missing key is left unset."""
    env = [
        {"name": "OUT", "value": str(tmp_path)},
        {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "level"}}},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
        {"name": "MAYBE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "nope", "optional": True}}},
    ]
    secret = {"metadata": {"name": "creds"}, "stringData": {"password": "s3cret"}}
    stored = await kube.create(SECRETS, secret, namespace)
    assert "stringData" not in stored  # write-only: merged into data, as kube-apiserver stores it
    assert base64.b64decode(stored["data"]["password"]) == b"s3cret"
    await kube.create(PODS, app_pod("configured", tmp_path, container={"env": env}), namespace)
    for _ in range(20):  # the kubelet keeps retrying; the process must not have started meanwhile
        await asyncio.sleep(0.05)
        assert read_json(tmp_path / "configured.1.env.json") is None
    settings = {"metadata": {"name": "settings"}, "data": {"level": "debug"}}
    await kube.create(CONFIGMAPS, settings, namespace)
    await pod_where(kube, namespace, "configured", ready)
    seen = await written(tmp_path / "configured.1.env.json")
    assert (seen["LEVEL"], seen["PASSWORD"]) == ("debug", "s3cret")
    assert "MAYBE" not in seen


async def test_readiness_probe_gates_ready_and_endpoints(
    sim: SimCluster, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """The pod is Running but not Ready (and listed under notReadyAddresses) until its readiness probe passes;
    then Ready, and the Service's Endpoints and EndpointSlice list its IP as ready."""
    probe = {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1}
    await kube.create(PODS, app_pod("gated", tmp_path, container={"readinessProbe": probe}), namespace)
    service = {"metadata": {"name": "gated"}, "spec": {"selector": {"app": "gated"},
               "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}  # fmt: skip
    await kube.create(SERVICES, service, namespace)
    pod = await pod_where(kube, namespace, "gated", lambda p: container_status(p).get("state", {}).get("running"))
    ip = pod["status"]["podIP"]

    async def not_ready_endpoint() -> Obj | None:
        endpoints = await kube.get(ENDPOINTS, "gated", namespace)
        subsets = endpoints.get("subsets") or []
        return endpoints if subsets and subsets[0].get("notReadyAddresses") else None

    endpoints = await until(not_ready_endpoint)
    assert [a["ip"] for a in endpoints["subsets"][0]["notReadyAddresses"]] == [ip]
    assert not ready(await kube.get(PODS, "gated", namespace))
    (tmp_path / "gated.ready").touch()
    pod = await pod_where(kube, namespace, "gated", ready)
    assert container_status(pod)["ready"] is True

    async def ready_endpoint() -> Obj | None:
        endpoints = await kube.get(ENDPOINTS, "gated", namespace)
        subsets = endpoints.get("subsets") or []
        return endpoints if subsets and subsets[0].get("addresses") else None

    endpoints = await until(ready_endpoint)
    assert endpoints["subsets"][0]["addresses"][0]["ip"] == ip
    assert endpoints["subsets"][0]["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]
    slices = await kube.list(ENDPOINTSLICES, namespace, label_selector="kubernetes.io/service-name=gated")
    assert [e["addresses"] for e in slices["items"][0]["endpoints"]] == [[ip]]
    assert slices["items"][0]["endpoints"][0]["conditions"]["ready"] is True


async def test_liveness_failure_restarts_with_backoff_and_previous_logs(
    sim: SimCluster, kube: KubeClient, namespace: str, tmp_path: Path, kubectl: Kubectl
) -> None:
    """A failing liveness probe kills the process, which restarts (restartCount, lastState); the startup probe
    holds liveness off while the program starts; `kubectl logs --previous` reads the run before the current one;
    the kubelet's Events (Unhealthy, Killing, Started) are aggregated with a count."""
    probe = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1, "failureThreshold": 2}
    startup = {"tcpSocket": {"port": 8080}, "periodSeconds": 1, "failureThreshold": 3000}
    container = {"livenessProbe": probe, "startupProbe": startup}
    await kube.create(PODS, app_pod("sick", tmp_path, container=container), namespace)
    await pod_where(kube, namespace, "sick", ready)
    (tmp_path / "sick.sick").touch()
    pod = await pod_where(kube, namespace, "sick", lambda p: container_status(p).get("restartCount", 0) >= 2)
    status = container_status(pod)
    assert status["lastState"]["terminated"]["finishedAt"]
    (tmp_path / "sick.sick").unlink()
    pod = await pod_where(kube, namespace, "sick", ready)

    async def settled() -> int | None:
        """The run number once the current log is that run's (restartCount + 1)."""
        run = container_status(await kube.get(PODS, "sick", namespace))["restartCount"] + 1
        return run if f"started sick run {run}\n" in kubectl("logs", "-n", namespace, "sick").stdout else None

    runs = await until(settled)
    previous = kubectl("logs", "-n", namespace, "sick", "--previous").stdout
    assert f"started sick run {runs - 1}" in previous
    assert "terminating" in previous
    events = (await kube.list(EVENTS, namespace, field_selector="involvedObject.name=sick"))["items"]
    reported = {(e["reason"], e["message"]): e for e in events}
    assert reported["Unhealthy", "Liveness probe failed"]["count"] >= 2
    assert reported["Killing", "Container app failed liveness probe, will be restarted"]["type"] == "Normal"
    started = reported["Started", "Started container app"]
    assert started["count"] == runs
    assert started["source"] == {"component": "kubelet", "host": "node-0"}


async def test_restart_policies_and_a_command_that_cannot_start(kube: KubeClient, namespace: str) -> None:
    """Never: an exit fails the pod with the exit code; OnFailure: exit 0 completes it; an image mapped to no command
    needs the container's command, else the start fails (StartError)."""

    def pod(name: str, policy: str, container: Obj) -> Obj:
        return {"metadata": {"name": name}, "spec": {"nodeName": "node-0", "restartPolicy": policy,
                "containers": [{"name": "c", "image": "local/tool", **container}]}}  # fmt: skip

    exit3 = [sys.executable, "-c", "import sys; print('bye'); sys.exit(3)"]
    await kube.create(PODS, pod("never", "Never", {"command": exit3}), namespace)
    ok = [sys.executable, "-c", "print('ok')"]
    await kube.create(PODS, pod("onfailure", "OnFailure", {"command": ok}), namespace)
    await kube.create(PODS, pod("nocommand", "Never", {}), namespace)
    never = await pod_where(kube, namespace, "never", lambda p: p["status"].get("phase") == "Failed")
    assert container_status(never)["state"]["terminated"]["exitCode"] == 3
    assert container_status(never)["restartCount"] == 0
    done = await pod_where(kube, namespace, "onfailure", lambda p: p["status"].get("phase") == "Succeeded")
    assert container_status(done)["state"]["terminated"]["reason"] == "Completed"
    failed = await pod_where(kube, namespace, "nocommand", lambda p: p["status"].get("phase") == "Failed")
    terminated = container_status(failed)["state"]["terminated"]
    assert terminated["reason"] == "StartError"
    assert "no command specified" in terminated["message"]


def apply(kubectl: Kubectl, namespace: str, *objects: Obj) -> None:
    """kubectl apply the objects, then wait until the pods among them are Ready."""
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
            "items": list(objects)}))  # fmt: skip
    for obj in objects:
        if obj["kind"] == "Pod":
            kubectl("wait", "-n", namespace, "--for=condition=Ready", f"pod/{obj['metadata']['name']}", "--timeout=60s")


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    """A fresh namespace made with kubectl, for the tests that drive kubectl alone."""
    name = f"k-{os.urandom(4).hex()}"
    kubectl("create", "namespace", name)
    return name


def test_logs_tail_follow_and_refusals(ns: str, tmp_path: Path, kubectl: Kubectl, kubectl_env: dict[str, str]) -> None:
    """`kubectl logs --tail` gives the last lines (`--limit-bytes`, `--since`, `--since-time` cut them), `-f`
    streams new output and ends when the pod goes; a pod with two containers needs one named, an unknown container
    and a missing previous run are 400s; an init container's output stays readable after it completed."""
    talky = app_pod("talky", tmp_path, container={"env": [
        {"name": "OUT", "value": str(tmp_path)}, {"name": "LINES", "value": "50"}]})  # fmt: skip
    apply(kubectl, ns, talky)
    follow = subprocess.Popen(
        [KUBECTL, "logs", "-n", ns, "-f", "talky", "--tail", "1"], stdout=subprocess.PIPE, text=True, env=kubectl_env
    )
    try:
        assert follow.stdout is not None
        assert follow.stdout.readline() == "started talky run 1\n"
        assert kubectl("logs", "-n", ns, "pod/talky", "--tail", "2").stdout == "line 50\nstarted talky run 1\n"
        assert kubectl("logs", "-n", ns, "talky", "--limit-bytes", "9").stdout == "line 1\nli"
        assert kubectl("logs", "-n", ns, "talky", "--since", "1h").stdout.startswith("line 1\nline 2\n")
        assert kubectl("logs", "-n", ns, "talky", "--since-time", "2099-01-01T00:00:00Z").stdout == ""
        kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/pods/talky:8080/proxy/streamed")
        assert follow.stdout.readline() == "GET /streamed\n"
        kubectl("delete", "pod", "-n", ns, "talky", "--wait=false")
        rest = follow.stdout.read()
        assert follow.wait(30) == 0
        assert rest.endswith("terminating\n")
    finally:
        follow.kill()
        follow.wait(30)
    two = app_pod("two", tmp_path)
    two["spec"]["containers"].append({"name": "side", "image": "busybox"})
    say = [sys.executable, "-c", "print('init done')"]
    two["spec"]["initContainers"] = [{"name": "init", "image": "local/tool", "command": say}]
    apply(kubectl, ns, two)
    base = f"/api/v1/namespaces/{ns}/pods/two/log"
    refusals = {
        base: "a container name must be specified for pod two, choose one of: [app side] or one of the init "
        "containers: [init]",
        f"{base}?container=nope": "container nope is not valid for pod two",
        f"{base}?container=app&previous=true": 'previous terminated container "app" in pod "two" not found',
    }
    for path, message in refusals.items():
        refused = kubectl("get", "--raw", path, check=False)
        assert refused.returncode == 1
        assert f"(BadRequest): {message}" in refused.stderr
    assert kubectl("logs", "-n", ns, "two", "-c", "side").stdout == ""
    assert kubectl("logs", "-n", ns, "two", "-c", "init").stdout == "init done\n"


def test_two_pods_on_one_port_proxy_and_port_forward(
    ns: str, tmp_path: Path, kubectl: Kubectl, kubectl_env: dict[str, str]
) -> None:
    """Two pods both listen on :8080 on their own IPs; services/proxy and pods/proxy reach them, and `kubectl
    port-forward svc/...` then a plain HTTP client reaches the process behind the Service."""
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-metrics"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"name": "metrics", "port": 8080, "targetPort": "http"}]}}  # fmt: skip
    apply(kubectl, ns, *(app_pod(n, tmp_path, labels={"app": "web"}) for n in ("web-a", "web-b")), service)
    ips = kubectl("get", "pods", "-n", ns, "-o", "jsonpath={.items[*].status.podIP}").stdout.split()
    assert len(set(ips)) == 2
    listed = kubectl("get", "endpoints", "-n", ns, "web-metrics", "--no-headers").stdout.split()
    assert sorted(listed[1].split(",")) == sorted(f"{ip}:8080" for ip in ips)
    for name in ("web-a", "web-b"):
        answer = kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/pods/{name}:8080/proxy/").stdout
        assert answer.startswith(f"hello from {name} at 127.")
    metrics = kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/services/web-metrics:metrics/proxy/metrics")
    assert "app_requests_total" in metrics.stdout
    missing = kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/services/nothing/proxy/", check=False)
    assert 'services "nothing" not found' in missing.stderr
    port = free_port()
    forward = subprocess.Popen(
        [KUBECTL, "port-forward", "-n", ns, "svc/web-metrics", f"{port}:8080"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=kubectl_env,
    )  # fmt: skip
    try:
        assert forward.stdout is not None
        assert forward.stdout.readline().startswith(f"Forwarding from 127.0.0.1:{port} -> 8080")
        assert fetch(f"http://127.0.0.1:{port}/metrics").startswith("# TYPE app_requests_total counter")
        assert fetch(f"http://127.0.0.1:{port}/").startswith("hello from web-")
        assert fetch(f"http://127.0.0.1:{port}/big") == "x" * (3 << 20)
    finally:
        forward.terminate()
        forward.wait(30)


async def test_deletion_sigterms_then_sigkills_and_waits_for_the_exit(
    sim: SimCluster, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """Deleting a pod sends SIGTERM and the pod goes once the process exited; a process ignoring SIGTERM is
    killed after the grace period and the pod stays until then (Ready through a TCP probe: the program has set
    up its SIGTERM handler by the time it listens)."""
    await kube.create(PODS, app_pod("polite", tmp_path), namespace)
    env = [{"name": "OUT", "value": str(tmp_path)}, {"name": "STUBBORN", "value": "1"}]
    stubborn = app_pod("stubborn", tmp_path, terminationGracePeriodSeconds=2, container={"env": env})
    await kube.create(PODS, stubborn, namespace)
    pids = {}
    for name in ("polite", "stubborn"):
        pod = await pod_where(kube, namespace, name, ready)
        pids[name] = int(container_status(pod)["containerID"].removeprefix("grove-sim://"))
    await kube.delete(PODS, "polite", namespace)
    await until(lambda: gone(kube, namespace, "polite"))
    assert read_text(tmp_path / "polite.term") == "SIGTERM"
    await kube.delete(PODS, "stubborn", namespace)

    async def ignored() -> bool:
        logs = sim.call(lambda s: s.kubelet.logs.container_logs(namespace, "stubborn", "app"))
        return logs is not None and b"ignoring SIGTERM" in logs.tail()[0]

    await until(ignored)
    alive = await kube.get(PODS, "stubborn", namespace)
    assert alive["metadata"]["deletionTimestamp"]
    await until(lambda: gone(kube, namespace, "stubborn"))
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert read_text(tmp_path / "stubborn.term") is None


def test_tls_serves_https_with_its_own_ca(tmp_path: Path) -> None:
    """`--tls`: kubectl verifies the server against the kubeconfig's CA, and a pod's process gets that CA too."""
    options = SimOptions(nodes=nodes_from_flags(1, 8), exec_images={"app": " ".join(APP)}, tls=True)
    with SimCluster(options) as cluster:
        assert cluster.url.startswith("https://")
        admin = yaml.safe_load(Path(cluster.kubeconfig).read_text())
        ca = admin["clusters"][0]["cluster"]["certificate-authority-data"]
        env = {**os.environ, "KUBECONFIG": cluster.kubeconfig}
        run = subprocess.run([KUBECTL, "get", "nodes", "-o", "name"], capture_output=True, text=True, env=env,
                             check=True, timeout=60)  # fmt: skip
        assert run.stdout == "node/node-0\n"
        subprocess.run([KUBECTL, "apply", "-f", "-"], input=json.dumps(app_pod("secure", tmp_path)), env=env,
                       capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
        subprocess.run([KUBECTL, "wait", "--for=condition=Ready", "pod/secure", "--timeout=60s"], env=env,
                       capture_output=True, text=True, check=True, timeout=90)  # fmt: skip
        seen = read_json(tmp_path / "secure.1.env.json")
        assert seen is not None
        pod_config = yaml.safe_load(Path(seen["KUBECONFIG"]).read_text())
        assert pod_config["clusters"][0]["cluster"]["certificate-authority-data"] == ca
        assert base64.b64decode(ca).startswith(b"-----BEGIN CERTIFICATE-----")
        as_pod = subprocess.run([KUBECTL, "--kubeconfig", seen["KUBECONFIG"], "get", "pod", "secure", "-o", "name"],
                                capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
        assert as_pod.stdout == "pod/secure\n"
        bare = {**os.environ, "KUBECONFIG": "/dev/null"}
        insecure = subprocess.run([KUBECTL, "--server", cluster.url, "--token", "x", "get", "nodes"],
                                  capture_output=True, text=True, timeout=60, env=bare)  # fmt: skip
        assert "certificate" in insecure.stderr
