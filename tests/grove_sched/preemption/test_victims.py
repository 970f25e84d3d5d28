"""Victim selection: whole gangs only, strictly lower priority, minimal under the stated order, topology-aware.

The brute force enumerates every subset of candidate gangs and asks placement whether the preemptor then fits;
it shares nothing with the selection but `place` (the oracle both use for "fits").
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from placement_kit import counts_of, gang, group, node, violations

from grove_sched.gangs import GangKey
from grove_sched.model import GPU, RACK_KEY, BoundPod, GangRequest, NodeInfo, TopologyConstraint
from grove_sched.placement import Snapshot
from grove_sched.preemption import PreemptionOptions, VictimGang, fits, select_victims

OPTIONS = PreemptionOptions()


def victim(name: str, priority: int, placed: Sequence[tuple[str, int]]) -> VictimGang:
    """A gang `name` with one pod per (node, GPUs) entry."""
    pods = tuple(
        BoundPod(f"{name}-{i}", "default", where, {"gang": name}, {GPU: gpus}) for i, (where, gpus) in enumerate(placed)
    )
    return VictimGang(GangKey("default", name), priority, pods)


def with_extras(gang: VictimGang, minimum: int) -> list[VictimGang]:
    """The whole gang, and its pods above `minimum` as a candidate of their own (when there are any)."""
    extras = gang.pods[minimum:]
    return [gang, VictimGang(gang.key, gang.priority, extras, whole=False)] if extras else [gang]


def preemptor(pods: int, gpus: int, priority: int, required: str | None = None) -> GangRequest:
    request = gang(group("p", pods, gpu=gpus, cpu=0), required=required)
    return GangRequest(request.name, request.namespace, request.groups, priority, request.topology)


def disaggregated(pods: int, gpus: int, priority: int) -> GangRequest:
    """Two groups (prefill, decode), each required into a rack of its own choosing, no gang-level constraint."""
    groups = tuple(
        group(name, pods, gpu=gpus, cpu=0, topology=TopologyConstraint(required_key=RACK_KEY))
        for name in ("prefill", "decode")
    )
    return GangRequest("gang", "default", groups, priority)


def snapshot_of(nodes: Sequence[NodeInfo], victims: Sequence[VictimGang]) -> Snapshot:
    return Snapshot.build(list(nodes), [pod for v in victims if v.whole for pod in v.pods])


def brute_force(snapshot: Snapshot, request: GangRequest, victims: Sequence[VictimGang]) -> tuple[int, int, int] | None:
    """The best (highest victim priority, victim gangs, GPUs) over every subset that lets the preemptor fit."""
    lower = [v for v in victims if v.priority < request.priority]
    best: tuple[int, int, int] | None = None
    for size in range(1, len(lower) + 1):
        for subset in itertools.combinations(lower, size):
            if len({v.key for v in subset}) < size:
                continue  # a whole gang and its own extras
            cost = (max(v.priority for v in subset), sum(v.whole for v in subset), sum(v.gpus for v in subset))
            if best is not None and cost >= best:
                continue
            if fits(snapshot, request, subset, OPTIONS.placement) is not None:
                best = cost
    return best


def test_takes_the_lowest_priority_whole_gang_that_frees_one_rack() -> None:
    """Two racks of two 8-GPU nodes, full: a 2x8 gang needing one rack evicts the two-pod gang of priority 1 in
    rack r1 (whole), not the priority-2 gang in r0, nor single pods scattered over both racks."""
    nodes = [node("a0", "r0"), node("a1", "r0"), node("b0", "r1"), node("b1", "r1")]
    victims = [
        victim("mid", 2, [("a0", 8), ("a1", 8)]),
        victim("low", 1, [("b0", 8), ("b1", 8)]),
    ]
    snapshot = snapshot_of(nodes, victims)
    chosen = select_victims(snapshot, preemptor(2, 8, 5, RACK_KEY), victims, OPTIONS)
    assert chosen is not None
    assert [v.key.name for v in chosen.victims] == ["low"]
    assert chosen.domain == "r1"
    assert set(chosen.placement.assignments.values()) == {"b0", "b1"}


def test_prefers_one_gang_over_two_smaller_ones_of_the_same_priority() -> None:
    """Fewest victim gangs before fewest GPUs: one 16-GPU gang rather than two 4-GPU ones in the other rack."""
    nodes = [node("a0", "r0", gpu=8), node("b0", "r1", gpu=8), node("b1", "r1", gpu=8)]
    victims = [
        victim("small-1", 1, [("a0", 4)]),
        victim("small-2", 1, [("a0", 4)]),
        victim("big", 1, [("b0", 8), ("b1", 8)]),
    ]
    chosen = select_victims(snapshot_of(nodes, victims), preemptor(1, 8, 3, RACK_KEY), victims, OPTIONS)
    assert chosen is not None
    assert [v.key.name for v in chosen.victims] == ["big"]


def test_equal_or_higher_priority_gangs_are_never_victims() -> None:
    nodes = [node("a0", "r0")]
    victims = [victim("same", 3, [("a0", 8)])]
    assert select_victims(snapshot_of(nodes, victims), preemptor(1, 8, 3), victims, OPTIONS) is None


def test_none_when_evicting_everything_would_not_help() -> None:
    nodes = [node("a0", "r0"), node("b0", "r1")]
    victims = [victim("v", 0, [("a0", 8)])]
    assert select_victims(snapshot_of(nodes, victims), preemptor(2, 8, 3, RACK_KEY), victims, OPTIONS) is None


def test_extras_above_a_minimum_go_before_a_whole_gang() -> None:
    """A gang running 2 pods with minimum 1 gives up its extra pod rather than another gang being evicted whole;
    the gang keeps its minimum running."""
    nodes = [node("a0", "r0"), node("a1", "r0")]
    elastic = victim("elastic", 1, [("a0", 8), ("a1", 8)])
    victims = [*with_extras(elastic, 1), victim("other", 1, [("a0", 0)])]
    chosen = select_victims(snapshot_of(nodes, victims), preemptor(1, 8, 3), victims, OPTIONS)
    assert chosen is not None
    assert [(v.key.name, v.whole, [p.name for p in v.pods]) for v in chosen.victims] == [
        ("elastic", False, ["elastic-1"])
    ]
    assert chosen.cost.gangs == 0


def test_per_group_racks_are_modelled_so_the_model_answer_stands() -> None:
    """Prefill and decode each need one rack of their own; the model picks a domain per group scope, so its answer
    (one gang per rack, the cheapest) is what placement accepts, without the fallback."""
    nodes = [node("a0", "r0"), node("a1", "r0"), node("b0", "r1"), node("b1", "r1")]
    victims = [
        victim("r0-low", 0, [("a0", 8)]),
        victim("r0-mid", 1, [("a1", 8)]),
        victim("r1-low", 0, [("b0", 8)]),
        victim("r1-big", 0, [("b1", 8)]),
    ]
    chosen = select_victims(snapshot_of(nodes, victims), disaggregated(1, 8, 5), victims, OPTIONS)
    assert chosen is not None
    assert chosen.path == "cpsat"
    assert chosen.cost.max_priority == 0
    assert chosen.cost.gangs == 2


def test_a_group_level_rack_is_modelled() -> None:
    """A group of two 8-GPU pods required into one rack (a group-level constraint, none on the gang): the cheapest
    pair of victims overall (4 + 4 GPUs) straddles the racks, so the model must keep the group in one rack to give an
    answer placement accepts: one rack's two victims (4 + 8 GPUs)."""
    nodes = [node("a0", "r0"), node("a1", "r0"), node("b0", "r1"), node("b1", "r1")]
    victims = [
        victim("a0-small", 0, [("a0", 4)]),
        victim("a1-full", 0, [("a1", 8)]),
        victim("b0-small", 0, [("b0", 4)]),
        victim("b1-full", 0, [("b1", 8)]),
    ]
    topology = TopologyConstraint(required_key=RACK_KEY)
    request = GangRequest("gang", "default", (group("p", 2, gpu=8, cpu=0, topology=topology),), 5)
    chosen = select_victims(snapshot_of(nodes, victims), request, victims, OPTIONS)
    assert chosen is not None
    assert chosen.path == "cpsat"
    assert (chosen.cost.gangs, chosen.cost.gpus) == (2, 12)


def test_greedy_fallback_finds_a_minimal_set_too() -> None:
    """With CP-SAT off, the reprieve keeps only what is needed."""
    nodes = [node("a0", "r0"), node("a1", "r0")]
    victims = [victim("x", 0, [("a0", 8)]), victim("y", 0, [("a1", 4)]), victim("z", 0, [("a1", 4)])]
    chosen = select_victims(
        snapshot_of(nodes, victims), preemptor(1, 8, 1), victims, PreemptionOptions(use_cpsat=False)
    )
    assert chosen is not None
    assert chosen.path == "greedy"
    assert [v.key.name for v in chosen.victims] == ["x"]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[NodeInfo], list[VictimGang], GangRequest]:
    racks = draw(st.integers(1, 2))
    per_rack = draw(st.integers(1, 3))
    nodes = [node(f"n{r}{i}", f"r{r}") for r in range(racks) for i in range(per_rack)]
    free = {n.name: 8 for n in nodes}
    victims: list[VictimGang] = []
    for k in range(draw(st.integers(1, 5))):
        placed = []
        for _ in range(draw(st.integers(1, 3))):
            where = draw(st.sampled_from([n.name for n in nodes]))
            gpus = draw(st.sampled_from([1, 2, 4, 8]))
            if free[where] >= gpus:
                free[where] -= gpus
                placed.append((where, gpus))
        if placed:
            gang = victim(f"v{k}", draw(st.integers(0, 3)), placed)
            victims += with_extras(gang, draw(st.integers(1, len(placed))))
    pods, gpus, priority = draw(st.integers(1, 3)), draw(st.sampled_from([2, 4, 8])), draw(st.integers(1, 4))
    if draw(st.booleans()):
        return nodes, victims, disaggregated(min(pods, 2), gpus, priority)
    return nodes, victims, preemptor(pods, gpus, priority, draw(st.sampled_from([None, RACK_KEY])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(scenarios())
def test_selection_is_whole_lower_valid_and_no_worse_than_brute_force(
    scenario: tuple[list[NodeInfo], list[VictimGang], GangRequest],
) -> None:
    nodes, victims, request = scenario
    snapshot = snapshot_of(nodes, victims)
    assume(fits(snapshot, request, (), OPTIONS.placement) is None)  # preemption runs only for a gang that does not fit
    chosen = select_victims(snapshot, request, victims, OPTIONS)
    best = brute_force(snapshot, request, victims)
    if chosen is None:
        assert best is None
        return
    assert best is not None
    whole = {v.key: v for v in victims if v.whole}
    extras = {v.key: v for v in victims if not v.whole}
    for v in chosen.victims:
        assert v.priority < request.priority
        # every pod of the gang, or exactly its pods above the minimum: never a gang below its minimum
        assert v.pods == (whole if v.whole else extras)[v.key].pods
    assert len({v.key for v in chosen.victims}) == len(chosen.victims)
    cost = chosen.cost
    assert (cost.max_priority, cost.gangs, cost.gpus) <= best
    gone = {f"{p.namespace}/{p.name}" for v in chosen.victims for p in v.pods}
    left = [p for v in whole.values() for p in v.pods if f"{p.namespace}/{p.name}" not in gone]
    assert violations(nodes, left, request, counts_of(request, chosen.placement)) == []
