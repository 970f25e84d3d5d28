"""The scheduler's pod cache keeps what it reads: requests, placement constraints, phase and its own conditions."""

from __future__ import annotations

import copy
from typing import Any

from grove_sched.podcache import slim_pod
from grove_sched.podspec import bound_pod
from grove_sched.quantity import bound_demand, pod_demand


def _running_pod() -> dict[str, Any]:
    container = {
        "name": "w",
        "image": "registry.example.com/w:1",
        "command": ["serve"],
        "env": [{"name": f"E{i}", "value": "x" * 100} for i in range(20)],
        "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
        "ports": [{"containerPort": 80, "hostPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
        "volumeMounts": [{"name": "v", "mountPath": "/v"}],
    }
    sidecar = {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}, "image": "s:1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u-1",
            "labels": {"grove.io/podgang": "g"},
            "annotations": {"kai.scheduler/queue": "team-a", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        },
        "spec": {
            "nodeName": "node-1",
            "schedulerName": "grove-scheduler",
            "priority": 10,
            "priorityClassName": "high",
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
            "affinity": {"nodeAffinity": {}},
            "nodeSelector": {"pool": "a"},
            "overhead": {"cpu": "100m"},
            "volumes": [{"name": "v", "emptyDir": {}}],
            "serviceAccountName": "default",
            "dnsPolicy": "ClusterFirst",
            "containers": [container],
            "initContainers": [sidecar],
        },
        "status": {
            "phase": "Running",
            "nominatedNodeName": "node-2",
            "podIP": "10.0.0.1",
            "containerStatuses": [{"name": "w", "ready": True}],
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "PodScheduled", "status": "True"},
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
            ],
        },
    }


def test_slimmed_pod_keeps_what_the_scheduler_reads() -> None:
    full = _running_pod()
    slim = slim_pod(copy.deepcopy(full))
    assert pod_demand(slim) == pod_demand(full)
    assert bound_demand(slim) == bound_demand(full)
    assert bound_pod(slim) == bound_pod(full)
    assert slim["metadata"]["annotations"] == {"kai.scheduler/queue": "team-a"}
    assert "managedFields" not in slim["metadata"]
    assert slim["metadata"]["labels"] == full["metadata"]["labels"]
    assert slim["metadata"]["uid"] == full["metadata"]["uid"]
    dropped = {"volumes", "serviceAccountName", "dnsPolicy", "containers", "initContainers"}
    assert {k: v for k, v in slim["spec"].items() if k not in dropped} == {
        k: v for k, v in full["spec"].items() if k not in dropped
    }
    assert not dropped - {"containers", "initContainers"} & set(slim["spec"])
    assert slim["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "hostPort": 8080}]
    assert slim["spec"]["initContainers"][0]["restartPolicy"] == "Always"
    assert slim["status"] == {
        "phase": "Running",
        "nominatedNodeName": "node-2",
        "conditions": [full["status"]["conditions"][1], full["status"]["conditions"][2]],
    }
    assert len(str(slim)) < len(str(full)) / 2


def test_odd_pods_pass_through_without_an_error() -> None:
    """A malformed pod is the placement's to judge (a Warning), not the cache's to crash on."""
    for odd in ({}, {"spec": None, "status": "x"}, {"spec": {"containers": ["not-a-mapping", None]}}):
        assert isinstance(slim_pod(copy.deepcopy(odd)), dict)
    kept = slim_pod({"spec": {"containers": ["not-a-mapping"]}})
    assert kept["spec"]["containers"] == ["not-a-mapping"]


def test_replicas_share_what_they_have_in_common() -> None:
    """Two replicas of one workload on different nodes hold one copy of their containers, labels, tolerations and
    plain status; what differs (name, node, conditions) stays their own, and equal values stay equal."""
    first, second = _running_pod(), _running_pod()
    second["metadata"]["name"] = "p-2"
    second["spec"]["nodeName"] = "node-7"
    a, b = slim_pod(copy.deepcopy(first)), slim_pod(copy.deepcopy(second))
    for path in (("spec", "containers"), ("spec", "tolerations"), ("spec", "affinity"), ("metadata", "labels")):
        assert a[path[0]][path[1]] is b[path[0]][path[1]]
    assert a["spec"] is not b["spec"]
    assert (a["spec"]["nodeName"], b["spec"]["nodeName"]) == ("node-1", "node-7")
    assert bound_pod(b) == bound_pod(slim_pod(copy.deepcopy(second)))
    plain = [slim_pod({"status": {"phase": "Running", "podIP": ip}}) for ip in ("10.0.0.1", "10.0.0.2")]
    assert plain[0]["status"] is plain[1]["status"]
    assert plain[0]["status"] == {"phase": "Running"}
    different = _running_pod()
    different["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    assert slim_pod(different)["spec"]["containers"] != a["spec"]["containers"]
