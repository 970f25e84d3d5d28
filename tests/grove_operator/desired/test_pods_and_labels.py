"""Label sets (§2.2), env vars (§2.4), pod identity, gate and owner references of built PodCliques and pods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from grove_api import PodCliqueSet
from grove_api import labels as gl
from grove_operator import hashing
from grove_operator.desired import podclique, scalinggroup

BuildHierarchy = Callable[[PodCliqueSet], Any]
LoadSample = Callable[[str], PodCliqueSet]
"""The `hierarchy` fixture: builds every object the controllers would create for a PodCliqueSet."""

SIMPLE3 = "simple/simple3-explicit-startup-order.yaml"
STANDALONE_ENV = "user-guide/03_environment-variables-for-pod-discovery/standalone-env-vars.yaml"
PCSG_ENV = "user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml"


def _env_names(container: dict[str, Any]) -> list[str]:
    return [e["name"] for e in container.get("env", [])]


def _pods_of(pods: list[dict[str, Any]], pclq: str) -> list[dict[str, Any]]:
    return [p for p in pods if p["metadata"]["labels"][gl.LABEL_PODCLIQUE] == pclq]


def test_standalone_podclique_labels(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """A standalone PodClique carries exactly the §2.2 set, its finalizer and a PCS controller reference."""
    pcs = sample(SIMPLE3)
    pclq = hierarchy(pcs).pclqs["simple3-0-pca"]
    template_hash = hashing.pod_template_hash(pcs.spec.template.cliques[0], None)
    assert pclq.metadata.labels == {
        gl.LABEL_MANAGED_BY: "grove-operator",
        gl.LABEL_PART_OF: "simple3",
        gl.LABEL_NAME: "simple3-0-pca",
        gl.LABEL_COMPONENT: "pcs-podclique",
        gl.LABEL_PCS_REPLICA_INDEX: "0",
        gl.LABEL_PODGANG: "simple3-0",
        gl.LABEL_POD_TEMPLATE_HASH: template_hash,
    }
    assert pclq.metadata.finalizers == [gl.FINALIZER_PCLQ]
    assert pclq.metadata.owner_references is not None
    owner = pclq.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("PodCliqueSet", "simple3", "uid-simple3", True)
    assert pclq.spec.auto_scaling_config is not None


@pytest.mark.parametrize(
    ("name", "gang", "base"),
    [
        pytest.param("simple3-0-sga-1-pcb", "simple3-0", None, id="base-gang-member"),
        pytest.param("simple3-0-sga-2-pcb", "simple3-0-sga-0", "simple3-0", id="scaled-gang-member"),
    ],
)
def test_pcsg_member_podclique_labels(
    name: str, gang: str, base: str | None, sample: LoadSample, hierarchy: BuildHierarchy
) -> None:
    """Members carry the PCSG labels; `grove.io/base-podgang` appears only in scaled gangs."""
    built = hierarchy(sample(SIMPLE3))
    labels = built.pclqs[name].metadata.labels
    expected = {
        gl.LABEL_MANAGED_BY: "grove-operator",
        gl.LABEL_PART_OF: "simple3",
        gl.LABEL_NAME: name,
        gl.LABEL_COMPONENT: "pcsg-podclique",
        gl.LABEL_PCSG: "simple3-0-sga",
        gl.LABEL_PCSG_REPLICA_INDEX: name.split("-")[3],
        gl.LABEL_PCS_REPLICA_INDEX: "0",
        gl.LABEL_PODGANG: gang,
        gl.LABEL_POD_TEMPLATE_HASH: labels[gl.LABEL_POD_TEMPLATE_HASH],
    }
    if base is not None:
        expected[gl.LABEL_BASE_PODGANG] = base
    assert labels == expected
    refs = built.pclqs[name].metadata.owner_references
    assert refs is not None
    owner = refs[0]
    assert (owner.kind, owner.name) == ("PodCliqueScalingGroup", "simple3-0-sga")
    assert built.pclqs[name].spec.auto_scaling_config is None


def test_scaling_group_object(sample: LoadSample) -> None:
    """The PCSG has its labels, finalizer, template replicas at creation and keeps live replicas afterwards."""
    pcs = sample(SIMPLE3)
    created = scalinggroup.build_scaling_group(pcs, 0, "sga")
    assert created["metadata"]["labels"] == {
        gl.LABEL_MANAGED_BY: "grove-operator",
        gl.LABEL_PART_OF: "simple3",
        gl.LABEL_NAME: "simple3-0-sga",
        gl.LABEL_COMPONENT: "pcs-podcliquescalinggroup",
        gl.LABEL_PCS_REPLICA_INDEX: "0",
    }
    assert created["metadata"]["finalizers"] == [gl.FINALIZER_PCSG]
    assert created["spec"] == {"replicas": 3, "minAvailable": 2, "cliqueNames": ["pcb", "pcc", "pcd"]}
    from grove_api import PodCliqueScalingGroup

    live = PodCliqueScalingGroup.model_validate({**created, "spec": {**created["spec"], "replicas": 5}})
    assert scalinggroup.build_scaling_group(pcs, 0, "sga", existing=live)["spec"]["replicas"] == 5
    assert scalinggroup.member_podclique_names("simple3-0-sga", ["pcb", "pcc"], 1) == [
        "simple3-0-sga-1-pcb",
        "simple3-0-sga-1-pcc",
    ]


def test_podclique_replicas_only_seed_new_objects(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """A live PodClique keeps its scaled `spec.replicas`; a new one takes the template value."""
    pcs = sample(SIMPLE3)
    live = hierarchy(pcs).pclqs["simple3-0-pca"].model_copy(deep=True)
    live.spec.replicas = 7
    assert podclique.build_standalone_podclique(pcs, 0, "pca", existing=live)["spec"]["replicas"] == 7
    assert podclique.build_standalone_podclique(pcs, 0, "pca")["spec"]["replicas"] == 3


def test_standalone_pod(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """Standalone pods: generateName, hostname/subdomain, labels, 5 env vars first, gate, scheduler, owner."""
    built = hierarchy(sample(STANDALONE_ENV))
    pods = sorted(_pods_of(built.pods, "env-demo-standalone-0-frontend"), key=lambda p: p["spec"]["hostname"])
    assert [p["spec"]["hostname"] for p in pods] == [
        "env-demo-standalone-0-frontend-0",
        "env-demo-standalone-0-frontend-1",
    ]
    first = pods[0]
    assert first["metadata"]["generateName"] == "env-demo-standalone-0-frontend-"
    assert first["spec"]["subdomain"] == "env-demo-standalone-0"
    assert first["spec"]["schedulingGates"] == [{"name": gl.SCHEDULING_GATE_PODGANG_PENDING}]
    assert first["spec"]["schedulerName"] == "default-scheduler"
    assert first["metadata"]["labels"][gl.LABEL_PODCLIQUE] == "env-demo-standalone-0-frontend"
    assert first["metadata"]["labels"][gl.LABEL_PODCLIQUE_POD_INDEX] == "0"
    assert first["metadata"]["labels"][gl.LABEL_PODGANG] == "env-demo-standalone-0"
    owner = first["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("PodClique", "env-demo-standalone-0-frontend", True)
    env = first["spec"]["containers"][0]["env"]
    assert env[:5] == [
        {"name": "GROVE_PCS_NAME", "value": "env-demo-standalone"},
        {"name": "GROVE_PCS_INDEX", "value": "0"},
        {"name": "GROVE_PCLQ_NAME", "value": "env-demo-standalone-0-frontend"},
        {"name": "GROVE_HEADLESS_SERVICE", "value": "env-demo-standalone-0.default.svc.cluster.local"},
        {
            "name": "GROVE_PCLQ_POD_INDEX",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['grove.io/podclique-pod-index']"}},
        },
    ]
    assert _env_names(first["spec"]["containers"][0])[5:] == ["POD_NAME"]
    assert "initContainers" not in first["spec"]


def test_pcsg_pod_env_order(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """PCSG pods get the 5 common vars, then PCSG_NAME, PCSG_TEMPLATE_NUM_PODS, PCSG_INDEX, then user vars."""
    built = hierarchy(sample(PCSG_ENV))
    worker = _pods_of(built.pods, "env-demo-pcsg-0-model-instance-1-worker")[0]
    env = worker["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == [
        "GROVE_PCS_NAME",
        "GROVE_PCS_INDEX",
        "GROVE_PCLQ_NAME",
        "GROVE_HEADLESS_SERVICE",
        "GROVE_PCLQ_POD_INDEX",
        "GROVE_PCSG_NAME",
        "GROVE_PCSG_TEMPLATE_NUM_PODS",
        "GROVE_PCSG_INDEX",
    ]
    assert env[5]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['grove.io/podcliquescalinggroup']"
    assert env[6] == {"name": "GROVE_PCSG_TEMPLATE_NUM_PODS", "value": "4"}
    assert (
        env[7]["valueFrom"]["fieldRef"]["fieldPath"]
        == "metadata.labels['grove.io/podcliquescalinggroup-replica-index']"
    )
    labels = worker["metadata"]["labels"]
    assert labels[gl.LABEL_PCSG] == "env-demo-pcsg-0-model-instance"
    assert labels[gl.LABEL_PCSG_REPLICA_INDEX] == "1"
    assert labels[gl.LABEL_PODGANG] == "env-demo-pcsg-0-model-instance-0"


def test_simple3_template_num_pods(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """GROVE_PCSG_TEMPLATE_NUM_PODS is 6 for simple3 (pcb 2 + pcc 2 + pcd 2) in every container of every member."""
    built = hierarchy(sample(SIMPLE3))
    member_pods = [p for p in built.pods if gl.LABEL_PCSG in p["metadata"]["labels"]]
    assert len(member_pods) == 18
    for pod in member_pods:
        for container in pod["spec"]["containers"]:
            num = next(e for e in container["env"] if e["name"] == "GROVE_PCSG_TEMPLATE_NUM_PODS")
            assert num["value"] == "6"


def test_template_env_of_same_name_is_replaced(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """A template env var named like a Grove var is dropped in favour of Grove's value, in every container."""
    pcs = sample(STANDALONE_ENV)
    clique = pcs.spec.template.cliques[0]
    clique.spec.pod_spec["containers"][0]["env"].insert(0, {"name": "GROVE_PCS_NAME", "value": "spoofed"})
    clique.spec.pod_spec["initContainers"] = [{"name": "setup", "image": "busybox"}]
    built = hierarchy(pcs)
    spec = built.pods[0]["spec"]
    names = _env_names(spec["containers"][0])
    assert names.count("GROVE_PCS_NAME") == 1
    assert spec["containers"][0]["env"][0] == {"name": "GROVE_PCS_NAME", "value": "env-demo-standalone"}
    assert _env_names(spec["initContainers"][0])[:5] == names[:5]


def test_scheduler_name_from_template(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """A template schedulerName is kept; the default only fills an empty one."""
    pcs = sample(STANDALONE_ENV)
    pcs.spec.template.cliques[0].spec.pod_spec["schedulerName"] = "grove-scheduler"
    assert {p["spec"]["schedulerName"] for p in hierarchy(pcs).pods} == {"grove-scheduler"}


def test_pod_annotations_from_clique(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """Clique annotations reach the PodClique and its pods, minus `grove.io/topology-name`."""
    pcs = sample(STANDALONE_ENV)
    pcs.spec.template.cliques[0].annotations = {"team": "a", gl.ANNOTATION_TOPOLOGY_NAME: "x"}
    built = hierarchy(pcs)
    assert built.pclqs["env-demo-standalone-0-frontend"].metadata.annotations == {"team": "a"}
    assert all(p["metadata"]["annotations"] == {"team": "a"} for p in built.pods)
