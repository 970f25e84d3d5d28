"""Greedy baselines never over-commit, always honour required topology, and follow their documented orders."""

from __future__ import annotations

import pytest
from benchmarks.harness.baselines import BEST_FIT, FIRST_FIT, KAI, KINDS, Greedy
from benchmarks.harness.clusters import BLOCK, HOST, RACK
from benchmarks.harness.validate import violations
from benchmarks.harness.workloads import group
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_sched.model import CPU, GPU, MEMORY, PODS, BoundPod, GangRequest, GroupConfig, NodeInfo, TopologyConstraint
from grove_sched.placement import Snapshot

GIB = 2**30


def _node(i: int, gpus: int, per_rack: int) -> NodeInfo:
    name = f"n{i:02d}"
    labels = {HOST: name, RACK: f"r{i // per_rack}", BLOCK: f"b{i // (2 * per_rack)}"}
    return NodeInfo(name, labels, {CPU: 192_000, MEMORY: 2048 * GIB, PODS: 110, GPU: gpus})


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Snapshot, GangRequest]:
    """A small random cluster with random usage and a random gang with random required scopes."""
    per_rack = draw(st.integers(1, 4))
    caps = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=12))
    nodes = [_node(i, gpus, per_rack) for i, gpus in enumerate(caps)]
    pods = []
    for node, gpus in zip(nodes, caps, strict=True):
        used = draw(st.integers(0, gpus))
        if used:
            pods.append(BoundPod(f"bg-{node.name}", "bg", node.name, {}, {GPU: used, CPU: 1000 * used}))
    keys = st.sampled_from([None, RACK, BLOCK])
    groups = []
    for g in range(draw(st.integers(1, 3))):
        count = draw(st.integers(1, 5))
        groups.append(
            group(
                f"g{g}",
                count,
                draw(st.integers(1, 4)),
                minimum=draw(st.integers(0, count)),
                required=draw(keys),
                cpu=draw(st.sampled_from([1000, 16_000])),
                memory=GIB,
            )
        )
    configs: tuple[GroupConfig, ...] = ()
    if len(groups) > 1 and draw(st.booleans()):
        configs = (GroupConfig("cfg", (groups[0].name, groups[1].name), TopologyConstraint(required_key=draw(keys))),)
    topology = TopologyConstraint(required_key=draw(keys), preferred_key=draw(keys))
    gang = GangRequest("gang", "bench", tuple(groups), topology=topology, group_configs=configs)
    return Snapshot.build(nodes, pods), gang


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenarios())
def test_baselines_respect_every_hard_constraint(kind: str, case: tuple[Snapshot, GangRequest]) -> None:
    """Whatever a baseline returns fits the free resources, meets every minimum and every required domain."""
    snapshot, gang = case
    decision = Greedy(kind)(snapshot, gang)
    if decision is not None:
        assert violations(snapshot, gang, decision.assignments) == []


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None)
@given(count=st.integers(1, 8), gpus=st.sampled_from([1, 2, 4, 8]))
def test_baselines_place_what_fits_an_empty_rack(kind: str, count: int, gpus: int) -> None:
    """On an empty cluster a gang that fits one rack is always placed, whole, inside one rack."""
    nodes = [_node(i, 8, 8) for i in range(16)]
    snapshot = Snapshot.build(nodes, [])
    gang = GangRequest("g", "bench", (group("w", count, gpus),), topology=TopologyConstraint(required_key=RACK))
    decision = Greedy(kind)(snapshot, gang)
    assert decision is not None
    assert len(decision.assignments) == count
    assert violations(snapshot, gang, decision.assignments) == []


def _loaded(free_per_rack: list[int]) -> Snapshot:
    """One 8-GPU node per rack with the given free GPUs."""
    nodes = [_node(i, 8, 1) for i in range(len(free_per_rack))]
    pods = [
        BoundPod(f"bg{i}", "bg", n.name, {}, {GPU: 8 - f})
        for i, (n, f) in enumerate(zip(nodes, free_per_rack, strict=True))
        if f < 8
    ]
    return Snapshot.build(nodes, pods)


def test_first_fit_takes_the_first_rack_by_name_and_best_fit_the_tightest() -> None:
    """First fit uses rack order, best fit and the KAI-like greedy the fullest rack that still fits."""
    snapshot = _loaded([8, 5, 3, 4])
    gang = GangRequest("g", "bench", (group("w", 3, 1),), topology=TopologyConstraint(required_key=RACK))
    chosen = {}
    for kind in (FIRST_FIT, BEST_FIT, KAI):
        decision = Greedy(kind)(snapshot, gang)
        assert decision is not None
        chosen[kind] = set(decision.assignments.values())
    assert chosen[FIRST_FIT] == {"n00"}
    assert chosen[BEST_FIT] == {"n02"}
    assert chosen[KAI] == {"n02"}


def test_extras_are_best_effort_and_minimum_is_all_or_nothing() -> None:
    """Pods above the minimum are placed only where they fit; a minimum that cannot fit yields no decision."""
    snapshot = _loaded([3])
    fits = GangRequest("g", "bench", (group("w", 5, 1, minimum=2),))
    decision = Greedy(BEST_FIT)(snapshot, fits)
    assert decision is not None
    assert len(decision.assignments) == 3
    too_big = GangRequest("h", "bench", (group("w", 5, 1, minimum=4),))
    assert Greedy(BEST_FIT)(snapshot, too_big) is None


def test_unknown_baseline_is_rejected() -> None:
    """Asking for a baseline that does not exist fails loudly."""
    with pytest.raises(ValueError, match="unknown baseline"):
        Greedy("random")
