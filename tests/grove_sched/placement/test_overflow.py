"""No overflow at any size: huge capacities and 50,000-node clusters get correct answers, not errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model
from placement_kit import bound, brute_force, counts_of, gang, group, node, objective, violations

from grove_sched.model import (
    BLOCK_KEY,
    CPU,
    GPU,
    HOSTNAME_KEY,
    MEMORY,
    PODS,
    RACK_KEY,
    ZONE_KEY,
    BoundPod,
    GangRequest,
    GroupConfig,
    NodeInfo,
    Placement,
    PlacementOptions,
    PodGroup,
    PodRef,
    TopologyConstraint,
)
from grove_sched.placement import Layout, Snapshot, place, solve_lexicographically, stages

STAGE_LIMIT = 2**62  # a stage's weighted range stays below it (int64 with room to spare)

EXACT = PlacementOptions(top_k_domains=100, max_greedy_domains=100, max_deterministic_time=10.0, refine="all")


def test_stages_split_tiers_that_do_not_fit_int64_together_and_solve_them_in_order() -> None:
    """Two tiers of range 2^40 each cannot share one weighted objective; as two stages the solve is still the
    lexicographic optimum: first the least x, then the most y that x allows."""
    model = cp_model.CpModel()
    x = model.new_int_var(0, 2**40, "x")
    y = model.new_int_var(0, 2**40, "y")
    model.add(x + y <= 2**40 + 1)
    model.add(x >= 3)
    terms = [{x.index: 1}, {y.index: -1}]
    plan = stages(model, terms)
    assert [[position for position, *_ in stage] for stage in plan] == [[0], [1]]
    for stage in plan:
        assert sum(weight * (high - low) for _, weight, low, high in stage) < STAGE_LIMIT
    solved = solve_lexicographically(model, terms, [0, 0], Layout((1, 1)), None, (), PlacementOptions())
    assert solved.values is not None
    assert (solved.values[x.index], solved.values[y.index]) == (3, 2**40 - 2)
    assert solved.optimal
    assert solved.stages == 2


@st.composite
def huge(draw: st.DrawFn) -> tuple[list[NodeInfo], list[BoundPod], GangRequest]:
    """Tiny clusters whose GPU counts are scaled by up to 2^55: every GPU tier's bound multiplies far past int64."""
    scale = draw(st.sampled_from([2**20, 2**40, 2**55]))
    nodes: list[NodeInfo] = []
    pods: list[BoundPod] = []
    for i in range(draw(st.integers(2, 5))):
        rack = draw(st.sampled_from(["r0", "r1", "r2"]))
        gpus = draw(st.sampled_from([2, 4, 8]))
        nodes.append(node(f"n{i}", rack, gpus * scale, cpu=64_000, block="b0" if rack != "r2" else "b1"))
        used = draw(st.integers(0, gpus))
        if used:
            pods.append(bound(f"bg{i}", f"n{i}", gpu=used * scale, cpu=100))
    groups = [
        group(f"g{k}", count, draw(st.integers(1, count)), gpu=draw(st.sampled_from([1, 2, 4])) * scale, cpu=100)
        for k, count in enumerate(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    ]
    return nodes, pods, gang(*groups, required=draw(st.sampled_from([None, RACK_KEY, BLOCK_KEY])))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(huge())
def test_huge_bounds_still_give_the_brute_force_optimum(
    case: tuple[list[NodeInfo], list[BoundPod], GangRequest],
) -> None:
    """With capacities of up to 2^58 GPUs per node the answer is placed exactly when brute force finds a plan,
    with the optimal objective and a valid placement (the old single weighted sum refused these gangs)."""
    nodes, pods, g = case
    result = place(Snapshot.build(nodes, pods), g, EXACT)
    best = brute_force(nodes, pods, g)
    assert isinstance(result, Placement) == (best is not None), result
    if isinstance(result, Placement):
        assert violations(nodes, pods, g, counts_of(g, result)) == []
        assert objective(nodes, pods, g, counts_of(g, result)) == best


def _cluster(num_nodes: int, busy_gpu_nodes: int = 0) -> tuple[list[NodeInfo], list[BoundPod]]:
    """100-node racks, 5 racks a block, 5 blocks a zone, 8 GPUs a node; a few nodes half busy."""
    nodes = []
    for i in range(num_nodes):
        rack = i // 100
        labels = {
            HOSTNAME_KEY: f"n{i:06d}",
            RACK_KEY: f"r{rack:04d}",
            BLOCK_KEY: f"b{rack // 5:03d}",
            ZONE_KEY: f"z{rack // 25:02d}",
        }
        nodes.append(NodeInfo(f"n{i:06d}", labels, {CPU: 192_000, MEMORY: 2**41, PODS: 110, GPU: 8}))
    pods = [BoundPod(f"bg{i}", "bg", f"n{i * 97:06d}", {}, {GPU: 4, CPU: 8000}) for i in range(busy_gpu_nodes)]
    return nodes, pods


def _group(name: str, count: int, gpus: int, required: str | None = None) -> PodGroup:
    pods = tuple(PodRef(f"{name}-{i}") for i in range(count))
    return PodGroup(name, pods, count, {GPU: gpus, CPU: 1000 * gpus}, topology=TopologyConstraint(required))


@pytest.mark.slow
def test_the_shapes_that_overflowed_at_50000_nodes_place() -> None:
    """At 50,000 nodes a 16 x 8-GPU gang required in one block overflowed even on an empty cluster, and with a
    few GPU nodes busy a prefill + decode gang (required block, each role a required rack) and a 4 x 8-GPU
    leader/worker gang (required rack) were refused with "objective weights overflow int64". All place now."""
    empty = Snapshot.build(*_cluster(50_000))
    busy = Snapshot.build(*_cluster(50_000, busy_gpu_nodes=40))
    block = GangRequest("b", "bench", (_group("w", 16, 8),), topology=TopologyConstraint(BLOCK_KEY))
    disagg = GangRequest(
        "d",
        "bench",
        (_group("prefill", 3, 4, RACK_KEY), _group("decode", 4, 2, RACK_KEY)),
        topology=TopologyConstraint(BLOCK_KEY),
    )
    leader_worker = GangRequest(
        "lw",
        "bench",
        (_group("leader", 1, 8), _group("worker", 3, 8)),
        group_configs=(GroupConfig("lw", ("leader", "worker"), TopologyConstraint(RACK_KEY)),),
    )
    for snapshot, g in ((empty, block), (busy, block), (busy, disagg), (busy, leader_worker)):
        result = place(snapshot, g)
        assert isinstance(result, Placement), result
        assert len(result.assignments) == sum(len(grp.pods) for grp in g.groups)
        blocks = {snapshot.node_labels.column(BLOCK_KEY)[snapshot.node_index[n]] for n in result.assignments.values()}
        assert len(blocks) == 1
    assert np.all(busy.free[:, busy.resource_index(GPU)] >= 0)
