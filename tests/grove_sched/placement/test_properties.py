"""Property tests: hard constraints, whole-gang semantics, determinism and optimality on tiny instances."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from placement_kit import BLOCK_KEY, bound, brute_force, counts_of, gang, group, node, objective, violations

from grove_sched.model import (
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
    Taint,
    Toleration,
    TopologyConstraint,
    Unschedulable,
)
from grove_sched.placement import (
    InvalidGang,
    Snapshot,
    build_problem,
    candidates,
    deciding_level,
    greedy_plans,
    place,
    prune_bounds,
)

pytestmark = pytest.mark.slow  # CP-SAT solves over many generated instances: heavy property tests

EXACT = PlacementOptions(top_k_domains=100, max_greedy_domains=100, max_deterministic_time=10.0, refine="all")


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[NodeInfo], list[BoundPod], GangRequest]:
    """Up to 6 nodes in up to 3 racks / 2 blocks with background load, and a gang of up to 2 groups / 6 pods."""
    n_nodes = draw(st.integers(1, 6))
    nodes: list[NodeInfo] = []
    pods: list[BoundPod] = []
    for i in range(n_nodes):
        rack = draw(st.sampled_from(["r0", "r1", "r2", None]))
        gpu = draw(st.sampled_from([0, 2, 4, 8]))
        taints = (Taint("dedicated", "x"),) if draw(st.booleans()) and draw(st.booleans()) else ()
        block = None if rack is None else ("b0" if rack in ("r0", "r1") else "b1")
        name = f"n{i}"
        nodes.append(
            node(
                name,
                rack,
                gpu,
                cpu=draw(st.sampled_from([2000, 4000])),
                block=block,
                taints=taints,
                unschedulable=draw(st.integers(0, 9)) == 0,
            )
        )
        used = draw(st.integers(0, gpu))
        if used:
            pods.append(
                bound(
                    f"bg{i}",
                    name,
                    gpu=used,
                    cpu=draw(st.sampled_from([500, 1500])),
                    labels={"app": draw(st.sampled_from(["bg", "db"]))},
                )
            )
    n_groups = draw(st.integers(1, 2))
    budget = 6
    groups = []
    for k in range(n_groups):
        count = draw(st.integers(1, min(3, budget)))
        budget -= count
        anti: tuple[PodAffinityTerm, ...] = ()
        kind = draw(st.integers(0, 9))
        if kind < 3:
            anti = (PodAffinityTerm(LabelSelector({"app": f"g{k}"}), HOSTNAME_KEY),)
        elif kind == 3:
            anti = (PodAffinityTerm(LabelSelector({"app": "db"}), RACK_KEY),)
        elif kind == 4:
            anti = (PodAffinityTerm(LabelSelector({"app": f"g{1 - k}"}), RACK_KEY),)
        tolerations = (Toleration("dedicated", "Exists"),) if draw(st.booleans()) else ()
        topo = TopologyConstraint(required_key=RACK_KEY) if draw(st.integers(0, 3)) == 0 else TopologyConstraint()
        groups.append(
            group(
                f"g{k}",
                count,
                draw(st.integers(0, count)),
                gpu=draw(st.sampled_from([0, 1, 2, 4])),
                cpu=draw(st.sampled_from([500, 1000])),
                pod_anti_affinity=anti,
                tolerations=tolerations,
                topology=topo,
            )
        )
    required = draw(st.sampled_from([None, RACK_KEY, BLOCK_KEY]))
    preferred = draw(st.sampled_from([None, None, BLOCK_KEY, RACK_KEY]))
    configs: tuple[GroupConfig, ...] = ()
    if n_groups == 2 and draw(st.booleans()):
        key = draw(st.sampled_from([RACK_KEY, BLOCK_KEY]))
        configs = (GroupConfig("both", ("g0", "g1"), TopologyConstraint(key, draw(st.sampled_from([None, RACK_KEY])))),)
    return nodes, pods, gang(*groups, required=required, preferred=preferred, group_configs=configs)


FAST_PATHS = [
    EXACT,
    PlacementOptions(use_cpsat=False, top_k_domains=1, max_greedy_domains=1),
    PlacementOptions(top_k_domains=1, max_classes=1),
    PlacementOptions(max_patterns=1, max_deterministic_time=0.001),
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from(FAST_PATHS))
def test_placements_respect_every_hard_rule(
    case: tuple[list[NodeInfo], list[BoundPod], GangRequest], options: PlacementOptions
) -> None:
    """On every solver path a placement never over-commits, breaks a topology/selector/taint/anti-affinity rule,
    or misses a minimum."""
    nodes, pods, g = case
    result = place(Snapshot.build(nodes, pods), g, options)
    if isinstance(result, Placement):
        counts = counts_of(g, result)
        assert violations(nodes, pods, g, counts) == []
        for grp in g.groups:
            assert sum(c for (h, _), c in counts.items() if h == grp.name) >= grp.min_replicas


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_objective_matches_brute_force_optimum(case: tuple[list[NodeInfo], list[BoundPod], GangRequest]) -> None:
    """On tiny instances the answer is placed exactly when brute force finds a plan, with the optimal objective."""
    nodes, pods, g = case
    result = place(Snapshot.build(nodes, pods), g, EXACT)
    best = brute_force(nodes, pods, g)
    if best is None:
        assert not isinstance(result, Placement)
        return
    assert isinstance(result, Placement), result
    assert objective(nodes, pods, g, counts_of(g, result)) == best
    assert result.score == 1.0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.randoms(use_true_random=False))
def test_same_input_gives_same_answer(
    case: tuple[list[NodeInfo], list[BoundPod], GangRequest], rnd: random.Random
) -> None:
    """Calling twice, or with nodes and pods shuffled, yields the identical result."""
    nodes, pods, g = case
    first = place(Snapshot.build(nodes, pods), g)
    again = place(Snapshot.build(nodes, pods), g)
    shuffled_nodes, shuffled_pods = list(nodes), list(pods)
    rnd.shuffle(shuffled_nodes)
    rnd.shuffle(shuffled_pods)
    shuffled = place(Snapshot.build(shuffled_nodes, shuffled_pods), g)
    assert _decision(first) == _decision(again) == _decision(shuffled)


def _decision(result: Placement | Unschedulable) -> object:
    """Everything but solver statistics (CP-SAT's deterministic-time counter may differ in its last float bits)."""
    if isinstance(result, Unschedulable):
        return result.reasons
    return (dict(result.assignments), dict(result.domains), result.objective, result.score, result.stats.path)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from(FAST_PATHS[1:]))
def test_score_is_bounded_sound_and_monotone(
    case: tuple[list[NodeInfo], list[BoundPod], GangRequest], options: PlacementOptions
) -> None:
    """The score is in [0, 1], 1.0 only for an optimal plan, and a strictly worse plan never scores higher than
    the proven optimum (which scores 1.0) for the same gang and snapshot."""
    nodes, pods, g = case
    snap = Snapshot.build(nodes, pods)
    quick, exact = place(snap, g, options), place(snap, g, EXACT)
    if isinstance(quick, Placement):
        assert isinstance(exact, Placement)
        assert 0.0 <= quick.score <= 1.0
        assert exact.score == 1.0
        if quick.score == 1.0:
            assert quick.objective.key == exact.objective.key
        if quick.objective.key > exact.objective.key:
            assert quick.score < exact.score


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_score_orders_plans_like_the_objective(case: tuple[list[NodeInfo], list[BoundPod], GangRequest]) -> None:
    """Greedy-only and CP-SAT plans for the same gang and snapshot: the cheaper one never scores lower."""
    nodes, pods, g = case
    snap = Snapshot.build(nodes, pods)
    a = place(snap, g, PlacementOptions(use_cpsat=False))
    b = place(snap, g, PlacementOptions(refine="all", max_deterministic_time=0.001))
    if isinstance(a, Placement) and isinstance(b, Placement):
        if a.objective.key < b.objective.key:
            assert a.score >= b.score
        elif b.objective.key < a.objective.key:
            assert b.score >= a.score


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_per_node_fallback_model_is_also_exact(case: tuple[list[NodeInfo], list[BoundPod], GangRequest]) -> None:
    """With patterns capped to force the per-node count model, answers still match the brute-force optimum."""
    nodes, pods, g = case
    options = PlacementOptions(
        top_k_domains=100, max_greedy_domains=100, max_deterministic_time=10.0, max_patterns=1, refine="all"
    )
    result = place(Snapshot.build(nodes, pods), g, options)
    best = brute_force(nodes, pods, g)
    assert isinstance(result, Placement) == (best is not None)
    if isinstance(result, Placement):
        assert violations(nodes, pods, g, counts_of(g, result)) == []
        assert objective(nodes, pods, g, counts_of(g, result)) == best


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_medium_clusters_stay_valid_on_every_path(seed: int) -> None:
    """On 120-node clusters with random load and a mixed gang, every solver path returns a valid placement."""
    rnd = random.Random(seed)
    nodes = [node(f"n{i:03d}", f"r{i // 12}", 8, block=f"b{i // 48}") for i in range(120)]
    pods = [bound(f"bg{i}", f"n{i:03d}", gpu=rnd.randint(0, 8)) for i in range(120) if rnd.random() < 0.7]
    anti = (PodAffinityTerm(LabelSelector({"app": "d"}), HOSTNAME_KEY),)
    g = gang(
        group("p", rnd.randint(1, 4), None, gpu=rnd.choice([2, 4, 8]), topology=TopologyConstraint(RACK_KEY)),
        group("d", rnd.randint(2, 6), 2, gpu=rnd.choice([1, 2, 3]), pod_anti_affinity=anti),
        required=rnd.choice([None, BLOCK_KEY]),
        preferred=rnd.choice([None, RACK_KEY]),
    )
    snap = Snapshot.build(nodes, pods)
    for options in FAST_PATHS[1:]:
        result = place(snap, g, options)
        if isinstance(result, Placement):
            assert violations(nodes, pods, g, counts_of(g, result)) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.integers(1, 2))
def test_pruned_greedy_ranking_keeps_the_top_k_plans(
    case: tuple[list[NodeInfo], list[BoundPod], GangRequest], k: int
) -> None:
    """Every domain's bound is at most the cost of greedy's plan there (and at most the proven optimum for the
    gang), and skipping domains by bound leaves the first K plans exactly as running greedy everywhere."""
    nodes, pods, g = case
    snap = Snapshot.build(nodes, pods)
    options = PlacementOptions(top_k_domains=k)
    try:
        problem = build_problem(snap, g, options)
    except InvalidGang:
        return
    level = deciding_level(problem)
    cands = candidates(problem, level)
    bounds = prune_bounds(problem, cands)
    everywhere = greedy_plans(problem, cands, k, options.max_greedy_domains, np.full_like(bounds, -1))
    for plan in everywhere:
        assert all(int(b) <= c for b, c in zip(bounds[plan.domain], plan.cost, strict=True))
    pruned = greedy_plans(problem, cands, k, options.max_greedy_domains, bounds)
    assert [(p.cost, p.domain) for p in pruned[:k]] == [(p.cost, p.domain) for p in everywhere[:k]]
    exact = place(snap, g, EXACT)
    if level.hard and cands.ids and isinstance(exact, Placement):
        assert min(tuple(int(x) for x in bounds[d]) for d in cands.ids) <= exact.objective.key
