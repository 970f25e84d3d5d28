"""The topology hierarchy: levels from the gang (its ClusterTopologyBinding), preferred constraints falling back
level by level, empty domains and room at every level, nested domain identity, and an honest placementScore."""

from __future__ import annotations

from placement_kit import bound, counts_of, gang, group, node, violations

from grove_sched.model import (
    CPU,
    GPU,
    HOSTNAME_KEY,
    MEMORY,
    PODS,
    GangRequest,
    NodeInfo,
    Placement,
    PodGroup,
    PodRef,
    TopologyConstraint,
    Unschedulable,
)
from grove_sched.placement import Snapshot, place

L1, L2, L3 = "net-layer-1", "net-layer-2", "net-layer-3"
POD = "example.com/pod"
RACK = "example.com/rack"


def _placed(result: Placement | Unschedulable) -> Placement:
    assert isinstance(result, Placement), result
    return result


def _nwtopo() -> list[NodeInfo]:
    """knavigator's nwtopo cluster: 12 nodes under 6 leaf switches, 3 spine and 1 core; n1, n3, n6, n11 and n12
    are busy (cordoned, as knavigator marks them)."""
    busy = {"n1", "n3", "n6", "n11", "n12"}
    nodes = []
    for i in range(1, 13):
        name = f"n{i}"
        labels = {HOSTNAME_KEY: name, L1: f"sw1{(i + 1) // 2}", L2: f"sw2{(i + 3) // 4}", L3: "sw31"}
        alloc = {CPU: 64_000, MEMORY: 2**40, PODS: 110, GPU: 8}
        nodes.append(NodeInfo(name, labels, alloc, (), name in busy))
    return nodes


def test_knavigator_nwtopo_lands_on_the_one_spine_that_holds_the_job() -> None:
    """Three whole-node pods preferring one leaf switch: no leaf has three free nodes, so they fall back to the one
    spine that has (n5, n7, n8; knavigator's known optimum), not to any three nodes touching two leaves. The old
    objective counted leaves only and put them on n2, n9, n10 (two spines) with placementScore 1.0."""
    pods = tuple(PodRef(f"w-{i}") for i in range(3))
    job = GangRequest(
        "job",
        "default",
        (PodGroup("w", pods, 3, {GPU: 8, CPU: 1000}),),
        topology=TopologyConstraint(preferred_key=L1),
        topology_levels=(L3, L2, L1, HOSTNAME_KEY),
    )
    result = _placed(place(Snapshot.build(_nwtopo(), []), job))
    assert sorted(result.assignments.values()) == ["n5", "n7", "n8"]
    assert result.objective.preferred_violations == (0, 0, 1, 0)  # core, spine, leaf, host
    assert result.score == 1.0  # proven optimal, the leaf violation included
    assert result.stats.status == "OPTIMAL"


def test_preferred_rack_falls_back_to_one_block_before_spreading() -> None:
    """Three 8-GPU pods preferring a rack: no rack has three free nodes. Block b0 has one free node in each of
    three racks; block b1 has a rack with two. KAI's fallback takes one block before spreading (three racks of
    b0), where counting racks alone took two racks in two blocks."""
    nodes = [
        node("a1", "ra", block="b0"),
        node("a2", "ra", block="b0"),
        node("b1", "rb", block="b0"),
        node("b2", "rb", block="b0"),
        node("c1", "rc", block="b0"),
        node("c2", "rc", block="b0"),
        node("x1", "rx", block="b1"),
        node("x2", "rx", block="b1"),
        node("x3", "rx", block="b1"),
    ]
    pods = [bound(f"busy-{n}", n, gpu=8) for n in ("a2", "b2", "c2", "x3")]
    g = gang(group("w", 3, gpu=8), preferred="topology.kubernetes.io/rack")
    result = _placed(place(Snapshot.build(nodes, pods), g))
    assert sorted(result.assignments.values()) == ["a1", "b1", "c1"]
    assert result.objective.preferred_violations == (0, 2, 0)  # block, rack, host
    assert violations(nodes, pods, g, counts_of(g, result)) == []


def test_empty_domains_count_at_the_cluster_s_own_levels() -> None:
    """With the cluster's own label keys as its hierarchy, a pod goes into the rack already in use instead of
    opening an empty rack, even where the empty rack's node would strand fewer GPUs (the tier counts the narrowest
    level above the hosts, whatever its key). The old rule only knew
    `topology.kubernetes.io/rack`, so it opened the empty rack."""
    nodes = [
        node("x1", None, labels={RACK: "x", POD: "p0"}),
        node("x2", None, labels={RACK: "x", POD: "p0"}),
        node("y1", None, 7, labels={RACK: "y", POD: "p0"}),
    ]
    pods = [bound("busy", "x1", gpu=8)]
    g = gang(group("w", 1, gpu=2), topology_levels=(POD, RACK, HOSTNAME_KEY))
    result = _placed(place(Snapshot.build(nodes, pods), g))
    assert result.assignments == {"w-0": "x2"}
    assert result.objective.empty_domains_opened == (0,)  # racks, the narrowest level above the hosts


def test_racks_of_the_same_name_in_two_blocks_are_two_racks() -> None:
    """A domain is its label value and every broader level's: rack `r1` of block b0 and rack `r1` of block b1
    are different racks, so a gang requiring one rack never straddles them."""
    nodes = [node("a", "r1", block="b0"), node("b", "r1", block="b1"), node("c", "r2", block="b1")]
    pods = [bound("x", "c", gpu=8)]
    result = place(Snapshot.build(nodes, pods), gang(group("w", 2, gpu=8), required="topology.kubernetes.io/rack"))
    assert isinstance(result, Unschedulable)


def test_a_key_outside_the_hierarchy_is_its_own_level() -> None:
    """A constraint on a key the gang's hierarchy lacks still holds (the key becomes a standalone level)."""
    nodes = [node("a", labels={"zone-x": "1"}), node("b", labels={"zone-x": "2"}), node("c", labels={"zone-x": "2"})]
    g = gang(group("w", 2, gpu=8), required="zone-x", topology_levels=(RACK, HOSTNAME_KEY))
    result = _placed(place(Snapshot.build(nodes, []), g))
    assert sorted(result.assignments.values()) == ["b", "c"]
