"""Defragmentation plans: the gang fits once the moved gangs are gone, every moved gang fits again whole, nothing
is planned when capacity is short in aggregate, and the plan is the smallest (checked by brute force).

The brute force enumerates every subset of movable gangs, cheapest first, and asks placement whether the gang then
fits and whether each moved gang fits again; it shares nothing with the search but `place` and the re-placement
check `replace_moved` (the definition of "re-places").
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from placement_kit import counts_of, gang, group, node, violations

from grove_sched.gangs import GangKey
from grove_sched.model import (
    GPU,
    RACK_KEY,
    BoundPod,
    GangRequest,
    NodeInfo,
    Placement,
    PodGroup,
    PodRef,
    TopologyConstraint,
)
from grove_sched.placement import Snapshot, assumed_pods
from grove_sched.preemption.defrag import (
    DefragOptions,
    Movable,
    aggregate_room,
    nearest_to_room,
    plan_defragmentation,
    replace_moved,
)
from grove_sched.preemption.victims import VictimGang, fits

OPTIONS = DefragOptions()


def movable(name: str, placed: Sequence[tuple[str, int]]) -> Movable:
    """A running gang `name` with one pod per (node, GPUs) entry, and the request that places them all again."""
    pods = tuple(
        BoundPod(f"{name}-{i}", "default", where, {"app": name}, {GPU: gpus}) for i, (where, gpus) in enumerate(placed)
    )
    refs = tuple(PodRef(pod.name, requests={GPU: int(pod.requests[GPU])}) for pod in pods)
    request = GangRequest(name, "default", (PodGroup(name, refs, len(refs), {GPU: 0}, {"app": name}),))
    return Movable(GangKey("default", name), pods, request)


def needing(pods: int, gpus: int, required: str | None = None) -> GangRequest:
    return gang(group("g", pods, gpu=gpus, cpu=0), required=required)


def snapshot_of(nodes: Sequence[NodeInfo], gangs: Sequence[Movable], other: Sequence[BoundPod] = ()) -> Snapshot:
    return Snapshot.build(list(nodes), [*other, *(pod for g in gangs for pod in g.pods)])


def cost(moved: Sequence[Movable]) -> tuple[int, int]:
    return len(moved), sum(m.gpus for m in moved)


def brute_force(snapshot: Snapshot, request: GangRequest, gangs: Sequence[Movable]) -> tuple[int, int] | None:
    """The cheapest (gangs, GPUs) over every subset that lets the gang fit and re-places each moved gang."""
    subsets = [s for size in range(1, len(gangs) + 1) for s in itertools.combinations(gangs, size)]
    for subset in sorted(subsets, key=cost):
        placement = fits(snapshot, request, [VictimGang(m.key, 0, m.pods) for m in subset], OPTIONS.placement)
        if placement is not None and replace_moved(snapshot, request, placement, subset, OPTIONS.placement):
            return cost(subset)
    return None


def assert_sound(nodes: Sequence[NodeInfo], snapshot: Snapshot, request: GangRequest, gangs: Sequence[Movable]) -> None:
    """Whatever the plan: the gang did not fit before, fits without the moved gangs, and each moved gang fits
    again whole on what is left, every hard rule checked by the kit's own checker."""
    plan = plan_defragmentation(snapshot, request, gangs)
    if plan is None:
        return
    assert fits(snapshot, request, (), OPTIONS.placement) is None
    moved = {pod.name for m in plan.moved for pod in m.pods}
    left = [pod for pod in snapshot.live_pods if pod.name not in moved]
    assert violations(nodes, left, request, counts_of(request, plan.placement)) == []
    left += assumed_pods(request, plan.placement)
    assert set(plan.moves) == {m.key for m in plan.moved}
    for gang_ in sorted(plan.moved, key=lambda m: (-m.gpus, m.key)):
        placement = plan.moves[gang_.key]
        assert isinstance(placement, Placement)
        assert len(placement.assignments) == len(gang_.pods)
        assert violations(nodes, left, gang_.request, counts_of(gang_.request, placement)) == []
        left += assumed_pods(gang_.request, placement)


def test_moves_the_smaller_gang_off_the_node_the_gang_needs() -> None:
    """Two 8-GPU nodes hold a 4-GPU gang each: 8 GPUs are free, none whole. Moving either onto the other node
    frees a node for an 8-GPU pod."""
    nodes = [node("a0"), node("a1")]
    gangs = [movable("x", [("a0", 4)]), movable("y", [("a1", 4)])]
    snapshot = snapshot_of(nodes, gangs)
    plan = plan_defragmentation(snapshot, needing(1, 8), gangs)
    assert plan is not None
    assert len(plan.moved) == 1
    assert plan.gpus == 4
    (moved,) = plan.moved
    (origin,) = {pod.node for pod in moved.pods}
    assert plan.placement.assignments == {"g-0": origin}
    assert set(plan.moves[moved.key].assignments.values()) == {"a0", "a1"} - {origin}


def test_fewest_gangs_then_fewest_gpus() -> None:
    """Node a0 holds one 6-GPU gang, a1 two 3-GPU gangs, a2 a 2-GPU gang: 11 GPUs free, no node empty. Emptying
    a0 moves one gang of 6 GPUs; emptying a1 moves two; a2's 2-GPU gang has room on a0 or a1 but the gang needs
    8 on one node, so freeing a2 (2 GPUs, one gang) is the plan."""
    nodes = [node("a0"), node("a1"), node("a2")]
    gangs = [
        movable("big", [("a0", 6)]),
        movable("p", [("a1", 3)]),
        movable("q", [("a1", 3)]),
        movable("small", [("a2", 2)]),
    ]
    snapshot = snapshot_of(nodes, gangs)
    request = needing(1, 8)
    plan = plan_defragmentation(snapshot, request, gangs)
    assert plan is not None
    assert cost(plan.moved) == brute_force(snapshot, request, gangs) == (1, 2)
    assert [m.key.name for m in plan.moved] == ["small"]


def test_nothing_when_capacity_is_short_in_aggregate() -> None:
    """12 GPUs free over two nodes, a gang asking 16: no move can make room (that is preemption's job)."""
    nodes = [node("a0"), node("a1")]
    gangs = [movable("x", [("a0", 2)]), movable("y", [("a1", 2)])]
    snapshot = snapshot_of(nodes, gangs)
    request = needing(2, 8)
    assert aggregate_room(snapshot, request, OPTIONS.placement) is None
    assert plan_defragmentation(snapshot, request, gangs) is None


def test_aggregate_room_is_per_domain_of_the_required_key() -> None:
    """Each rack has 8 GPUs free in two halves: a 2 x 4 gang required in one rack has room in r0 (the first
    domain), a 2 x 6 gang has room in none (12 GPUs in no rack), though the cluster has 16 free."""
    nodes = [node("a0", "r0"), node("a1", "r0"), node("b0", "r1"), node("b1", "r1")]
    gangs = [movable(f"m{i}", [(n.name, 4)]) for i, n in enumerate(nodes)]
    snapshot = snapshot_of(nodes, gangs)
    assert aggregate_room(snapshot, needing(2, 4, RACK_KEY), OPTIONS.placement) == "r0"
    assert aggregate_room(snapshot, needing(2, 6, RACK_KEY), OPTIONS.placement) is None
    assert plan_defragmentation(snapshot, needing(2, 6, RACK_KEY), gangs) is None


def test_a_role_required_in_one_rack_needs_a_rack_with_room_for_it() -> None:
    """The same cluster and a gang without a gang-level key whose one role of 2 x 6 GPUs is required in one rack
    (the disaggregated shapes): 16 GPUs are free in the cluster, yet no rack has 12, so moving gangs cannot help."""
    nodes = [node("a0", "r0"), node("a1", "r0"), node("b0", "r1"), node("b1", "r1")]
    gangs = [movable(f"m{i}", [(n.name, 4)]) for i, n in enumerate(nodes)]
    snapshot = snapshot_of(nodes, gangs)
    rack = TopologyConstraint(required_key=RACK_KEY)
    small, large = (gang(group("g", 2, gpu=gpus, cpu=0, topology=rack)) for gpus in (4, 6))
    assert aggregate_room(snapshot, small, OPTIONS.placement) == "cluster"
    assert aggregate_room(snapshot, large, OPTIONS.placement) is None
    assert plan_defragmentation(snapshot, large, gangs) is None


def test_nothing_when_the_gang_fits_already() -> None:
    nodes = [node("a0"), node("a1")]
    gangs = [movable("x", [("a0", 4)])]
    assert plan_defragmentation(snapshot_of(nodes, gangs), needing(1, 8), gangs) is None


def test_a_set_whose_gangs_cannot_fit_again_gives_way_to_a_larger_one() -> None:
    """a0 holds a 5-GPU gang, a1 a 6-GPU one, a2 two 2-GPU ones: 9 GPUs free, at most 4 on a node. Moving the
    5- or the 6-GPU gang would free a node, but neither fits anywhere again; moving the two small ones frees a2
    and they fit on a0 and a1. The search bans the rejected gangs one by one until it finds that plan."""
    nodes = [node("a0"), node("a1"), node("a2")]
    gangs = [
        movable("x", [("a0", 5)]),
        movable("y", [("a1", 6)]),
        movable("v", [("a2", 2)]),
        movable("w", [("a2", 2)]),
    ]
    snapshot = snapshot_of(nodes, gangs)
    request = needing(1, 8)
    plan = plan_defragmentation(snapshot, request, gangs)
    assert plan is not None
    assert sorted(m.key.name for m in plan.moved) == ["v", "w"]
    assert cost(plan.moved) == brute_force(snapshot, request, gangs) == (2, 4)
    assert plan.checks == 3
    assert_sound(nodes, snapshot, request, gangs)


def test_immovable_load_counts_as_used() -> None:
    """a1 is full of load no one may move and the movable gang holds half of a0: the 4 GPUs free in all are too
    few for an 8-GPU pod, whatever moves."""
    nodes = [node("a0"), node("a1")]
    gangs = [movable("x", [("a0", 4)])]
    load = [BoundPod("load", "default", "a1", {}, {GPU: 8})]
    snapshot = snapshot_of(nodes, gangs, load)
    assert plan_defragmentation(snapshot, needing(1, 8), gangs) is None


def test_a_required_rack_is_freed_by_moving_gangs_to_the_other_rack() -> None:
    """Per rack two 8-GPU nodes; r0 holds 4 + 4 GPUs over its two nodes, r1 a 4-GPU gang: a 2 x 8 gang required
    in one rack fits nowhere; r0 has 8 GPUs free, r1 12, so r1 (after moving its one gang into r0) takes it."""
    nodes = [node("a0", "r0"), node("a1", "r0"), node("b0", "r1"), node("b1", "r1")]
    gangs = [movable("p", [("a0", 4)]), movable("q", [("a1", 4)]), movable("r", [("b0", 4)])]
    snapshot = snapshot_of(nodes, gangs)
    request = needing(2, 6, RACK_KEY)
    plan = plan_defragmentation(snapshot, request, gangs)
    assert plan is not None
    assert [m.key.name for m in plan.moved] == ["r"]
    assert set(plan.moves[GangKey("default", "r")].assignments.values()) <= {"a0", "a1"}
    assert cost(plan.moved) == brute_force(snapshot, request, gangs)


def test_the_bound_stops_the_search() -> None:
    """With no check allowed nothing is planned, whatever exists (the bound is what the scheduler relies on)."""
    nodes = [node("a0"), node("a1")]
    gangs = [movable("x", [("a0", 4)]), movable("y", [("a1", 4)])]
    snapshot = snapshot_of(nodes, gangs)
    assert plan_defragmentation(snapshot, needing(1, 8), gangs, DefragOptions(max_checks=0)) is None
    found = plan_defragmentation(snapshot, needing(1, 8), gangs, DefragOptions(max_searches=1, max_checks=1))
    assert found is not None
    assert (found.searches, found.checks) == (1, 1)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[NodeInfo], list[Movable], GangRequest]:
    racks = draw(st.integers(1, 2))
    per_rack = draw(st.integers(2, 3))
    nodes = [node(f"n{r}{i}", f"r{r}") for r in range(racks) for i in range(per_rack)]
    free = {n.name: 8 for n in nodes}
    gangs: list[Movable] = []
    for k in range(draw(st.integers(1, 5))):
        placed: list[tuple[str, int]] = []
        for _ in range(draw(st.integers(1, 2))):
            where = draw(st.sampled_from([n.name for n in nodes]))
            gpus = draw(st.sampled_from([1, 2, 3, 4]))
            if free[where] >= gpus:
                free[where] -= gpus
                placed.append((where, gpus))
        if placed:
            gangs.append(movable(f"v{k}", placed))
    pods, gpus = draw(st.integers(1, 2)), draw(st.sampled_from([4, 6, 8]))
    return nodes, gangs, needing(pods, gpus, draw(st.sampled_from([None, RACK_KEY])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(scenarios())
def test_a_plan_is_sound_and_none_is_given_when_capacity_is_short(
    case: tuple[list[NodeInfo], list[Movable], GangRequest],
) -> None:
    nodes, gangs, request = case
    snapshot = snapshot_of(nodes, gangs)
    assume(fits(snapshot, request, (), OPTIONS.placement) is None)
    plan = plan_defragmentation(snapshot, request, gangs)
    if aggregate_room(snapshot, request, OPTIONS.placement) is None:
        assert plan is None
        return
    assert_sound(nodes, snapshot, request, gangs)
    best = brute_force(snapshot, request, gangs)
    if plan is not None:
        assert best is not None
        assert cost(plan.moved) >= best


def test_the_offered_gangs_are_those_that_would_leave_a_node_emptiest() -> None:
    """With room for two, the gangs alone on their node (moving them empties it) are offered before the gang
    sharing a node with immovable load, whatever their size or name."""
    nodes = [node("a0"), node("a1"), node("a2")]
    gangs = [movable("a", [("a0", 2)]), movable("b", [("a1", 6)]), movable("c", [("a2", 1)])]
    load = [BoundPod("load", "default", "a0", {}, {GPU: 6})]
    snapshot = snapshot_of(nodes, gangs, load)
    assert [g.key.name for g in nearest_to_room(snapshot, gangs, 2)] == ["b", "c"]
    assert [g.key.name for g in nearest_to_room(snapshot, [*gangs, gangs[0]], 5)] == ["a", "b", "c"]
