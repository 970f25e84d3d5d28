"""Benchmark cluster shapes, built directly as `NodeInfo` lists for the placement API.

Why these shapes (benchmark-anchors §4, §7):

* `uniform(1_000)` and `uniform(5_000)`: 8-GPU nodes in a zone > block > rack > host hierarchy. Both have 50
  racks (5 per block, 5 blocks per zone), so the 5,000-node shape is upstream kube-scheduler's TAS template
  (50 racks x 100 nodes) with GPUs added, and the 1,000-node one has 20-node racks.
* `openb()`: the heterogeneous Alibaba GPU v2023 cluster, 1,213 GPU nodes with 1/2/4/8 GPUs (6,212 GPUs), read
  from `data/traces/alibaba-gpu-v2023_openb_node_list_gpu_node.csv`. The trace has no topology, so a
  deterministic synthetic one is added: nodes sorted by (GPU model, node name), cut into racks of 16 consecutive
  nodes (so racks are mostly one hardware type, as in real data centres), 8 racks per block, 4 blocks per zone.
* `knavigator()`: NVIDIA knavigator's gang benchmark, 32 eight-GPU nodes (4 racks of 8).

Background load (`with_background`) marks a share of GPUs as already used: each rack draws a utilisation level
around the share (sd 0.2), and each node's used GPUs are Binomial(gpus, level), seeded. That leaves odd free
counts (3, 5, 7 GPUs), which is where packing quality differs between strategies. Each busy node gets one
`BoundPod` holding its used GPUs and a proportional share of CPU and memory.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from grove_sched.model import CPU, GPU, MEMORY, PODS, BoundPod, NodeInfo

ZONE = "topology.kubernetes.io/zone"
BLOCK = "topology.kubernetes.io/block"
RACK = "topology.kubernetes.io/rack"
HOST = "kubernetes.io/hostname"
GPU_MODEL = "nvidia.com/gpu.product"
LEVELS: tuple[str, ...] = (ZONE, BLOCK, RACK, HOST)

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"
OPENB_NODES = TRACES / "alibaba-gpu-v2023_openb_node_list_gpu_node.csv"
MIB = 2**20
GIB = 2**30
MAX_PODS = 110


@dataclass(frozen=True, slots=True)
class Cluster:
    """Nodes plus the pods already bound to them (background load), and a short description for reports."""

    name: str
    nodes: tuple[NodeInfo, ...]
    background: tuple[BoundPod, ...] = ()
    description: str = ""

    @property
    def total_gpus(self) -> int:
        """GPUs allocatable on all nodes."""
        return sum(node.allocatable.get(GPU, 0) for node in self.nodes)

    @property
    def used_gpus(self) -> int:
        """GPUs held by background pods."""
        return sum(pod.requests.get(GPU, 0) for pod in self.background)


def _labels(name: str, rack: int, racks_per_block: int, blocks_per_zone: int) -> dict[str, str]:
    block = rack // racks_per_block
    return {
        HOST: name,
        RACK: f"rack-{rack:03d}",
        BLOCK: f"block-{block:02d}",
        ZONE: f"zone-{block // blocks_per_zone}",
    }


def uniform(
    num_nodes: int,
    nodes_per_rack: int | None = None,
    racks_per_block: int = 5,
    blocks_per_zone: int = 5,
    gpus: int = 8,
) -> Cluster:
    """`num_nodes` identical GPU nodes; by default 50 racks (num_nodes / 50 nodes each)."""
    per_rack = nodes_per_rack or max(1, num_nodes // 50)
    nodes = []
    for i in range(num_nodes):
        name = f"node-{i:05d}"
        alloc = {CPU: 192_000, MEMORY: 2048 * GIB, PODS: MAX_PODS, GPU: gpus}
        nodes.append(NodeInfo(name, _labels(name, i // per_rack, racks_per_block, blocks_per_zone), alloc))
    racks = -(-num_nodes // per_rack)
    return Cluster(
        name=f"uniform-{num_nodes}",
        nodes=tuple(nodes),
        description=f"{num_nodes} nodes x {gpus} GPUs, {racks} racks of {per_rack}, {racks_per_block} racks/block",
    )


def knavigator() -> Cluster:
    """knavigator's gang benchmark: 32 virtual DGX nodes with 8 GPUs each."""
    cluster = uniform(32, nodes_per_rack=8, racks_per_block=4, blocks_per_zone=1)
    return replace(cluster, name="knavigator-32", description="32 nodes x 8 GPUs (knavigator gang benchmark)")


def read_openb_nodes(path: Path = OPENB_NODES) -> list[dict[str, str]]:
    """Rows of the openb GPU node list (`sn, cpu_milli, memory_mib, gpu, model`), GPU nodes only."""
    with path.open(newline="") as handle:
        return [row for row in csv.DictReader(handle) if int(row["gpu"]) > 0]


def openb(
    path: Path = OPENB_NODES, nodes_per_rack: int = 16, racks_per_block: int = 8, blocks_per_zone: int = 4
) -> Cluster:
    """The openb GPU cluster with the deterministic synthetic topology described in the module docstring."""
    rows = sorted(read_openb_nodes(path), key=lambda row: (row["model"], row["sn"]))
    nodes = []
    for i, row in enumerate(rows):
        name = row["sn"]
        labels = _labels(name, i // nodes_per_rack, racks_per_block, blocks_per_zone)
        labels[GPU_MODEL] = row["model"]
        alloc = {
            CPU: int(row["cpu_milli"]),
            MEMORY: int(row["memory_mib"]) * MIB,
            PODS: MAX_PODS,
            GPU: int(row["gpu"]),
        }
        nodes.append(NodeInfo(name, labels, alloc))
    gpus = sum(int(row["gpu"]) for row in rows)
    return Cluster(
        name="openb",
        nodes=tuple(nodes),
        description=f"Alibaba openb: {len(rows)} GPU nodes (1/2/4/8 GPUs), {gpus} GPUs, racks of {nodes_per_rack}",
    )


def with_background(cluster: Cluster, share: float, seed: int) -> Cluster:
    """`cluster` with about `share` of its GPUs already used (per-rack levels, binomial per node, seeded)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"background share must be within [0, 1], got {share}")
    rng = random.Random(seed)
    levels: dict[str, float] = {}
    pods: list[BoundPod] = list(cluster.background)
    for node in cluster.nodes:
        gpus = node.allocatable.get(GPU, 0)
        rack = node.labels.get(RACK, "")
        if rack not in levels:
            levels[rack] = min(1.0, max(0.0, rng.gauss(share, 0.2))) if share > 0 else 0.0
        used = sum(rng.random() < levels[rack] for _ in range(gpus))
        if used:
            fraction = used / gpus
            requests = {
                GPU: used,
                CPU: int(node.allocatable.get(CPU, 0) * fraction * 0.5),
                MEMORY: int(node.allocatable.get(MEMORY, 0) * fraction * 0.5),
            }
            pods.append(BoundPod(f"bg-{node.name}", "background", node.name, {"app": "background"}, requests))
    result = replace(cluster, background=tuple(pods))
    actual = result.used_gpus / max(cluster.total_gpus, 1)
    return replace(
        result,
        name=f"{cluster.name}+bg{round(share * 100)}",
        description=f"{cluster.description}; background {actual:.0%} of GPUs used (seed {seed})",
    )


def gpus_per_node(nodes: Sequence[NodeInfo]) -> dict[int, int]:
    """Node count per GPU capacity (e.g. {1: 24, 2: 518, 4: 54, 8: 617} for openb)."""
    counts: dict[int, int] = {}
    for node in nodes:
        gpus = node.allocatable.get(GPU, 0)
        counts[gpus] = counts.get(gpus, 0) + 1
    return dict(sorted(counts.items()))
