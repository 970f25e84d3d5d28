"""Unit tests of the pipeline stages: filter, candidate domains, greedy, node classes, objective, CP-SAT models."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from placement_kit import bound, gang, group, node

from grove_sched.model import (
    BLOCK_KEY,
    CPU,
    GPU,
    HOSTNAME_KEY,
    RACK_KEY,
    BoundPod,
    GangRequest,
    GroupConfig,
    LabelSelector,
    NodeInfo,
    Placement,
    PlacementOptions,
    PodAffinityTerm,
    PodRef,
    Taint,
    TopologyConstraint,
)
from grove_sched.placement import (
    Problem,
    Snapshot,
    build_problem,
    candidates,
    class_units,
    deciding_level,
    enumerate_patterns,
    evaluate,
    greedy,
    layout,
    node_units,
    place,
    prune_bounds,
    solve,
)

OPTS = PlacementOptions()


def _problem(nodes: list, pods: list, g: object) -> Problem:  # type: ignore[type-arg]
    return build_problem(Snapshot.build(nodes, pods), g, OPTS)  # type: ignore[arg-type]


def test_maxpods_is_the_tightest_resource_and_zero_on_filtered_nodes() -> None:
    """maxpods = min over requested resources of floor(free / request); filtered nodes get 0."""
    nodes = [node("a", gpu=8, cpu=3000), node("b", gpu=8, taints=(Taint("t"),)), node("c", gpu=3)]
    p = _problem(nodes, [bound("x", "c", gpu=1)], gang(group("w", 5, gpu=2, cpu=1000)))
    assert list(p.maxpods[0]) == [3, 0, 1]
    assert p.rejected[0]["node(s) had untolerated taint {t: NoSchedule}"] == 1


def test_bound_anti_affinity_bans_the_whole_domain() -> None:
    """Anti-affinity to a bound pod excludes every node of that pod's rack."""
    nodes = [node("a", "r0"), node("b", "r0"), node("c", "r1")]
    term = PodAffinityTerm(LabelSelector({"app": "db"}), RACK_KEY)
    p = _problem(nodes, [bound("db", "a", labels={"app": "db"})], gang(group("w", 1, pod_anti_affinity=(term,))))
    assert list(p.maxpods[0] > 0) == [False, False, True]


def test_candidates_keep_only_domains_passing_the_aggregate_check() -> None:
    """A rack is a candidate only if its slots cover every group's minimum; tightest first."""
    nodes = [node("a", "r0"), node("b", "r1"), node("c", "r1"), node("d", "r2"), node("e", "r2")]
    p = _problem(nodes, [bound("x", "d", gpu=4)], gang(group("w", 2, gpu=8), required=RACK_KEY))
    cands = candidates(p, deciding_level(p))
    assert [cands.level.names[d] for d in cands.ids] == ["r1"]


def test_greedy_fills_the_tightest_node_first() -> None:
    """Best fit: a 2-GPU pod goes to the node it fills exactly."""
    nodes = [node("a"), node("b"), node("c")]
    p = _problem(
        nodes, [bound("x", "a", gpu=1), bound("y", "b", gpu=6), bound("z", "c", gpu=4)], gang(group("w", 1, gpu=2))
    )
    counts = greedy(p, np.arange(3))
    assert counts is not None
    assert list(counts[0]) == [0, 1, 0]


def test_greedy_fills_nodes_exactly_before_leaving_one_part_filled() -> None:
    """Five 1-GPU pods on nodes with 3, 5 and 2 free GPUs: after filling the first node, the 5-GPU node would be
    left with 3 GPUs stranded; the 2-GPU node takes the rest exactly (before, greedy took nodes in order)."""
    nodes = [node("a"), node("b"), node("c")]
    p = _problem(
        nodes, [bound("x", "a", gpu=5), bound("y", "b", gpu=3), bound("z", "c", gpu=6)], gang(group("w", 5, gpu=1))
    )
    counts = greedy(p, np.arange(3))
    assert counts is not None
    assert list(counts[0]) == [3, 0, 2]


def test_greedy_fills_the_empty_node_it_opens_rather_than_a_busy_one() -> None:
    """Ten 1-GPU pods, busy nodes with 3 and 2 free GPUs, two empty nodes: filling the busy nodes first leaves 5
    pods for an empty node and 3 of its GPUs stranded; moving the 3 pods of the first busy node there fills it
    (one empty node opened either way, nothing stranded)."""
    nodes = [node("a"), node("b"), node("c"), node("d")]
    p = _problem(nodes, [bound("x", "a", gpu=5), bound("y", "b", gpu=6)], gang(group("w", 10, gpu=1)))
    counts = greedy(p, np.arange(4))
    assert counts is not None
    assert list(counts[0]) == [0, 2, 8, 0]


def test_a_blocks_bound_charges_the_room_of_its_fullest_rack_that_fits_the_role() -> None:
    """A role required in one rack, the gang preferring a block: any plan in block b0 pays at least the room of
    the fullest b0 rack that can hold the role (r1, 8 free GPUs: r0 has 4, too few for two 4-GPU pods), so greedy
    can skip blocks whose racks are all emptier than the plans it has."""
    nodes = [node("a", "r0", block="b0"), node("b", "r1", block="b0"), node("c", "r2", block="b1")]
    nodes += [node("d", "r2", block="b1")]
    g = gang(group("role", 2, gpu=4, topology=TopologyConstraint(required_key=RACK_KEY)), preferred=BLOCK_KEY)
    p = _problem(nodes, [bound("x", "a", gpu=4)], g)
    level = deciding_level(p)
    cands = candidates(p, level)
    rows = prune_bounds(p, cands)
    room = {level.names[d]: int(rows[d][layout(p).start("room")]) for d in cands.ids}
    assert room == {"b0": 8, "b1": 16}


def test_the_stranded_floor_covers_the_minimum_with_the_fewest_free_gpus_per_slot() -> None:
    """Four CPU-bound pods (two fit a node by CPU): nodes with 1, 6 and 6 free GPUs. Any plan touches nodes holding
    at least 1 + 6 + 3 (fractionally) free GPUs, so at least 10 - 4 = 6 are stranded (the best plan strands 8); the
    old floor, two nodes times the least free GPUs less 4, was 0 and left CP-SAT to prove it."""
    nodes = [node("a"), node("b"), node("c")]
    pods = [bound("x", "a", gpu=7), bound("y", "b", gpu=2), bound("z", "c", gpu=2)]
    p = _problem(nodes, pods, gang(group("w", 4, gpu=1, cpu=32_000), required=RACK_KEY))
    rows = prune_bounds(p, candidates(p, deciding_level(p)))
    assert int(rows[0][layout(p).start("stranded")]) == 6
    best = place(Snapshot.build(nodes, pods), gang(group("w", 4, gpu=1, cpu=32_000), required=RACK_KEY))
    assert isinstance(best, Placement)
    assert best.objective.stranded_gpus == 8


def test_greedy_reports_failure_when_a_minimum_cannot_fit() -> None:
    """Greedy returns None instead of a partial gang."""
    p = _problem([node("a")], [], gang(group("w", 2, gpu=8)))
    assert greedy(p, np.arange(1)) is None


def test_identical_nodes_collapse_into_one_class() -> None:
    """Nodes equal on every modelled attribute form one class, so the model does not grow with them."""
    nodes = [node(f"n{i}", "r0") for i in range(50)] + [node("odd", "r0", gpu=4)]
    p = _problem(nodes, [], gang(group("w", 4, gpu=4), required=RACK_KEY))
    units = class_units(p, np.arange(51), 512)
    assert units is not None
    assert units.kind == "class"
    assert sorted(int(u.nodes.size) for u in units.units) == [1, 50]


def test_patterns_respect_host_anti_affinity_and_the_limit() -> None:
    """Self anti-affinity per host allows one pod per node; too many patterns yields None (node model)."""
    anti = (PodAffinityTerm(LabelSelector({"app": "w"}), HOSTNAME_KEY),)
    p = _problem([node("a")], [], gang(group("w", 3, gpu=1, pod_anti_affinity=anti), group("v", 3, gpu=1)))
    patterns = enumerate_patterns(p, np.arange(1), 512)
    assert patterns is not None
    assert patterns[:, 0].max() == 1
    assert enumerate_patterns(p, np.arange(1), 3) is None


def test_class_and_per_node_models_agree_on_the_optimum() -> None:
    """The per-node fallback model reaches the same objective as the class model."""
    nodes = [node(f"n{i}", "r0") for i in range(4)]
    pods = [bound("x", "n0", gpu=3), bound("y", "n1", gpu=5)]
    p = _problem(nodes, pods, gang(group("a", 2, gpu=3), group("b", 3, 1, gpu=2), required=RACK_KEY))
    every = np.arange(4)
    by_class = class_units(p, every, 512)
    assert by_class is not None
    a = solve(p, by_class, None, OPTS)
    b = solve(p, node_units(p, every), None, OPTS)
    assert a.counts is not None
    assert b.counts is not None
    assert a.status == b.status == "OPTIMAL"
    assert evaluate(p, a.counts).key == evaluate(p, b.counts).key


def test_candidates_rank_exact_fits_before_tightness() -> None:
    """A rack whose nodes the gang fills exactly is tried before a tighter but fragmented rack."""
    nodes = [node("a", "r0"), node("b", "r0"), node("c", "r1"), node("d", "r1")]
    pods = [bound("x", "a", gpu=5), bound("y", "b", gpu=5), bound("z", "c", gpu=4), bound("w", "d", gpu=4)]
    p = _problem(nodes, pods, gang(group("w", 2, gpu=2), required=RACK_KEY))
    cands = candidates(p, deciding_level(p))
    assert [cands.level.names[d] for d in cands.ids] == ["r1", "r0"]


def test_split_computes_the_group_vector_once_and_still_splits_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    """A group without per-pod requests costs one vector computation; overriding pods form their own sub-group."""
    calls: list[dict[str, int]] = []
    original = Snapshot.vector

    def counting(self: Snapshot, requests: dict[str, int], count_pod: bool = True) -> np.ndarray:
        calls.append(dict(requests))
        return original(self, requests, count_pod)

    monkeypatch.setattr(Snapshot, "vector", counting)
    plain = group("a", 50)
    p = _problem([node("n0"), node("n1")], [], gang(plain))
    assert len(calls) == 1
    assert p.names == ("a",)
    assert len(p.pods[0]) == 50
    mixed = replace(plain, pods=(*plain.pods[:3], PodRef("a-big", requests={GPU: 4, CPU: 1000})), min_replicas=4)
    p = _problem([node("n0")], [], gang(mixed))
    assert p.names == ("a[0]", "a[1]")
    assert p.pods == (("a-0", "a-1", "a-2"), ("a-big",))


def _leader_and_workers_in_one_rack(busy_gpus: int) -> tuple[list[NodeInfo], list[BoundPod], GangRequest]:
    """Two racks of two 8-GPU nodes, r0's nodes with `busy_gpus` used each; a 2-GPU leader and four 2-GPU workers
    that must share a rack."""
    nodes = [node("a0", "r0"), node("a1", "r0"), node("b0", "r1"), node("b1", "r1")]
    pods = [bound("x0", "a0", gpu=busy_gpus), bound("x1", "a1", gpu=busy_gpus)]
    g = gang(
        group("leader", 1, gpu=2),
        group("workers", 4, gpu=2),
        group_configs=(GroupConfig("decode", ("leader", "workers"), TopologyConstraint(required_key=RACK_KEY)),),
    )
    return nodes, pods, g


def test_greedy_tries_the_next_rack_when_a_scopes_groups_do_not_fit_together() -> None:
    """Rack r0 (5 free GPUs on each of 2 nodes) passes the aggregate checks for a 2-GPU leader and four 2-GPU
    workers that must share a rack (each group's room, and 10 free GPUs for 10 asked), but node by node holds only
    4 of the 5 pods; it is the tightest rack, so greedy tries it first and, given a second try, must move on to r1
    instead of giving up; `place` gets there without CP-SAT."""
    nodes, pods, g = _leader_and_workers_in_one_rack(busy_gpus=3)
    problem = build_problem(Snapshot.build(nodes, pods), g, PlacementOptions())
    assert greedy(problem, np.arange(4)) is None  # one try: the tightest rack only
    counts = greedy(problem, np.arange(4), tries=2)
    assert counts is not None
    assert counts[:, :2].sum() == 0  # nothing in r0
    assert counts.sum(axis=1).tolist() == [1, 4]
    placed = place(Snapshot.build(nodes, pods), g, PlacementOptions(use_cpsat=False))
    assert isinstance(placed, Placement)
    assert set(placed.assignments.values()) <= {"b0", "b1"}


def test_groups_sharing_a_rack_must_fit_its_free_total_to_be_chosen() -> None:
    """r0 has room for the leader and, separately, for the four workers, but only 8 free GPUs for the 10 they ask
    together: the first pass (one try, per-group checks) fails there; the second pass skips r0 and places in r1."""
    nodes, pods, g = _leader_and_workers_in_one_rack(busy_gpus=4)
    problem = build_problem(Snapshot.build(nodes, pods), g, PlacementOptions())
    assert greedy(problem, np.arange(4)) is None
    counts = greedy(problem, np.arange(4), tries=2)
    assert counts is not None
    assert counts[:, :2].sum() == 0
