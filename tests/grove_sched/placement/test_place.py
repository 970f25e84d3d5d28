"""Scenario tests for `place`: topology scopes, affinity, extras, heterogeneous groups, scoring, incremental use."""

from __future__ import annotations

import pytest
from placement_kit import BLOCK_KEY, bound, counts_of, gang, group, node, violations

from grove_sched.model import (
    GPU,
    HOSTNAME_KEY,
    RACK_KEY,
    GroupConfig,
    LabelSelector,
    NodeSelectorTerm,
    Placement,
    PlacementOptions,
    PodAffinityTerm,
    PodRef,
    PreferredNodeTerm,
    Requirement,
    Taint,
    Toleration,
    TopologyConstraint,
    Unschedulable,
)
from grove_sched.placement import Snapshot, assumed_pods, place


def _racks(n_racks: int, per_rack: int, gpu: int = 8, blocks: int = 1) -> list:  # type: ignore[type-arg]
    return [
        node(f"n{r}{h}", f"r{r}", gpu, block=f"b{r * blocks // n_racks}")
        for r in range(n_racks)
        for h in range(per_rack)
    ]


def _placed(result: Placement | Unschedulable) -> Placement:
    assert isinstance(result, Placement), result
    return result


def test_required_rack_puts_the_whole_gang_in_the_one_rack_that_fits() -> None:
    """Four 8-GPU pods with a required rack land in the only rack with four free nodes."""
    nodes = _racks(3, 4)
    pods = [bound("x0", "n00", gpu=1), bound("x2", "n20", gpu=1)]
    g = gang(group("w", 4, gpu=8), required=RACK_KEY)
    result = _placed(place(Snapshot.build(nodes, pods), g))
    assert {n[:2] for n in result.assignments.values()} == {"n1"}
    assert result.domains == {f"gang gang {RACK_KEY}": "r1"}
    assert violations(nodes, pods, g, counts_of(g, result)) == []


def test_gang_prefers_a_partly_used_rack_over_opening_an_empty_one() -> None:
    """Consolidation: a small gang goes to a rack that is already in use (tier: empty racks opened)."""
    nodes = _racks(2, 2)
    pods = [bound("x", "n11", gpu=2)]
    result = _placed(place(Snapshot.build(nodes, pods), gang(group("w", 1, gpu=2), required=RACK_KEY)))
    assert result.assignments == {"w-0": "n11"}
    assert result.objective.empty_domains == 0
    assert result.objective.stranded_gpus == 4


def test_per_group_racks_with_preferred_block_stay_in_one_block() -> None:
    """Per-group required racks are honoured and the preferred block keeps both groups together."""
    nodes = _racks(4, 2, blocks=2)
    pods = [bound("x0", "n00", gpu=8), bound("x1", "n01", gpu=8), bound("x2", "n20", gpu=6)]
    rack = TopologyConstraint(required_key=RACK_KEY)
    g = gang(group("p", 2, gpu=4, topology=rack), group("d", 3, gpu=2, topology=rack), preferred=BLOCK_KEY)
    result = _placed(place(Snapshot.build(nodes, pods), g))
    blocks = {n[1] for n in result.assignments.values()}
    assert len(blocks) == 1 or result.objective.preferred_domain_violations == 0
    assert result.objective.preferred_domain_violations == 0
    assert violations(nodes, pods, g, counts_of(g, result)) == []


def test_group_config_required_rack_binds_its_groups_together() -> None:
    """A topologyConstraintGroupConfig puts all pods of its groups in one rack while others may go elsewhere."""
    nodes = _racks(3, 2)
    cfg = GroupConfig("pcsg", ("p", "d"), TopologyConstraint(required_key=RACK_KEY))
    g = gang(group("p", 2, gpu=4), group("d", 2, gpu=4), group("f", 3, gpu=8), group_configs=(cfg,))
    result = _placed(place(Snapshot.build(nodes, []), g))
    racks = {result.assignments[p][:2] for p in ("p-0", "p-1", "d-0", "d-1")}
    assert len(racks) == 1
    assert len(result.assignments) == 7


def test_anti_affinity_spreads_a_clique_one_pod_per_host() -> None:
    """Required self anti-affinity on the hostname key places at most one pod of the clique per node."""
    nodes = _racks(1, 4)
    anti = (PodAffinityTerm(LabelSelector({"app": "w"}), HOSTNAME_KEY),)
    g = gang(group("w", 3, gpu=1, pod_anti_affinity=anti), required=RACK_KEY)
    result = _placed(place(Snapshot.build(nodes, []), g))
    assert len(set(result.assignments.values())) == 3


def test_bound_pods_anti_affinity_repels_the_gang_from_their_rack() -> None:
    """A bound pod's own anti-affinity to the gang's labels excludes its whole rack."""
    nodes = _racks(2, 2)
    guard = bound("guard", "n00").__class__(
        "guard", "default", "n00", {"app": "guard"}, {}, (PodAffinityTerm(LabelSelector({"app": "w"}), RACK_KEY),)
    )
    result = _placed(place(Snapshot.build(nodes, [guard]), gang(group("w", 2, gpu=1))))
    assert all(n.startswith("n1") for n in result.assignments.values())


def test_required_pod_affinity_follows_matching_bound_pods() -> None:
    """Required pod affinity to bound pods restricts the gang to domains holding them."""
    nodes = _racks(3, 2)
    pods = [bound("cache", "n21", gpu=1, labels={"app": "cache"})]
    term = PodAffinityTerm(LabelSelector({"app": "cache"}), RACK_KEY)
    result = _placed(place(Snapshot.build(nodes, pods), gang(group("w", 3, gpu=4, pod_affinity=(term,)))))
    assert {n[:2] for n in result.assignments.values()} == {"n2"}


def test_self_pod_affinity_within_the_gang_colocates_its_pods() -> None:
    """Affinity to the gang's own labels (no matching bound pod) keeps those pods in one domain."""
    nodes = _racks(2, 2)
    pods = [bound("x", "n00", gpu=4), bound("y", "n10", gpu=4)]
    term = PodAffinityTerm(LabelSelector({"app": "w"}), RACK_KEY)
    result = _placed(place(Snapshot.build(nodes, pods), gang(group("w", 3, gpu=4, pod_affinity=(term,)))))
    assert len({n[:2] for n in result.assignments.values()}) == 1


def test_extras_fill_spare_room_and_never_displace_the_minimum() -> None:
    """Beyond the minimum of every group, as many extra pods as fit are placed."""
    nodes = _racks(1, 2)
    g = gang(group("a", 2, 1, gpu=8), group("b", 4, 2, gpu=4), required=RACK_KEY)
    result = _placed(place(Snapshot.build(nodes, []), g))
    counts = counts_of(g, result)
    assert sum(c for (h, _), c in counts.items() if h == "a") >= 1
    assert sum(c for (h, _), c in counts.items() if h == "b") >= 2
    assert result.objective.missing_extra_pods == 6 - len(result.assignments)
    assert len(result.assignments) == 3  # 16 GPUs: one 8-GPU pod and two 4-GPU pods


def test_heterogeneous_pods_in_one_group_are_split_and_each_fits() -> None:
    """A group whose pods request different sizes is placed per pod size without over-commit."""
    nodes = [node("a", gpu=8), node("b", gpu=2)]
    grp = group("w", 3, gpu=1)
    big = PodRef("w-0", requests={GPU: 8})
    grp = grp.__class__("w", (big, *grp.pods[1:]), 3, grp.requests, grp.labels)
    g = gang(grp)
    result = _placed(place(Snapshot.build(nodes, []), g))
    assert result.assignments["w-0"] == "a"
    assert result.assignments["w-1"] == result.assignments["w-2"] == "b"


def test_selectors_tolerations_and_cordons_are_honoured() -> None:
    """nodeSelector, required node affinity, taints and cordoned nodes restrict placement."""
    nodes = [
        node("a", labels={"pool": "gpu"}, taints=(Taint("dedicated", "infer"),)),
        node("b", labels={"pool": "gpu"}, unschedulable=True),
        node("c", labels={"pool": "cpu"}),
        node("d", labels={"pool": "gpu"}),
    ]
    affinity = (NodeSelectorTerm((Requirement("kubernetes.io/hostname", "NotIn", ("d",)),)),)
    tol = (Toleration("dedicated", "Equal", "infer"),)
    g = gang(group("w", 1, gpu=1, node_selector={"pool": "gpu"}, required_node_terms=affinity, tolerations=tol))
    assert _placed(place(Snapshot.build(nodes, []), g)).assignments == {"w-0": "a"}


def test_preferred_node_affinity_breaks_ties() -> None:
    """Among equally good nodes, the one matching a preferred node term wins."""
    nodes = [node("a"), node("b", labels={"fast": "yes"})]
    pref = (PreferredNodeTerm(10, NodeSelectorTerm((Requirement("fast", "Exists"),))),)
    result = _placed(place(Snapshot.build(nodes, []), gang(group("w", 1, gpu=8, preferred_node_terms=pref))))
    assert result.assignments == {"w-0": "b"}
    assert result.objective.missed_preference_weight == 0


def test_cpsat_beats_best_fit_greedy_on_mixed_sizes() -> None:
    """Exact packing (refine="all") finds the zero-waste placement that size-ordered best-fit misses."""
    nodes = [node(f"n{i}", "r0", 8) for i in range(3)]
    pods = [bound("b0", "n0", gpu=2), bound("b1", "n1", gpu=2), bound("b2", "n2", gpu=0)]
    g = gang(group("a", 2, gpu=3), group("b", 1, gpu=2), required=RACK_KEY)
    snap = Snapshot.build(nodes, pods)
    exact = _placed(place(snap, g, PlacementOptions(refine="all")))
    greedy = _placed(place(snap, g, PlacementOptions(use_cpsat=False)))
    assert exact.stats.path == "cpsat"
    assert exact.objective.stranded_gpus == 0 < greedy.objective.stranded_gpus
    assert set(exact.assignments.values()) == {"n2"}


def test_score_is_one_when_proven_and_in_the_first_open_tier_band_otherwise() -> None:
    """A proven optimum scores 1.0; an unproven plan whose only open tier is stranded GPUs scores in that band."""
    nodes = [node(f"n{i}", "r0", 8) for i in range(3)]
    pods = [bound("b0", "n0", gpu=2), bound("b1", "n1", gpu=2), bound("b2", "n2", gpu=0)]
    g = gang(group("a", 2, gpu=3), group("b", 1, gpu=2), required=RACK_KEY)
    snap = Snapshot.build(nodes, pods)
    proven = _placed(place(snap, g, PlacementOptions(refine="all")))
    unproven = _placed(place(snap, g, PlacementOptions(use_cpsat=False)))
    assert proven.score == 1.0
    assert proven.stats.status == "OPTIMAL"
    assert unproven.stats.status == "GREEDY"
    assert unproven.objective.stranded_gpus == 4
    assert proven.objective.stranded_gpus == 0
    # stranded GPUs are tier 7 (index 6): band [1 - 2^-6, 1 - 2^-7), gap 4 (bound 0) against the gang's 8 GPUs
    assert unproven.score == pytest.approx(1 - 2**-6 + 2**-7 * (1 - 4 / 12))


def test_greedy_plan_at_the_bound_of_every_candidate_rack_is_proven_without_a_solve() -> None:
    """With a required rack, a plan meeting the least per-rack lower bound (here: its stranded GPUs, since every
    usable node leaves at least 3) is optimal: no CP-SAT solve, status AT_BOUND, score 1.0, in both modes."""
    nodes = [node(f"n{i}", f"r{i}", 8) for i in range(3)]
    pods = [bound("b0", "n0", gpu=3), bound("b1", "n1", gpu=3), bound("b2", "n2", gpu=1)]
    g = gang(group("a", 1, gpu=2), required=RACK_KEY)
    snap = Snapshot.build(nodes, pods)
    for options in (PlacementOptions(), PlacementOptions(refine="all"), PlacementOptions(use_cpsat=False)):
        result = _placed(place(snap, g, options))
        assert result.stats.status == "AT_BOUND"
        assert result.stats.num_variables == 0
        assert result.score == 1.0
        assert result.objective.stranded_gpus == 3
        assert result.assignments == {"a-0": "n0"}


def test_greedy_plan_at_the_bound_of_the_modelled_rack_skips_the_solve() -> None:
    """Greedy visits only the exact-fit rack r0 (`max_greedy_domains=1`), and its plan there meets r0's lower
    bound, so CP-SAT over r0 (all "auto" models) could only confirm it: no solve, status AT_MODEL_BOUND, the
    greedy-only placement, and not proven (the unvisited rack r1 has less room); with `refine="all"` CP-SAT also
    models r1 and finds the better plan there."""
    nodes = [node(f"n{i}", f"r{i // 2}", 8) for i in range(4)]
    pods = [bound("b0", "n0", gpu=6), bound("b2", "n2", gpu=5), bound("b3", "n3", gpu=8)]
    g = gang(group("a", 1, gpu=2), required=RACK_KEY)
    snap = Snapshot.build(nodes, pods)
    skipped = _placed(place(snap, g, PlacementOptions(max_greedy_domains=1)))
    greedy = _placed(place(snap, g, PlacementOptions(use_cpsat=False, max_greedy_domains=1)))
    assert skipped.stats.status == "AT_MODEL_BOUND"
    assert skipped.stats.num_variables == 0
    assert skipped.assignments == greedy.assignments == {"a-0": "n0"}
    assert skipped.score == greedy.score < 1.0
    exact = _placed(place(snap, g, PlacementOptions(refine="all", max_greedy_domains=1)))
    assert exact.stats.path == "cpsat"
    assert exact.assignments == {"a-0": "n2"}


def test_assumed_placement_is_not_double_booked() -> None:
    """Placing the same gang again on `with_assumed` uses the remaining room without over-commit."""
    nodes = _racks(2, 2)
    g = gang(group("w", 2, gpu=8), required=RACK_KEY)
    snap = Snapshot.build(nodes, [])
    first = _placed(place(snap, g))
    second = _placed(place(snap.with_assumed(assumed_pods(g, first)), g))
    assert set(first.assignments.values()).isdisjoint(second.assignments.values())
    assert isinstance(
        place(snap.with_assumed(assumed_pods(g, first)).with_assumed(assumed_pods(g, second)), g), Unschedulable
    )


def test_an_optional_group_with_an_unknown_required_key_does_not_block_the_gang() -> None:
    """A required key no node carries only matters for groups that need pods; other groups still place."""
    needless = group("b", 1, minimum=0, gpu=0, cpu=500, topology=TopologyConstraint(required_key="no/such-key"))
    result = place(Snapshot.build([node("n0")], []), gang(group("a", 1, minimum=0, gpu=0, cpu=500), needless))
    assert isinstance(result, Placement)
    assert dict(result.assignments) == {"a-0": "n0"}


def test_anti_affinity_on_a_key_a_node_lacks_does_not_bind_that_node() -> None:
    """A node without the topology key is in no domain, so required anti-affinity on that key never keeps two pods
    apart there (Kubernetes semantics); the old per-node shortcut, taken because every labelled node had its own
    rack, kept one of them out."""
    nodes = [node("n0", "r0", unschedulable=True), node("n1", None)]
    anti = (PodAffinityTerm(LabelSelector({"app": "g1"}), RACK_KEY),)
    g = gang(group("g0", 1, 0, gpu=0, pod_anti_affinity=anti), group("g1", 1, 0, gpu=0))
    result = _placed(place(Snapshot.build(nodes, []), g))
    assert result.assignments == {"g0-0": "n1", "g1-0": "n1"}
