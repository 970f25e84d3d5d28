"""Simulated cluster shapes: node objects, topology splits, YAML shape files and the openb trace."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_sim.cluster import (
    GPU_RESOURCE,
    TOPOLOGY_LABELS,
    ClusterShapeError,
    node_object,
    nodes_from_file,
    nodes_from_flags,
    openb_nodes,
    parse_topology,
)

TRACES = Path(__file__).resolve().parents[3] / "data" / "traces"
OPENB_ALL = TRACES / "alibaba-gpu-v2023_openb_node_list_all_node.csv"
OPENB_GPU = TRACES / "alibaba-gpu-v2023_openb_node_list_gpu_node.csv"
ZONE, BLOCK, RACK = (TOPOLOGY_LABELS[k] for k in ("zone", "block", "rack"))


def label(node: dict[str, Any], key: str) -> str:
    """One label of a node."""
    value = node["metadata"]["labels"][key]
    assert isinstance(value, str)
    return value


def test_node_object_shape() -> None:
    """A node is Ready, schedulable, reports allocatable == capacity and carries addresses and nodeInfo."""
    node = node_object(
        "n1",
        capacity={"cpu": "8", "memory": "32Gi", "pods": "110", GPU_RESOURCE: "4"},
        labels={"team": "a"},
        taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
        index=0,
    )
    status = node["status"]
    assert node["kind"] == "Node"
    assert node["apiVersion"] == "v1"
    assert status["capacity"] == status["allocatable"]
    assert status["capacity"] is not status["allocatable"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Ready": "True",
        "MemoryPressure": "False",
        "DiskPressure": "False",
        "PIDPressure": "False",
    }
    assert status["addresses"] == [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n1"}]
    assert status["nodeInfo"]["kubeletVersion"] == "v1.32.0-sim"
    assert status["nodeInfo"]["architecture"] == "amd64"
    assert "phase" not in status
    assert label(node, "kubernetes.io/hostname") == "n1"
    assert label(node, "team") == "a"
    assert node["spec"]["taints"] == [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
    assert "unschedulable" not in node["spec"]


def test_flags_split_nodes_evenly_over_domains() -> None:
    """zone=1,block=2,rack=4 gives 8 racks of equal size, each inside exactly one block and zone."""
    nodes = nodes_from_flags(64, 8, "zone=1,block=2,rack=4")
    assert len(nodes) == 64
    assert Counter(label(n, RACK) for n in nodes) == {f"rack-{i}": 8 for i in range(8)}
    assert Counter(label(n, BLOCK) for n in nodes) == {"block-0": 32, "block-1": 32}
    assert {label(n, ZONE) for n in nodes} == {"zone-0"}
    parents = {label(n, RACK): label(n, BLOCK) for n in nodes}
    assert Counter(parents.values()) == {"block-0": 4, "block-1": 4}
    assert all(n["status"]["capacity"][GPU_RESOURCE] == "8" for n in nodes)
    assert label(nodes[0], "nvidia.com/gpu.product") == "NVIDIA-H100-80GB-HBM3"


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.integers(1, 3), st.integers(1, 4), st.integers(1, 6))
def test_domain_sizes_differ_by_at_most_one(nodes: int, zones: int, blocks: int, racks: int) -> None:
    """Any split keeps every rack within one node of the others, names unique and hostnames equal to names."""
    built = nodes_from_flags(nodes, 2, f"zone={zones},block={blocks},rack={racks}")
    names = [n["metadata"]["name"] for n in built]
    assert len(set(names)) == nodes
    assert all(label(n, "kubernetes.io/hostname") == n["metadata"]["name"] for n in built)
    sizes = Counter(label(n, RACK) for n in built)
    if nodes >= zones * blocks * racks:
        assert len(sizes) == zones * blocks * racks
    assert max(sizes.values()) - min(sizes.values()) <= 1
    placements = {(label(n, RACK), label(n, BLOCK), label(n, ZONE)) for n in built}
    assert len(placements) == len(sizes)
    ips = {n["status"]["addresses"][0]["address"] for n in built}
    assert len(ips) == nodes


def test_domain_names_are_zero_padded() -> None:
    """Indices are padded to the width of the largest index at their level, and node names likewise."""
    nodes = nodes_from_flags(200, 0, "block=2,rack=10")
    assert label(nodes[0], RACK) == "rack-00"
    assert label(nodes[-1], RACK) == "rack-19"
    assert nodes[0]["metadata"]["name"] == "node-000"
    assert GPU_RESOURCE not in nodes[0]["status"]["capacity"]
    assert "nvidia.com/gpu.product" not in nodes[0]["metadata"]["labels"]


def test_no_topology_only_hostname() -> None:
    """Without a topology a node carries no topology labels, only its hostname."""
    node = nodes_from_flags(1, 1)[0]
    assert not set(TOPOLOGY_LABELS.values()) & set(node["metadata"]["labels"])
    assert node["metadata"]["name"] == "node-0"


@pytest.mark.parametrize(
    "text",
    ["rack=2,block=2", "zone=0", "zone", "pod=2", "zone=1,zone=2", "block=x"],
)
def test_parse_topology_rejects_bad_strings(text: str) -> None:
    """Unknown levels, bad counts and levels out of order are rejected."""
    with pytest.raises(ClusterShapeError):
        parse_topology(text)


def test_parse_topology() -> None:
    """A topology string parses outermost first, ignoring blanks."""
    assert parse_topology(" zone=1, block=2 ,rack=4,") == (("zone", 1), ("block", 2), ("rack", 4))
    assert parse_topology("") == ()


def test_openb_gpu_nodes() -> None:
    """The openb trace gives 1,213 GPU nodes with 6,212 GPUs in total, with capacities in millicores and MiB."""
    nodes = openb_nodes(OPENB_ALL)
    assert len(nodes) == 1213
    assert sum(int(n["status"]["capacity"][GPU_RESOURCE]) for n in nodes) == 6212
    first = nodes[0]["status"]["capacity"]
    assert first["cpu"].endswith("m")
    assert first["memory"].endswith("Mi")
    assert Counter(label(n, "nvidia.com/gpu.product") for n in nodes)["G2"] == 549
    assert len(openb_nodes(OPENB_ALL, gpu_only=False)) == 1523


def test_openb_file_and_topology() -> None:
    """A CSV shape file is read whole, and openb nodes can be split over a topology."""
    assert len(nodes_from_file(OPENB_GPU)) == 1213
    nodes = openb_nodes(OPENB_GPU, topology="block=4,rack=4")
    assert len({label(n, RACK) for n in nodes}) == 16


def test_openb_rejects_other_csv(tmp_path: Path) -> None:
    """A CSV without the openb columns is rejected."""
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ClusterShapeError, match="missing columns"):
        openb_nodes(path)


SHAPE = """
pools:
  - name: h100
    count: 4
    gpus: 8
    labels: {pool: h100}
    taints: ["nvidia.com/gpu=present:NoSchedule"]
    topology: block=1,rack=2
  - name: cpu
    count: 3
    cpu: "64"
    memory: 256Gi
    pods: 250
    topology: rack=3
"""


def test_yaml_shape_pools(tmp_path: Path) -> None:
    """A shape file builds each pool with its own resources, labels, taints and globally numbered domains."""
    path = tmp_path / "shape.yaml"
    path.write_text(SHAPE)
    nodes = nodes_from_file(path)
    assert [n["metadata"]["name"] for n in nodes] == ["h100-0", "h100-1", "h100-2", "h100-3", "cpu-0", "cpu-1", "cpu-2"]
    gpu, cpu = nodes[0], nodes[-1]
    assert gpu["status"]["capacity"][GPU_RESOURCE] == "8"
    assert gpu["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert label(gpu, "pool") == "h100"
    assert cpu["status"]["capacity"] == {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "1Ti"}
    assert [label(n, RACK) for n in nodes] == ["rack-0", "rack-0", "rack-1", "rack-1", "rack-2", "rack-3", "rack-4"]
    assert BLOCK not in cpu["metadata"]["labels"]


def test_yaml_shared_topology(tmp_path: Path) -> None:
    """A top-level topology splits the nodes of all pools together, in pool order."""
    path = tmp_path / "shape.yaml"
    path.write_text("topology: rack=2\npools:\n  - {name: a, count: 2}\n  - {name: b, count: 2}\n")
    assert [label(n, RACK) for n in nodes_from_file(path)] == ["rack-0", "rack-0", "rack-1", "rack-1"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pools: []", "non-empty"),
        ("pools: [{name: a, count: 1, gpu: 2}]", "unknown pool keys"),
        ("pools: [{name: A, count: 1}]", "DNS label"),
        ("pools: [{name: a, count: -1}]", "count"),
        ("pools: [{name: a, count: 1}, {name: a, count: 1}]", "used twice"),
        ("pools: [{name: a, count: 1, memory: lots}]", "quantity"),
        ("pools: [{name: a, count: 1, taints: ['x:Sometimes']}]", "effect"),
        ("topology: rack=2\npools: [{name: a, count: 1, topology: rack=1}]", "not both"),
        ("nodes: 3", "unknown keys"),
        ("- a", "mapping"),
        ("pools: [a", "invalid YAML"),
    ],
)
def test_yaml_shape_errors(tmp_path: Path, text: str, message: str) -> None:
    """Mistakes in a shape file are reported with a message that names the problem."""
    path = tmp_path / "shape.yaml"
    path.write_text(text)
    with pytest.raises(ClusterShapeError, match=message):
        nodes_from_file(path)


def test_nodes_are_independent_objects() -> None:
    """Mutating one node never changes another (no shared dicts between nodes)."""
    nodes = nodes_from_flags(2, 1, "rack=1")
    nodes[0]["metadata"]["labels"]["x"] = "y"
    nodes[0]["status"]["capacity"]["cpu"] = "1"
    nodes[0]["status"]["conditions"][0]["status"] = "True"
    assert "x" not in nodes[1]["metadata"]["labels"]
    assert nodes[1]["status"]["capacity"]["cpu"] == "192"
    assert nodes[1]["status"]["conditions"][0]["status"] == "False"
