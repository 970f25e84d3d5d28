"""Named end-to-end scenarios: the cluster grove-sim simulates and the PodCliqueSets created against it.

Two workload kinds:

* ``tas``: upstream scheduler_perf's topology-aware gang shape (kubernetes/kubernetes#139859) with GPUs: each PCS is
  one clique of ``pods_per_gang`` pods (minAvailable = all of them) with a PCS-wide *required rack* constraint, so
  each PCS yields exactly one PodGang. At 5,000 nodes (50 racks x 100 nodes x 8 GPUs) it is the shape behind
  kube-scheduler's published 492-630 pods/s for 4-pod gangs (benchmark-anchors §2.1).
* ``disagg``: the disaggregated-inference system of ``examples/disaggregated-inference.yaml`` (router, a prefill
  stage of 3 x 4 GPUs that must share a rack, decode instances of 1 + 4 x 2 GPUs that must share a rack, whole system
  preferring one block). Each PCS yields a base PodGang (router, prefill, decode instance 0) and one scaled PodGang
  (decode instance 1, gated until the base gang is scheduled): 14 pods, 32 GPUs.

``quick`` sizes keep `make bench` under 5 minutes on 2 cores together with the placement suite; ``full`` runs the
5,000-node TAS shape. Every preset creates its PodCliqueSets as fast as the benchmark can (32 requests in
flight), so the offered load exceeds what the pipeline takes and pods/s is its capacity (the report says so, and
shows the offered rate); a fixed rate below capacity would only measure the arrival rate.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PRESETS",
    "SCENARIOS",
    "TOPOLOGY_NAME",
    "Scenario",
    "pcs_body",
    "topology_body",
]

TOPOLOGY_NAME = "bench-topology"
SCHEDULER_NAME = "grove-scheduler"
TAS = "tas"
DISAGG = "disagg"
KINDS = (TAS, DISAGG)
DISAGG_PODS = 14  # router 1 + prefill 3 + 2 decode instances x (1 leader + 4 workers)
DISAGG_GANGS = 2  # base gang + the scaled gang of decode instance 1
DISAGG_GPUS = 3 * 4 + 2 * 5 * 2


@dataclass(frozen=True, slots=True)
class Scenario:
    """One end-to-end run's shape: cluster, workload kind and size, arrival rate and background load."""

    name: str
    kind: str
    nodes: int
    gpus_per_node: int
    topology: str
    pcs: int
    pods_per_gang: int = 4
    gpus_per_pod: int = 2
    rate: float = 50.0
    background: float = 0.0
    seed: int = 0
    timeout: float = 300.0
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown scenario kind {self.kind!r} (one of {', '.join(KINDS)})")
        if self.nodes < 1 or self.pcs < 1 or self.pods_per_gang < 1:
            raise ValueError("nodes, pcs and pods per gang must be positive")
        if not 0.0 <= self.background < 1.0:
            raise ValueError("background must be a fraction in [0, 1)")
        if self.rate < 0:
            raise ValueError("rate must be >= 0 (0: as fast as possible)")

    @property
    def pods_per_pcs(self) -> int:
        """Pods one PodCliqueSet produces."""
        return self.pods_per_gang if self.kind == TAS else DISAGG_PODS

    @property
    def gangs_per_pcs(self) -> int:
        """PodGangs one PodCliqueSet produces."""
        return 1 if self.kind == TAS else DISAGG_GANGS

    @property
    def expected_pods(self) -> int:
        """Workload pods the run must see bound."""
        return self.pcs * self.pods_per_pcs

    @property
    def expected_gangs(self) -> int:
        """PodGangs the run must see scheduled."""
        return self.pcs * self.gangs_per_pcs

    @property
    def gpus_per_pcs(self) -> int:
        """GPUs one PodCliqueSet requests."""
        return self.pods_per_gang * self.gpus_per_pod if self.kind == TAS else DISAGG_GPUS

    def with_overrides(self, **changes: Any) -> Scenario:
        """A copy with the given non-None fields replaced (CLI overrides)."""
        given = {key: value for key, value in changes.items() if value is not None}
        return dataclasses.replace(self, **given) if given else self

    def summary(self) -> str:
        """One line for the report."""
        what = (
            f"{self.pcs} PCS x 1 gang of {self.pods_per_gang} pods ({self.gpus_per_pod} GPUs each), required rack"
            if self.kind == TAS
            else f"{self.pcs} disaggregated-inference PCS ({DISAGG_PODS} pods, {DISAGG_GANGS} gangs, "
            f"{DISAGG_GPUS} GPUs each), required rack per prefill stage / decode instance"
        )
        rate = "as fast as possible" if self.rate == 0 else f"{self.rate:g} PCS/s"
        background = f", background {100 * self.background:.0f}% of GPUs" if self.background else ""
        return (
            f"{what}; created at {rate}; cluster {self.nodes} nodes x {self.gpus_per_node} GPUs "
            f"({self.topology}){background}"
        )


def _container(name: str, image: str, cpu: str, memory: str, gpus: int) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    resources: dict[str, Any] = {"requests": requests}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    return {"name": name, "image": image, "resources": resources}


def _clique(name: str, replicas: int, container: dict[str, Any], **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "roleName": name,
        "replicas": replicas,
        "podSpec": {"schedulerName": SCHEDULER_NAME, "containers": [container]},
    }
    spec.update(extra)
    return {"name": name, "spec": spec}


def pcs_body(scenario: Scenario, index: int, namespace: str) -> dict[str, Any]:
    """The PodCliqueSet number `index` of a scenario."""
    if scenario.kind == TAS:
        name = f"g{index:05d}"
        template: dict[str, Any] = {
            "topologyConstraint": {"topologyName": TOPOLOGY_NAME, "pack": {"required": "rack"}},
            "cliques": [
                _clique(
                    "w",
                    scenario.pods_per_gang,
                    _container("w", "registry.example.com/worker:1", "1", "4Gi", scenario.gpus_per_pod),
                    minAvailable=scenario.pods_per_gang,
                )
            ],
        }
    else:
        name = f"llm{index:04d}"
        engine = "registry.example.com/llm-engine:1.0"
        template = {
            "topologyConstraint": {"topologyName": TOPOLOGY_NAME, "pack": {"preferred": "block"}},
            "cliques": [
                _clique("router", 1, _container("router", "registry.example.com/llm-router:1.0", "2", "4Gi", 0)),
                {
                    **_clique("prefill", 3, _container("prefill", engine, "16", "128Gi", 4)),
                    "topologyConstraint": {"pack": {"required": "rack"}},
                },
                _clique("dleader", 1, _container("decode-leader", engine, "8", "64Gi", 2)),
                _clique("dworker", 4, _container("decode-worker", engine, "8", "64Gi", 2)),
            ],
            "podCliqueScalingGroups": [
                {
                    "name": "decode",
                    "cliqueNames": ["dleader", "dworker"],
                    "replicas": 2,
                    "minAvailable": 1,
                    "topologyConstraint": {"pack": {"required": "rack"}},
                }
            ],
        }
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "e2e-bench"}},
        "spec": {"replicas": 1, "template": template},
    }


def topology_body(topology: str) -> dict[str, Any]:
    """The ClusterTopologyBinding for a `grove-sim --topology` spec (its levels, broadest first, then host)."""
    levels = [part.split("=", 1)[0].strip() for part in topology.split(",") if part.strip()]
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": TOPOLOGY_NAME},
        "spec": {
            "levels": [{"domain": level, "key": f"topology.kubernetes.io/{level}"} for level in levels]
            + [{"domain": "host", "key": "kubernetes.io/hostname"}]
        },
    }


SCENARIOS: dict[str, Scenario] = {
    scenario.name: scenario
    for scenario in (
        Scenario(
            "tas-quick",
            TAS,
            nodes=1000,
            gpus_per_node=8,
            topology="block=10,rack=5",
            pcs=150,
            rate=0.0,
            description="kube-scheduler TAS shape at 1,000 nodes (50 racks x 20 nodes), make bench",
        ),
        Scenario(
            "disagg-quick",
            DISAGG,
            nodes=128,
            gpus_per_node=8,
            topology="block=2,rack=4",
            pcs=16,
            rate=0.0,
            background=0.25,
            description="disaggregated inference on 128 nodes (8 racks x 16 nodes), make bench",
        ),
        Scenario(
            "tas-5000",
            TAS,
            nodes=5000,
            gpus_per_node=8,
            topology="block=10,rack=5",
            pcs=750,
            rate=0.0,
            timeout=900.0,
            description="kube-scheduler TAS shape at 5,000 nodes (50 racks x 100 nodes), 750 x 4-pod gangs",
        ),
        Scenario(
            "disagg-full",
            DISAGG,
            nodes=1000,
            gpus_per_node=8,
            topology="block=10,rack=5",
            pcs=100,
            rate=0.0,
            background=0.5,
            timeout=900.0,
            description="disaggregated inference on 1,000 nodes with 50% background load",
        ),
        Scenario(
            "tiny",
            TAS,
            nodes=8,
            gpus_per_node=8,
            topology="block=1,rack=2",
            pcs=3,
            rate=0.0,
            timeout=60.0,
            description="8 nodes, 3 gangs: the test suite's smoke run",
        ),
    )
}

PRESETS: dict[str, tuple[str, ...]] = {
    "quick": ("tas-quick", "disagg-quick"),
    "full": ("tas-5000", "disagg-full"),
}
