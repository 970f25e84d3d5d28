"""Every upstream sample becomes exactly the objects grove-reference §4 lists, with the labels and env vars of §2."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODGANGS
from grove_runtime.client import KubeClient
from grove_runtime.resources import HPAS, SERVICES

from ._harness import OperatorThread, create_pcs, items, live_pods, load_sample, names, wait_for

Obj = dict[str, Any]


@dataclass(frozen=True)
class Expected:
    """What one sample must produce for PCS replica 0."""

    path: str
    pcs: str
    pclqs: dict[str, int]
    gangs: dict[str, list[tuple[str, int]]]
    pcsgs: list[str] = field(default_factory=list)
    hpas: list[str] = field(default_factory=list)
    pcsg_num_pods: dict[str, int] = field(default_factory=dict)
    init_args: dict[str, list[str]] = field(default_factory=dict)

    @property
    def pods(self) -> int:
        """Total pod count."""
        return sum(self.pclqs.values())


def _mk(prefix: str, spec: dict[str, int]) -> dict[str, int]:
    return {f"{prefix}-{k}": v for k, v in spec.items()}


SAMPLES = [
    Expected(
        "simple/simple1.yaml",
        "simple1",
        _mk("simple1-0", {"pca": 3, "pcd": 2, "sga-0-pcb": 2, "sga-0-pcc": 2}),
        {
            "simple1-0": [
                ("simple1-0-pca", 3),
                ("simple1-0-pcd", 2),
                ("simple1-0-sga-0-pcb", 2),
                ("simple1-0-sga-0-pcc", 2),
            ]
        },
        ["simple1-0-sga"],
        ["simple1-0-pca", "simple1-0-sga"],
        {"simple1-0-sga": 4},
    ),
    Expected(
        "simple/simple2-explicit-startup-order.yaml",
        "simple2",
        _mk("simple2-0", {"pca": 3, "pcb": 2, "pcc": 2, "pcd": 2}),
        {"simple2-0": [("simple2-0-pca", 3), ("simple2-0-pcb", 2), ("simple2-0-pcc", 2), ("simple2-0-pcd", 2)]},
        hpas=["simple2-0-pca"],
        init_args={
            "simple2-0-pcb": ["--podcliques=simple2-0-pca:3"],
            "simple2-0-pcd": ["--podcliques=simple2-0-pcb:2", "--podcliques=simple2-0-pcc:2"],
        },
    ),
    Expected(
        "simple/simple3-explicit-startup-order.yaml",
        "simple3",
        _mk(
            "simple3-0",
            {"pca": 3, "pce": 2} | {f"sga-{j}-{c}": 2 for j in range(3) for c in ("pcb", "pcc", "pcd")},
        ),
        {
            "simple3-0": [("simple3-0-pca", 3), ("simple3-0-pce", 2)]
            + [(f"simple3-0-sga-{j}-{c}", 2) for j in range(2) for c in ("pcb", "pcc", "pcd")],
            "simple3-0-sga-0": [(f"simple3-0-sga-2-{c}", 2) for c in ("pcb", "pcc", "pcd")],
        },
        ["simple3-0-sga"],
        ["simple3-0-pca", "simple3-0-sga"],
        {"simple3-0-sga": 6},
        {
            "simple3-0-sga-0-pcb": ["--podcliques=simple3-0-pca:3"],
            "simple3-0-sga-2-pcd": ["--podcliques=simple3-0-sga-2-pcb:2", "--podcliques=simple3-0-sga-2-pcc:2"],
        },
    ),
    Expected(
        "user-guide/01_core-concepts/single-node-aggregated.yaml",
        "single-node-aggregated",
        {"single-node-aggregated-0-model-worker": 2},
        {"single-node-aggregated-0": [("single-node-aggregated-0-model-worker", 2)]},
    ),
    Expected(
        "user-guide/01_core-concepts/single-node-disaggregated.yaml",
        "single-node-disaggregated",
        _mk("single-node-disaggregated-0", {"prefill": 3, "decode": 2}),
        {
            "single-node-disaggregated-0": [
                ("single-node-disaggregated-0-prefill", 3),
                ("single-node-disaggregated-0-decode", 2),
            ]
        },
    ),
    Expected(
        "user-guide/01_core-concepts/multi-node-aggregated.yaml",
        "multinode-aggregated",
        _mk("multinode-aggregated-0-model-instance", {"0-leader": 1, "0-worker": 3, "1-leader": 1, "1-worker": 3}),
        {
            "multinode-aggregated-0": [
                ("multinode-aggregated-0-model-instance-0-leader", 1),
                ("multinode-aggregated-0-model-instance-0-worker", 3),
            ],
            "multinode-aggregated-0-model-instance-0": [
                ("multinode-aggregated-0-model-instance-1-leader", 1),
                ("multinode-aggregated-0-model-instance-1-worker", 3),
            ],
        },
        ["multinode-aggregated-0-model-instance"],
        pcsg_num_pods={"multinode-aggregated-0-model-instance": 4},
    ),
    Expected(
        "user-guide/01_core-concepts/multi-node-disaggregated.yaml",
        "multinode-disaggregated",
        _mk(
            "multinode-disaggregated-0",
            {"prefill-0-pleader": 1, "prefill-0-pworker": 4, "prefill-1-pleader": 1, "prefill-1-pworker": 4}
            | {"decode-0-dleader": 1, "decode-0-dworker": 2},
        ),
        {
            "multinode-disaggregated-0": [
                ("multinode-disaggregated-0-prefill-0-pleader", 1),
                ("multinode-disaggregated-0-prefill-0-pworker", 4),
                ("multinode-disaggregated-0-decode-0-dleader", 1),
                ("multinode-disaggregated-0-decode-0-dworker", 2),
            ],
            "multinode-disaggregated-0-prefill-0": [
                ("multinode-disaggregated-0-prefill-1-pleader", 1),
                ("multinode-disaggregated-0-prefill-1-pworker", 4),
            ],
        },
        ["multinode-disaggregated-0-decode", "multinode-disaggregated-0-prefill"],
        pcsg_num_pods={"multinode-disaggregated-0-prefill": 5, "multinode-disaggregated-0-decode": 3},
    ),
    Expected(
        "user-guide/01_core-concepts/complete-inference-pipeline.yaml",
        "comp-inf-ppln",
        _mk(
            "comp-inf-ppln-0",
            {"frontend": 2, "vision-encoder": 1, "prefill-0-pleader": 1, "prefill-0-pworker": 4}
            | {"decode-cluster-0-dleader": 1, "decode-cluster-0-dworker": 2},
        ),
        {
            "comp-inf-ppln-0": [
                ("comp-inf-ppln-0-frontend", 2),
                ("comp-inf-ppln-0-vision-encoder", 1),
                ("comp-inf-ppln-0-prefill-0-pleader", 1),
                ("comp-inf-ppln-0-prefill-0-pworker", 4),
                ("comp-inf-ppln-0-decode-cluster-0-dleader", 1),
                ("comp-inf-ppln-0-decode-cluster-0-dworker", 2),
            ]
        },
        ["comp-inf-ppln-0-decode-cluster", "comp-inf-ppln-0-prefill"],
    ),
    Expected(
        "user-guide/02_pod-and-resource-naming-conventions/multinode-disaggregated-with-frontend.yaml",
        "mn-disagg",
        _mk(
            "mn-disagg-0",
            {"frontend": 2, "prefill-0-pleader": 1, "prefill-0-pworker": 3, "prefill-1-pleader": 1}
            | {"prefill-1-pworker": 3, "decode-0-dleader": 1, "decode-0-dworker": 2},
        ),
        {
            "mn-disagg-0": [
                ("mn-disagg-0-frontend", 2),
                ("mn-disagg-0-prefill-0-pleader", 1),
                ("mn-disagg-0-prefill-0-pworker", 3),
                ("mn-disagg-0-decode-0-dleader", 1),
                ("mn-disagg-0-decode-0-dworker", 2),
            ],
            "mn-disagg-0-prefill-0": [("mn-disagg-0-prefill-1-pleader", 1), ("mn-disagg-0-prefill-1-pworker", 3)],
        },
        ["mn-disagg-0-decode", "mn-disagg-0-prefill"],
    ),
    Expected(
        "user-guide/03_environment-variables-for-pod-discovery/standalone-env-vars.yaml",
        "env-demo-standalone",
        {"env-demo-standalone-0-frontend": 2},
        {"env-demo-standalone-0": [("env-demo-standalone-0-frontend", 2)]},
    ),
    Expected(
        "user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml",
        "env-demo-pcsg",
        _mk("env-demo-pcsg-0-model-instance", {"0-leader": 1, "0-worker": 3, "1-leader": 1, "1-worker": 3}),
        {
            "env-demo-pcsg-0": [
                ("env-demo-pcsg-0-model-instance-0-leader", 1),
                ("env-demo-pcsg-0-model-instance-0-worker", 3),
            ],
            "env-demo-pcsg-0-model-instance-0": [
                ("env-demo-pcsg-0-model-instance-1-leader", 1),
                ("env-demo-pcsg-0-model-instance-1-worker", 3),
            ],
        },
        ["env-demo-pcsg-0-model-instance"],
        pcsg_num_pods={"env-demo-pcsg-0-model-instance": 4},
    ),
]


def _condition(obj: Obj, type_: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == type_), None)


async def _settled(kube: KubeClient, namespace: str, exp: Expected) -> list[Obj] | None:
    """The gangs once every one is Initialized=True and references every pod of the sample."""
    gangs = await items(kube, PODGANGS, namespace)
    if sorted(g["metadata"]["name"] for g in gangs) != sorted(exp.gangs):
        return None
    refs = sum(len(pg.get("podReferences") or ()) for g in gangs for pg in g["spec"]["podgroups"])
    ready = all((_condition(g, "Initialized") or {}).get("status") == "True" for g in gangs)
    return gangs if ready and refs == exp.pods else None


def _env(container: Obj) -> list[Obj]:
    return list(container.get("env") or ())


def _check_pod(pod: Obj, exp: Expected, namespace: str, pclqs: dict[str, Obj]) -> None:
    labels = pod["metadata"]["labels"]
    pclq_name = labels[glabels.LABEL_PODCLIQUE]
    pclq = pclqs[pclq_name]
    for key, value in pclq["metadata"]["labels"].items():
        assert labels[key] == value, (pod["metadata"]["name"], key)
    assert labels[glabels.LABEL_MANAGED_BY] == "grove-operator"
    assert labels[glabels.LABEL_PART_OF] == exp.pcs
    assert labels[glabels.LABEL_PCS_REPLICA_INDEX] == "0"
    index = int(labels[glabels.LABEL_PODCLIQUE_POD_INDEX])
    spec = pod["spec"]
    assert spec["hostname"] == f"{pclq_name}-{index}"
    assert spec["subdomain"] == f"{exp.pcs}-0"
    assert spec["schedulerName"] == "grove-scheduler"
    assert pod["metadata"]["name"].startswith(f"{pclq_name}-")
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("PodClique", pclq_name, True)
    for container in spec["containers"]:
        env = _env(container)
        by_name = {e["name"]: e for e in env}
        common = [
            "GROVE_PCS_NAME",
            "GROVE_PCS_INDEX",
            "GROVE_PCLQ_NAME",
            "GROVE_HEADLESS_SERVICE",
            "GROVE_PCLQ_POD_INDEX",
        ]
        pcsg = labels.get(glabels.LABEL_PCSG)
        extra = ["GROVE_PCSG_NAME", "GROVE_PCSG_TEMPLATE_NUM_PODS", "GROVE_PCSG_INDEX"] if pcsg else []
        assert [e["name"] for e in env[: len(common) + len(extra)]] == common + extra
        assert by_name["GROVE_PCS_NAME"]["value"] == exp.pcs
        assert by_name["GROVE_PCS_INDEX"]["value"] == "0"
        assert by_name["GROVE_PCLQ_NAME"]["value"] == pclq_name
        assert by_name["GROVE_HEADLESS_SERVICE"]["value"] == f"{exp.pcs}-0.{namespace}.svc.cluster.local"
        assert by_name["GROVE_PCLQ_POD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == (
            "metadata.labels['grove.io/podclique-pod-index']"
        )
        if pcsg:
            assert by_name["GROVE_PCSG_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == (
                "metadata.labels['grove.io/podcliquescalinggroup']"
            )
            assert by_name["GROVE_PCSG_TEMPLATE_NUM_PODS"]["value"] == str(
                exp.pcsg_num_pods.get(pcsg, by_name["GROVE_PCSG_TEMPLATE_NUM_PODS"]["value"])
            )
    if pclq_name in exp.init_args:
        initc = spec["initContainers"][-1]
        assert initc["name"] == "grove-initc"
        assert initc["args"] == exp.init_args[pclq_name]


@pytest.mark.parametrize("exp", [pytest.param(e, id=e.pcs) for e in SAMPLES])
async def test_sample_objects(operator: OperatorThread, kube: KubeClient, namespace: str, exp: Expected) -> None:
    """The sample yields exactly its PodCliques, PCSGs, gangs (groups, minReplicas), HPAs, services and pods."""
    await create_pcs(kube, namespace, load_sample(exp.path))
    gangs = await wait_for(lambda: _settled(kube, namespace, exp), f"gangs of {exp.pcs}")

    assert await names(kube, PODCLIQUES, namespace) == sorted(exp.pclqs)
    assert await names(kube, PODCLIQUESCALINGGROUPS, namespace) == sorted(exp.pcsgs)
    assert await names(kube, HPAS, namespace) == sorted(exp.hpas)
    assert await names(kube, SERVICES, namespace) == [f"{exp.pcs}-0"]
    for gang in gangs:
        name = gang["metadata"]["name"]
        groups = [(g["name"], g["minReplicas"]) for g in gang["spec"]["podgroups"]]
        assert groups == exp.gangs[name], name
        for group in gang["spec"]["podgroups"]:
            refs = [r["name"] for r in group["podReferences"]]
            assert refs == sorted(refs)
            assert len(refs) == exp.pclqs[group["name"]]
        assert gang["status"]["phase"] == "Pending"
        assert gang["metadata"]["labels"][glabels.LABEL_SCHEDULER_NAME] == "grove-scheduler"
        assert gang["metadata"]["labels"][glabels.LABEL_COMPONENT] == "podgang"

    pods = await live_pods(kube, namespace)
    assert len(pods) == exp.pods
    pclqs = {p["metadata"]["name"]: p for p in await items(kube, PODCLIQUES, namespace)}
    per_pclq: dict[str, list[int]] = {}
    for pod in pods:
        _check_pod(pod, exp, namespace, pclqs)
        labels = pod["metadata"]["labels"]
        per_pclq.setdefault(labels[glabels.LABEL_PODCLIQUE], []).append(int(labels[glabels.LABEL_PODCLIQUE_POD_INDEX]))
    assert {k: sorted(v) for k, v in per_pclq.items()} == {k: list(range(n)) for k, n in exp.pclqs.items()}
    for name, pclq in pclqs.items():
        assert pclq["spec"]["replicas"] == exp.pclqs[name]
        assert glabels.FINALIZER_PCLQ in pclq["metadata"]["finalizers"]
