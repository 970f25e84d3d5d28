"""Unschedulable answers carry reasons a person can act on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from placement_kit import bound, gang, group, node

from grove_sched.model import GroupConfig, PodGroup, PodRef, Taint, TopologyConstraint, Unschedulable
from grove_sched.placement import Snapshot, place

RACK = "topology.kubernetes.io/rack"


def _reasons(result: object) -> str:
    assert isinstance(result, Unschedulable), result
    return " | ".join(result.reasons)


def test_no_rack_with_enough_slots_names_group_size_and_best_rack() -> None:
    """The reason names the group, the pod size, the slots needed and the best rack."""
    nodes = [node("a0", "r-01")] + [node(f"b{i}", "r-07") for i in range(4)]
    pods = [bound("x", "b0", gpu=8), bound("y", "b1", gpu=6)]
    text = _reasons(place(Snapshot.build(nodes, pods), gang(group("x-0-decode", 6, gpu=4), required=RACK)))
    assert "no topology.kubernetes.io/rack domain has 6 free slots for 4-GPU pods of group x-0-decode" in text
    assert "(best: r-07 with 4)" in text


def test_node_filter_counts_read_like_kube_scheduler() -> None:
    """When no node can host a pod, the reason counts nodes per filter, e.g. Insufficient nvidia.com/gpu."""
    nodes = [node(f"n{i}", gpu=2) for i in range(40)] + [
        node(f"t{i}", taints=(Taint("maint", "true"),)) for i in range(24)
    ]
    text = _reasons(place(Snapshot.build(nodes, []), gang(group("w", 1, gpu=4))))
    assert "group w needs 1 pods: 0/64 nodes are available:" in text
    assert "40 Insufficient nvidia.com/gpu" in text
    assert "24 node(s) had untolerated taint {maint=true: NoSchedule}" in text


def test_missing_topology_key_is_reported() -> None:
    """A required key that no node carries is named."""
    text = _reasons(place(Snapshot.build([node("a", rack=None)], []), gang(group("w", 1), required=RACK)))
    assert "topology key topology.kubernetes.io/rack is carried by no node" in text


def test_per_group_rack_shortage_is_explained() -> None:
    """A group-level required rack that no rack can satisfy is named with its best rack."""
    nodes = [node("a0", "r0"), node("b0", "r1")]
    g = gang(group("d", 2, gpu=8, topology=TopologyConstraint(required_key=RACK)))
    text = _reasons(place(Snapshot.build(nodes, []), g))
    assert "pods of group d" in text
    assert "best: r0 with 1" in text


@pytest.mark.parametrize(
    ("g", "message"),
    [
        pytest.param(
            gang(PodGroup("x", (PodRef("a"), PodRef("b"), PodRef("c")), 5)),
            "group x requires 5 pods but has 3",
            id="min-above-size",
        ),
        pytest.param(gang(group("x", 1), group("x", 1)), "group x appears twice", id="duplicate-group"),
        pytest.param(
            gang(group("x", 1), group_configs=(GroupConfig("c", ("y",), TopologyConstraint()),)),
            "names unknown groups y",
            id="unknown-group",
        ),
        pytest.param(
            gang(PodGroup("x", (PodRef("a"),), 1, {"example.com/fpga": 1})),
            "requests example.com/fpga, which no node offers",
            id="unknown-resource",
        ),
    ],
)
def test_malformed_gangs_are_rejected_with_the_fix(g: object, message: str) -> None:
    """Malformed input is reported, not crashed on."""
    assert message in _reasons(place(Snapshot.build([node("a")], []), g))  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from([0, 2, 4, 8]), min_size=1, max_size=8),
    st.sampled_from([("nvidia.com/gpu", 16, 1000), ("cpu", 1, 10**9)]),
    st.text("abcxyz-", min_size=1, max_size=8),
)
def test_resource_shortage_reasons_name_the_group_and_resource(
    gpus: list[int], shortage: tuple[str, int, int], suffix: str
) -> None:
    """When no node has room for one pod, every reason names the group and the missing resource."""
    resource, gpu, cpu = shortage
    nodes = [node(f"n{i}", gpu=g) for i, g in enumerate(gpus)]
    name = f"grp-{suffix}"
    text = _reasons(place(Snapshot.build(nodes, []), gang(group(name, 2, 1, gpu=gpu, cpu=cpu))))
    assert f"group {name}" in text
    assert f"Insufficient {resource}" in text
    assert f"0/{len(nodes)} nodes are available" in text
