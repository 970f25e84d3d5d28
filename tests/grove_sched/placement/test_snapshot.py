"""Snapshot building, incremental updates and immutability."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from placement_kit import bound, node

from grove_sched.model import (
    CPU,
    GPU,
    HOSTNAME_KEY,
    PODS,
    BoundPod,
    GangRequest,
    LabelSelector,
    NodeInfo,
    PlacementOptions,
    PodAffinityTerm,
    PodGroup,
    PodRef,
)
from grove_sched.placement import Snapshot, place


def test_nodes_are_sorted_by_name_and_free_subtracts_bound_pods() -> None:
    """Node order is by name regardless of input order, and free = allocatable - requests (pods count 1)."""
    snap = Snapshot.build([node("b", gpu=8), node("a", gpu=4)], [bound("p", "b", gpu=3, cpu=1000)])
    assert snap.node_names == ("a", "b")
    gpu, cpu, pods = snap.resource_index(GPU), snap.resource_index(CPU), snap.resource_index(PODS)
    assert snap.free[1, gpu] == 5
    assert snap.free[1, cpu] == 64_000 - 1000
    assert snap.free[1, pods] == 109
    assert snap.free[0, gpu] == 4
    assert list(snap.empty) == [True, False]


def test_extended_resources_join_the_resource_order() -> None:
    """Resources beyond the base four are appended in sorted order."""
    n = NodeInfo("a", allocatable={"example.com/nic": 2, GPU: 8})
    snap = Snapshot.build([n], [])
    assert snap.resources[:4] == ("cpu", "memory", "pods", GPU)
    assert snap.resources[4:] == ("example.com/nic",)
    assert snap.allocatable[0, 4] == 2


def test_pods_on_unknown_nodes_are_ignored() -> None:
    """A pod bound to a node outside the snapshot neither fails the build nor consumes capacity."""
    snap = Snapshot.build([node("a")], [bound("p", "ghost", gpu=8)])
    assert snap.live_pods == ()
    assert snap.free[0, snap.resource_index(GPU)] == 8


def test_with_assumed_consumes_capacity_without_touching_the_original() -> None:
    """Assumed pods reduce free capacity and mark nodes non-empty in a new snapshot only."""
    snap = Snapshot.build([node("a"), node("b")], [])
    newer = snap.with_assumed([BoundPod("x", "default", "a", {"app": "x"}, {GPU: 8})])
    gpu = snap.resource_index(GPU)
    assert newer.free[0, gpu] == 0
    assert snap.free[0, gpu] == 8
    assert list(newer.empty) == [False, True]
    assert list(newer.pod_labels.vocab["app"]) == ["x"]


def test_arrays_are_read_only() -> None:
    """Snapshots are immutable views: writing to an array raises."""
    snap = Snapshot.build([node("a")], [])
    with pytest.raises(ValueError, match="read-only"):
        snap.free[0, 0] = 1


def test_domains_map_label_values_to_ids() -> None:
    """Every topology key becomes a node -> domain id column (-1 without the label)."""
    snap = Snapshot.build([node("a", rack="r1"), node("b", rack=None), node("c", rack="r0")], [])
    dom = snap.domains("topology.kubernetes.io/rack")
    names = snap.domain_names("topology.kubernetes.io/rack")
    assert [names[d] if d >= 0 else None for d in dom] == ["r1", None, "r0"]
    assert np.all(snap.domains("no/such-key") == -1)


def test_duplicate_node_names_are_rejected() -> None:
    """Two nodes with one name are a caller bug, not something to silently merge."""
    with pytest.raises(ValueError, match="duplicate"):
        Snapshot.build([node("a"), node("a")], [])


def test_with_assumed_extends_pod_labels_incrementally() -> None:
    """Assumed pods keep earlier label codes and add new keys and values, padding the other rows."""
    snap = Snapshot.build([node("a")], [bound("p", "a", labels={"app": "db"})])
    newer = snap.with_assumed([BoundPod("q", "default", "a", {"app": "web", "tier": "x"}, {})])
    assert list(newer.pod_labels.vocab["app"]) == ["db", "web"]
    assert list(newer.pod_labels.column("app")) == [0, 1]
    assert list(newer.pod_labels.column("tier")) == [-1, 0]
    assert list(newer.pod_count) == [2]


def _decoded(snap: Snapshot, key: str) -> list[str | None]:
    """A label's value on every bound pod, in row order (departed rows left out)."""
    vocab = snap.pod_labels.vocab.get(key, ())
    column = snap.pod_labels.column(key)[snap.pod_alive]
    return [vocab[c] if c >= 0 else None for c in column]


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2), st.sampled_from(["x", "y", "z"]), st.booleans()),
        max_size=8,
    ),
    st.sets(st.integers(0, 7)),
)
def test_without_equals_a_rebuild_from_the_remaining_pods(
    spec: list[tuple[str, int, str, bool]], removed: set[int]
) -> None:
    """Removing pods gives the same capacity, counts, pods, labels and anti-affinity as building without them."""
    term = PodAffinityTerm(LabelSelector({"app": "x"}), HOSTNAME_KEY)
    pods = [
        BoundPod(f"p{i}", "default", where, {"app": app}, {GPU: gpu, CPU: 100}, (term,) if anti else ())
        for i, (where, gpu, app, anti) in enumerate(spec)
    ]
    nodes = [node("a"), node("b"), node("c")]
    snap = Snapshot.build(nodes, pods)
    smaller = snap.without(f"p{i}" for i in removed)
    expected = Snapshot.build(nodes, [pod for i, pod in enumerate(pods) if i not in removed])
    assert np.array_equal(smaller.free, expected.free)
    assert np.array_equal(smaller.pod_count, expected.pod_count)
    assert np.array_equal(smaller.pod_node[smaller.pod_alive], expected.pod_node)
    assert smaller.live_pods == expected.live_pods
    assert smaller.num_pods == expected.num_pods
    assert _decoded(smaller, "app") == _decoded(expected, "app")
    assert list(smaller.anti_affinity_terms()) == list(expected.anti_affinity_terms())
    assert not smaller.free.flags.writeable
    assert not smaller.pod_node.flags.writeable


def test_without_matches_namespaced_names_and_ignores_unknown_pods() -> None:
    """`namespace/name` removes only that pod, bare names match every namespace, unknown names change nothing."""
    pods = [
        BoundPod("w", "default", "a", {}, {GPU: 2}),
        BoundPod("w", "other", "a", {}, {GPU: 3}),
        BoundPod("v", "other", "a", {}, {GPU: 1}),
    ]
    snap = Snapshot.build([node("a")], pods)
    gpu = snap.resource_index(GPU)
    assert snap.without(["ghost", "nobody/w"]) is snap
    assert snap.without(["other/w"]).free[0, gpu] == 8 - 2 - 1
    assert [p.namespace for p in snap.without(["w"]).live_pods] == ["other"]
    emptied = snap.without(["w", "other/v"])
    assert emptied.free[0, gpu] == 8
    assert list(emptied.empty) == [True]


HUGE = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([0, 1, 8, 2**50, 2**61, 2**62, 2**63 - 1, 2**63]))


@settings(max_examples=150, deadline=None)
@given(st.lists(HUGE, min_size=1, max_size=3), st.lists(HUGE, max_size=4), st.integers(0, 2**64))
def test_huge_integers_never_raise_and_never_wrap(allocatable: list[int], used: list[int], wanted: int) -> None:
    """Amounts beyond int64 saturate instead of raising or wrapping: free never exceeds the allocatable once
    pods are bound, and `place` answers."""
    nodes = [
        NodeInfo(f"n{i}", {HOSTNAME_KEY: f"n{i}"}, {GPU: a, CPU: 1000, PODS: 110}) for i, a in enumerate(allocatable)
    ]
    pods = [BoundPod(f"b{j}", "default", f"n{j % len(nodes)}", {}, {GPU: u}) for j, u in enumerate(used)]
    snap = Snapshot.build(nodes, [])
    for step in (
        Snapshot.build(nodes, pods),
        snap.with_assumed(pods),
        snap.with_assumed(pods).without([p.name for p in pods]),
    ):
        gpu = step.resource_index(GPU)
        assert gpu is not None
        assert (step.free[:, gpu] <= np.maximum(step.allocatable[:, gpu], 0)).all()
        request = GangRequest("g", "default", (PodGroup("w", (PodRef("w-0"),), 1, {GPU: wanted, CPU: 1}),))
        place(step, request, PlacementOptions(max_deterministic_time=0.01))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 9), st.integers(0, 5)),
        max_size=12,
    )
)
def test_domain_totals_follow_every_derivation(steps: list[tuple[bool, str, int, int]]) -> None:
    """Totals asked of a snapshot are carried through `with_assumed` and `without` by the nodes that changed,
    and always equal a sum over every node (free GPUs, negatives as 0; nodes with a pod)."""
    nodes = [node("a", "r0", 8), node("b", "r0", 4), node("c", "r1", 8), node("d", None, 8)]
    snap = Snapshot.build(nodes, [bound("x", "a", gpu=3)])
    racks = snap.domains("topology.kubernetes.io/rack")
    snap.domain_totals(racks, "room")
    snap.domain_totals(racks, "busy")
    names: list[str] = []
    for add, where, gpu, which in steps:
        if add:
            name = f"p{len(names)}"
            names.append(name)
            snap = snap.with_assumed([BoundPod(name, "default", where, {}, {GPU: gpu})])
        elif names:
            snap = snap.without([names[which % len(names)]])
    gpu_col = snap.resource_index(GPU)
    labelled = racks >= 0
    room = np.bincount(racks[labelled], weights=np.maximum(snap.free[labelled, gpu_col], 0), minlength=2)
    busy = np.bincount(racks[labelled], weights=snap.pod_count[labelled] > 0, minlength=2)
    assert snap.domain_totals(racks, "room").tolist() == room.astype(int).tolist()
    assert snap.domain_totals(racks, "busy").tolist() == busy.astype(int).tolist()
