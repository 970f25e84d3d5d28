"""Preferred pod affinity among the gang's own pods: the shape of a first-API PodClique ("prefer pods like me on
my rack"), which a gang placed at once would otherwise ignore (no bound pod matches its selector)."""

from __future__ import annotations

from placement_kit import bound, gang, group, node

from grove_sched.model import HOSTNAME_KEY, LabelSelector, Placement, PodAffinityTerm, WeightedPodAffinityTerm
from grove_sched.placement import Snapshot, place


def test_preferred_self_affinity_keeps_the_gang_on_one_node_over_a_tighter_spread() -> None:
    """Free GPUs 3, 3 and 7 on three nodes of one rack: six 1-GPU pods fill the two 3s exactly (no GPU stranded)
    unless they prefer each other's node, then they share the 7."""
    nodes = [node(f"n0{h}", "r0", 8) for h in range(3)]
    busy = [bound("a", "n00", gpu=5), bound("b", "n01", gpu=5), bound("c", "n02", gpu=1)]
    near = (WeightedPodAffinityTerm(100, PodAffinityTerm(LabelSelector({"app": "w"}), HOSTNAME_KEY)),)
    plain = place(Snapshot.build(nodes, busy), gang(group("w", 6, gpu=1)))
    assert isinstance(plain, Placement)
    assert set(plain.assignments.values()) == {"n00", "n01"}
    result = place(Snapshot.build(nodes, busy), gang(group("w", 6, gpu=1, preferred_pod_affinity=near)))
    assert isinstance(result, Placement)
    assert set(result.assignments.values()) == {"n02"}
