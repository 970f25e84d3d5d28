"""Every upstream sample produces exactly the objects of grove-reference §4 (names, gangs, HPAs, services, pods)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest

from grove_api import PodCliqueSet
from grove_operator.desired import hpa, podgang, service

from ...fixtures.samples import sample_files

BuildHierarchy = Callable[[PodCliqueSet], Any]
LoadSample = Callable[[str], PodCliqueSet]
"""The `hierarchy` fixture: builds every object the controllers would create for a PodCliqueSet."""

Gangs = dict[str, list[tuple[str, int]]]


class Expected(TypedDict):
    """What §4 says a sample produces for PCS replica 0."""

    pclqs: list[str]
    pcsgs: list[str]
    gangs: Gangs
    hpas: list[tuple[str, str, int, int]]
    pods: int


EXPECTED: dict[str, Expected] = {
    "simple/simple1.yaml": {
        "pclqs": ["simple1-0-pca", "simple1-0-pcd", "simple1-0-sga-0-pcb", "simple1-0-sga-0-pcc"],
        "pcsgs": ["simple1-0-sga"],
        "gangs": {
            "simple1-0": [
                ("simple1-0-pca", 3),
                ("simple1-0-pcd", 2),
                ("simple1-0-sga-0-pcb", 2),
                ("simple1-0-sga-0-pcc", 2),
            ]
        },
        "hpas": [("simple1-0-pca", "PodClique", 3, 5), ("simple1-0-sga", "PodCliqueScalingGroup", 1, 6)],
        "pods": 9,
    },
    "simple/simple2-explicit-startup-order.yaml": {
        "pclqs": ["simple2-0-pca", "simple2-0-pcb", "simple2-0-pcc", "simple2-0-pcd"],
        "pcsgs": [],
        "gangs": {
            "simple2-0": [("simple2-0-pca", 3), ("simple2-0-pcb", 2), ("simple2-0-pcc", 2), ("simple2-0-pcd", 2)]
        },
        "hpas": [("simple2-0-pca", "PodClique", 3, 5)],
        "pods": 9,
    },
    "simple/simple3-explicit-startup-order.yaml": {
        "pclqs": ["simple3-0-pca", "simple3-0-pce"]
        + [f"simple3-0-sga-{j}-{c}" for j in range(3) for c in ("pcb", "pcc", "pcd")],
        "pcsgs": ["simple3-0-sga"],
        "gangs": {
            "simple3-0": [("simple3-0-pca", 3), ("simple3-0-pce", 2)]
            + [(f"simple3-0-sga-{j}-{c}", 2) for j in range(2) for c in ("pcb", "pcc", "pcd")],
            "simple3-0-sga-0": [(f"simple3-0-sga-2-{c}", 2) for c in ("pcb", "pcc", "pcd")],
        },
        "hpas": [("simple3-0-pca", "PodClique", 3, 5), ("simple3-0-sga", "PodCliqueScalingGroup", 3, 6)],
        "pods": 23,
    },
    "user-guide/01_core-concepts/single-node-aggregated.yaml": {
        "pclqs": ["single-node-aggregated-0-model-worker"],
        "pcsgs": [],
        "gangs": {"single-node-aggregated-0": [("single-node-aggregated-0-model-worker", 2)]},
        "hpas": [],
        "pods": 2,
    },
    "user-guide/01_core-concepts/single-node-disaggregated.yaml": {
        "pclqs": ["single-node-disaggregated-0-prefill", "single-node-disaggregated-0-decode"],
        "pcsgs": [],
        "gangs": {
            "single-node-disaggregated-0": [
                ("single-node-disaggregated-0-prefill", 3),
                ("single-node-disaggregated-0-decode", 2),
            ]
        },
        "hpas": [],
        "pods": 5,
    },
    "user-guide/01_core-concepts/multi-node-aggregated.yaml": {
        "pclqs": [f"multinode-aggregated-0-model-instance-{j}-{c}" for j in range(2) for c in ("leader", "worker")],
        "pcsgs": ["multinode-aggregated-0-model-instance"],
        "gangs": {
            "multinode-aggregated-0": [
                ("multinode-aggregated-0-model-instance-0-leader", 1),
                ("multinode-aggregated-0-model-instance-0-worker", 3),
            ],
            "multinode-aggregated-0-model-instance-0": [
                ("multinode-aggregated-0-model-instance-1-leader", 1),
                ("multinode-aggregated-0-model-instance-1-worker", 3),
            ],
        },
        "hpas": [],
        "pods": 8,
    },
    "user-guide/01_core-concepts/multi-node-disaggregated.yaml": {
        "pclqs": [f"multinode-disaggregated-0-prefill-{j}-{c}" for j in range(2) for c in ("pleader", "pworker")]
        + ["multinode-disaggregated-0-decode-0-dleader", "multinode-disaggregated-0-decode-0-dworker"],
        "pcsgs": ["multinode-disaggregated-0-prefill", "multinode-disaggregated-0-decode"],
        "gangs": {
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
        "hpas": [],
        "pods": 13,
    },
    "user-guide/01_core-concepts/complete-inference-pipeline.yaml": {
        "pclqs": [
            "comp-inf-ppln-0-frontend",
            "comp-inf-ppln-0-vision-encoder",
            "comp-inf-ppln-0-prefill-0-pleader",
            "comp-inf-ppln-0-prefill-0-pworker",
            "comp-inf-ppln-0-decode-cluster-0-dleader",
            "comp-inf-ppln-0-decode-cluster-0-dworker",
        ],
        "pcsgs": ["comp-inf-ppln-0-prefill", "comp-inf-ppln-0-decode-cluster"],
        "gangs": {
            "comp-inf-ppln-0": [
                ("comp-inf-ppln-0-frontend", 2),
                ("comp-inf-ppln-0-vision-encoder", 1),
                ("comp-inf-ppln-0-prefill-0-pleader", 1),
                ("comp-inf-ppln-0-prefill-0-pworker", 4),
                ("comp-inf-ppln-0-decode-cluster-0-dleader", 1),
                ("comp-inf-ppln-0-decode-cluster-0-dworker", 2),
            ]
        },
        "hpas": [],
        "pods": 11,
    },
    "user-guide/02_pod-and-resource-naming-conventions/multinode-disaggregated-with-frontend.yaml": {
        "pclqs": ["mn-disagg-0-frontend"]
        + [f"mn-disagg-0-prefill-{j}-{c}" for j in range(2) for c in ("pleader", "pworker")]
        + ["mn-disagg-0-decode-0-dleader", "mn-disagg-0-decode-0-dworker"],
        "pcsgs": ["mn-disagg-0-prefill", "mn-disagg-0-decode"],
        "gangs": {
            "mn-disagg-0": [
                ("mn-disagg-0-frontend", 2),
                ("mn-disagg-0-prefill-0-pleader", 1),
                ("mn-disagg-0-prefill-0-pworker", 3),
                ("mn-disagg-0-decode-0-dleader", 1),
                ("mn-disagg-0-decode-0-dworker", 2),
            ],
            "mn-disagg-0-prefill-0": [("mn-disagg-0-prefill-1-pleader", 1), ("mn-disagg-0-prefill-1-pworker", 3)],
        },
        "hpas": [],
        "pods": 13,
    },
    "user-guide/03_environment-variables-for-pod-discovery/standalone-env-vars.yaml": {
        "pclqs": ["env-demo-standalone-0-frontend"],
        "pcsgs": [],
        "gangs": {"env-demo-standalone-0": [("env-demo-standalone-0-frontend", 2)]},
        "hpas": [],
        "pods": 2,
    },
    "user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml": {
        "pclqs": [f"env-demo-pcsg-0-model-instance-{j}-{c}" for j in range(2) for c in ("leader", "worker")],
        "pcsgs": ["env-demo-pcsg-0-model-instance"],
        "gangs": {
            "env-demo-pcsg-0": [
                ("env-demo-pcsg-0-model-instance-0-leader", 1),
                ("env-demo-pcsg-0-model-instance-0-worker", 3),
            ],
            "env-demo-pcsg-0-model-instance-0": [
                ("env-demo-pcsg-0-model-instance-1-leader", 1),
                ("env-demo-pcsg-0-model-instance-1-worker", 3),
            ],
        },
        "hpas": [],
        "pods": 8,
    },
}

SAMPLE_PARAMS = [pytest.param(path, id=Path(path).stem) for path in EXPECTED]


def test_table_covers_every_sample() -> None:
    """The expectation table names exactly the sample files that exist."""
    assert sorted(EXPECTED) == sample_files()


@pytest.mark.parametrize("path", SAMPLE_PARAMS)
def test_podcliques_and_scaling_groups(path: str, sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """PodClique and PCSG names match §4."""
    built = hierarchy(sample(path))
    assert sorted(built.pclqs) == sorted(EXPECTED[path]["pclqs"])
    assert sorted(built.pcsgs) == sorted(EXPECTED[path]["pcsgs"])


@pytest.mark.parametrize("path", SAMPLE_PARAMS)
def test_podgangs(path: str, sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """PodGang names, podgroup order and minReplicas match §4, and every pod is referenced by its gang."""
    pcs = sample(path)
    built = hierarchy(pcs)
    live = {name: g.spec.replicas for name, g in built.pcsgs.items()}
    plans = podgang.expected_podgangs(pcs, live)
    gangs = {
        p.name: podgang.build_podgang(pcs, p, built.pods, podgang.resolve_scheduler_name(pcs, "default-scheduler"))
        for p in plans
    }
    expected = EXPECTED[path]["gangs"]
    assert list(gangs) == list(expected)
    for name, groups in expected.items():
        podgroups = gangs[name]["spec"]["podgroups"]
        assert [(g["name"], g["minReplicas"]) for g in podgroups] == groups
        for group in podgroups:
            refs = [r["name"] for r in group["podReferences"]]
            assert refs == sorted(refs)
            assert len(refs) == built.pclqs[group["name"]].spec.replicas
    assert sum(len(g["podReferences"]) for gang in gangs.values() for g in gang["spec"]["podgroups"]) == len(built.pods)
    assert all(podgang.all_pods_created(p, built.pclqs, built.pods) for p in plans)


@pytest.mark.parametrize("path", SAMPLE_PARAMS)
def test_hpas_services_and_pod_count(path: str, sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """HPAs (name, target kind, min/max), the single headless service and Σ replicas pods match §4."""
    pcs = sample(path)
    hpas = [
        (h["metadata"]["name"], h["spec"]["scaleTargetRef"]["kind"], h["spec"]["minReplicas"], h["spec"]["maxReplicas"])
        for h in hpa.build_hpas(pcs)
    ]
    assert hpas == EXPECTED[path]["hpas"]
    for h in hpa.build_hpas(pcs):
        assert h["spec"]["scaleTargetRef"]["name"] == h["metadata"]["name"]
        assert h["spec"]["scaleTargetRef"]["apiVersion"] == "grove.io/v1alpha1"
    svc = service.build_headless_service(pcs, 0)
    assert svc["metadata"]["name"] == f"{pcs.metadata.name}-0"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert len(hierarchy(pcs).pods) == EXPECTED[path]["pods"]
