"""The first API's two example shapes apply unchanged and run, driven through the real kubectl and plugin."""

from __future__ import annotations

import json
from typing import Any

import pytest

from grove_kubectl.output import PlacementOutput, TreeOutput, WhyOutput

from ._cluster import EXAMPLES, Run, wait_until

pytestmark = pytest.mark.kubectl

Obj = dict[str, Any]


def _pods(kubectl: Run, pgs: str) -> list[Obj]:
    out = kubectl("get", "pods", "-l", f"grove.dynamo.ai/podgangset={pgs}", "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def _bound(kubectl: Run, pgs: str, count: int) -> list[Obj] | None:
    pods = _pods(kubectl, pgs)
    return pods if len(pods) == count and all(p["spec"].get("nodeName") for p in pods) else None


def _node_labels(kubectl: Run) -> dict[str, dict[str, str]]:
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}


def test_examples_apply_unchanged_and_are_placed_all_together_in_one_rack(grove: Run) -> None:
    """PodClique first, then the PodGangSet: six pods on gpu-compute nodes, in one rack, each carrying the
    PodClique's preferred pod affinity and the PodGangSet's node affinity; tree and placement say so."""
    assert "created" in grove("apply", "-f", str(EXAMPLES / "podclique.yaml")).stdout
    assert "created" in grove("apply", "-f", str(EXAMPLES / "podgangset.yaml")).stdout
    pods = wait_until(lambda: _bound(grove, "prefill-gang", 6), "six bound pods")
    assert isinstance(pods, list)
    labels = _node_labels(grove)
    nodes = {p["spec"]["nodeName"] for p in pods}
    assert all(labels[n].get("node-type") == "gpu-compute" for n in nodes)
    assert len({labels[n]["topology.kubernetes.io/rack"] for n in nodes}) == 1
    for pod in pods:
        affinity = pod["spec"]["affinity"]
        term = affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
        assert term["podAffinityTerm"]["topologyKey"] == "topology.kubernetes.io/rack"
        required = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert required["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "node-type"
        assert pod["spec"]["schedulerName"] == "grove-scheduler"
        assert pod["metadata"]["annotations"]["grove.dynamo.ai/podcliques"] == "prefill-colocation"
    gang = json.loads(grove("get", "podgang", "prefill-gang", "-o", "json").stdout)
    assert gang["spec"]["podgroups"][0]["minReplicas"] == 6

    def status() -> Obj | None:
        pgs = json.loads(grove("get", "pgs", "prefill-gang", "-o", "json").stdout)
        return pgs if (pgs.get("status") or {}).get("readyReplicas") == 6 else None

    pgs = wait_until(status, "six ready pods in the status")
    assert isinstance(pgs, dict)
    assert pgs["status"]["scheduled"] is True
    assert {c["type"]: c["status"] for c in pgs["status"]["conditions"]} == {"Scheduled": "True", "Ready": "True"}
    clique = json.loads(grove("get", "dpclq", "prefill-colocation", "-o", "json").stdout)
    assert wait_until(
        lambda: (
            json.loads(grove("get", "dpclq", "prefill-colocation", "-o", "json").stdout)
            .get("status", {})
            .get("appliedPods")
            == 6
        ),
        "the PodClique counts the pods it shaped",
    )
    assert clique["spec"]["selector"] == {"matchLabels": {"app": "dynamo-worker"}}

    tree = TreeOutput.model_validate_json(grove("grove", "tree", "pgs/prefill-gang", "-o", "json").stdout)
    assert (tree.root.kind, tree.root.status, tree.root.ready, tree.root.total) == ("PodGangSet", "Ready", 6, 6)
    (gang_node,) = tree.root.children
    assert gang_node.kind == "PodGang"
    assert len(gang_node.children) == 6
    placement = PlacementOutput.model_validate_json(
        grove("grove", "placement", "pgs/prefill-gang", "-o", "json").stdout
    )
    (placed,) = placement.gangs
    assert (placed.pods, placed.bound_pods) == (6, 6)
    assert [d.level for d in placed.domains] == ["rack"]
    assert sum(d.gang_gpus for d in placed.domains) == 6
    (constraint,) = placed.constraints
    assert (constraint.source, constraint.required, constraint.met) == ("podAffinity", False, True)
    text = grove("grove", "placement", "pgs/prefill-gang").stdout
    assert "preferred one topology.kubernetes.io/rack" in text
    assert "\033[" not in text


def test_scaling_a_podgangset_through_the_scale_subresource(grove: Run) -> None:
    """`kubectl scale pgs` adds pods to the gang and removes the highest indices again; scaling below
    minAvailable is refused naming the field."""
    grove("scale", "pgs/prefill-gang", "--replicas=8")
    pods = wait_until(lambda: _bound(grove, "prefill-gang", 8), "eight bound pods")
    assert isinstance(pods, list)
    refused = grove("scale", "pgs/prefill-gang", "--replicas=4", check=False)
    assert refused.returncode != 0
    assert "spec.minAvailable" in refused.stderr
    grove("scale", "pgs/prefill-gang", "--replicas=6")
    wait_until(lambda: _bound(grove, "prefill-gang", 6), "six pods again")
    names = sorted(p["metadata"]["name"] for p in _pods(grove, "prefill-gang"))
    assert names == sorted(f"prefill-gang-{i}" for i in range(6))


def test_a_gang_larger_than_the_cluster_binds_nothing_and_why_says_so(grove: Run) -> None:
    """minAvailable 40 on 4 eligible nodes: no pod is bound; `why` names the scheduler's reason with the node
    counts (1 of 5 nodes lacks the node-type label), and `kubectl get pgs` shows it is not scheduled."""
    manifest = (EXAMPLES / "podgangset.yaml").read_text()
    huge = manifest.replace("prefill-gang", "huge").replace("replicas: 6", "replicas: 40")
    huge = huge.replace("minAvailable: 6", "minAvailable: 40")
    grove("apply", "-f", "-", input=huge)

    def refused() -> WhyOutput | None:
        out = WhyOutput.model_validate_json(grove("grove", "why", "pgs/huge", "-o", "json").stdout)
        return out if any(r.category == "scheduler" for r in out.reasons) else None

    why = wait_until(refused, "the scheduler's verdict")
    assert isinstance(why, WhyOutput)
    assert not why.running
    (reason,) = [r for r in why.reasons if r.category == "scheduler"]
    assert reason.object == "podgang/huge"
    assert (reason.nodes_available, reason.nodes_total) == (4, 5)
    assert [(c.reason, c.count) for c in reason.counts] == [("node(s) didn't match Pod's node affinity/selector", 1)]
    assert "needs 40 pods" in reason.message
    assert not any(p["spec"].get("nodeName") for p in _pods(grove, "huge"))
    pod_why = WhyOutput.model_validate_json(grove("grove", "why", "pod/huge-7", "-o", "yaml", "-o", "json").stdout)
    assert [r.counts for r in pod_why.reasons if r.category == "scheduler"] == [reason.counts]
    table = grove("get", "pgs", "huge", "-o", "wide").stdout
    assert "false" in table
    assert "Unschedulable" in table
    text = grove("grove", "why", "pgs/huge").stdout
    assert text.startswith("Not running: pgs/huge")
    assert "1  node(s) didn't match" in text
    grove("delete", "pgs", "huge")


def test_plain_podclique_stays_upstreams_with_both_apis_installed(grove: Run) -> None:
    """The first API's PodClique is served as `dynamopodcliques` (short `dpclq`), so `kubectl get podclique` keeps
    naming upstream's grove.io PodClique although kube-apiserver lists grove.dynamo.ai first."""
    plain = grove("get", "podclique", "-v=6").stderr
    assert "/apis/grove.io/v1alpha1/namespaces/default/podcliques" in plain
    first = grove("get", "dpclq", "-v=6").stderr
    assert "/apis/grove.dynamo.ai/v1/namespaces/default/dynamopodcliques" in first
    short = grove("get", "pclq", "-v=6").stderr
    assert "/apis/grove.io/v1alpha1/namespaces/default/podcliques" in short
