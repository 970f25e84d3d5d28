"""The slimmed pods of the operator's cache answer every question the operator asks of a pod as the full pod does."""

from __future__ import annotations

import copy
import json
from typing import Any

from grove_api import labels as glabels
from grove_operator.desired import gates, scalein
from grove_operator.desired.podgang import pod_references
from grove_operator.podcache import slim_pod
from grove_operator.status.podclique import count_pods
from grove_operator.triggers import POD_CHANGED

Obj = dict[str, Any]


def _pod(name: str, *, ready: bool, gated: bool, crashed: bool = False) -> Obj:
    """A pod as grove-sim returns it: containers with env, kubelet addresses, conditions, container statuses."""
    state = "True" if ready else "False"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "creationTimestamp": "2026-11-24T12:13:32Z",
            "labels": {
                glabels.LABEL_PODCLIQUE: "s-0-w",
                glabels.LABEL_PODGANG: "s-0",
                glabels.LABEL_POD_TEMPLATE_HASH: "abc",
                glabels.LABEL_PODCLIQUE_POD_INDEX: name[-1],
            },
            "ownerReferences": [
                {
                    "apiVersion": "grove.io/v1alpha1",
                    "kind": "PodClique",
                    "name": "s-0-w",
                    "uid": "pclq-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [{"name": "w", "image": "busybox", "env": [{"name": "GROVE_PCS_NAME", "value": "s"}]}],
            "schedulingGates": [{"name": glabels.SCHEDULING_GATE_PODGANG_PENDING}] if gated else [],
            "hostname": f"s-0-w-{name[-1]}",
            "subdomain": "s-0",
            "schedulerName": "grove-scheduler",
            "nodeName": None if gated else "node-00",
            "dnsPolicy": "ClusterFirst",
        },
        "status": {
            "phase": "Running" if not gated else "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False" if gated else "True",
                    **({"reason": "SchedulingGated"} if gated else {}),
                },
                {"type": "Ready", "status": state},
            ],
            "hostIP": "10.0.0.1",
            "podIPs": [{"ip": "10.244.0.1"}],
            "containerStatuses": [
                {
                    "name": "w",
                    "ready": ready,
                    "started": True,
                    "restartCount": 1 if crashed else 0,
                    "lastState": {"terminated": {"exitCode": 1}} if crashed else {},
                },
            ],
        },
    }


PODS = [
    _pod("p0", ready=True, gated=False),
    _pod("p1", ready=False, gated=True),
    _pod("p2", ready=False, gated=False, crashed=True),
]


def test_slim_pod_keeps_every_answer_the_operator_derives() -> None:
    """Counts, gates, scale-in order, indices and PodGang references are the same for slimmed pods."""
    slim = [slim_pod(copy.deepcopy(p)) for p in PODS]
    assert vars(count_pods(slim, "abc")) == vars(count_pods(PODS, "abc"))
    assert [gates.has_grove_gate(p) for p in slim] == [gates.has_grove_gate(p) for p in PODS]
    assert [gates.remove_gate_patch(p) for p in slim] == [gates.remove_gate_patch(p) for p in PODS]
    assert scalein.scale_in_victims(slim, 2, "abc") == scalein.scale_in_victims(PODS, 2, "abc")
    assert [scalein.pod_index(p) for p in slim] == [scalein.pod_index(p) for p in PODS]
    assert pod_references("s-0", slim) == pod_references("s-0", PODS)
    assert all(p["metadata"] == q["metadata"] for p, q in zip(slim, PODS, strict=True))


def test_slim_pod_drops_what_is_never_read() -> None:
    """Containers, addresses and the like are gone, so a cached pod is smaller."""
    full = PODS[0]
    slim = slim_pod(copy.deepcopy(full))
    assert set(slim["spec"]) == {"schedulingGates", "nodeName", "hostname", "subdomain", "schedulerName"}
    assert set(slim["status"]) == {"phase", "conditions", "containerStatuses"}
    assert len(json.dumps(slim)) < len(json.dumps(full))


def test_address_only_changes_no_longer_wake_the_podclique() -> None:
    """Between two slimmed versions, only changes the operator reads count as pod changes."""
    old = slim_pod(copy.deepcopy(PODS[0]))
    moved = copy.deepcopy(PODS[0])
    moved["status"]["podIPs"] = [{"ip": "10.244.9.9"}]
    assert not POD_CHANGED.update(old, slim_pod(moved))
    unready = copy.deepcopy(PODS[0])
    unready["status"]["conditions"][1]["status"] = "False"
    assert POD_CHANGED.update(old, slim_pod(unready))
