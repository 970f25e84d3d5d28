"""The look-ahead over the queue (`place_ahead`): it keeps `place`'s answer unless another of its plans leaves
more of the queue placeable, and whatever it picks is a valid placement of the gang."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from placement_kit import bound, counts_of, gang, group, node, violations

from grove_sched.model import LOOKAHEAD_PATH, RACK_KEY, GangRequest, Placement, PlacementOptions
from grove_sched.placement import Snapshot, assumed_pods, place, place_ahead

OPTS = PlacementOptions()


def _named(g: GangRequest, name: str) -> GangRequest:
    groups = tuple(replace(grp, pods=tuple(replace(p, name=f"{name}-{p.name}") for p in grp.pods)) for grp in g.groups)
    return replace(g, name=name, groups=groups)


def _one_pod(name: str, gpus: int) -> GangRequest:
    return _named(gang(group("w", 1, gpu=gpus), required=RACK_KEY), name)


def _two_racks() -> Snapshot:
    """Rack r1: a 4-GPU node with 4 free; rack r2: a 4-GPU node with 3 free (one GPU busy)."""
    nodes = [node("n1", rack="r1", gpu=4), node("n2", rack="r2", gpu=4)]
    return Snapshot.build(nodes, [bound("bg", "n2", gpu=1)])


def test_best_fit_that_strands_the_queue_gives_way_to_the_plan_that_leaves_it_room() -> None:
    """2, then 3, then 2 GPUs, each in one rack: best fit puts the first gang on the fuller rack (n2, 3 free), the
    3-GPU gang then takes n1 and the last gang finds 1 GPU per node. The look-ahead puts the first gang on n1."""
    snapshot = _two_racks()
    first, queue = _one_pod("a", 2), [_one_pod("b", 3), _one_pod("c", 2)]
    myopic = place(snapshot, first, OPTS)
    assert isinstance(myopic, Placement)
    assert set(myopic.assignments.values()) == {"n2"}, "best fit: the rack with less room"
    chosen = place_ahead(snapshot, first, queue, 4, OPTS)
    assert isinstance(chosen, Placement)
    assert set(chosen.assignments.values()) == {"n1"}
    assert chosen.stats is not None
    assert chosen.stats.path == LOOKAHEAD_PATH
    after = snapshot.with_assumed(assumed_pods(first, chosen))
    for queued in queue:
        placed = place(after, queued, OPTS)
        assert isinstance(placed, Placement), f"{queued.name} fits behind the look-ahead's choice"
        after = after.with_assumed(assumed_pods(queued, placed))


def test_the_answer_stands_when_the_queue_fits_behind_it_or_there_is_no_queue() -> None:
    snapshot = _two_racks()
    first = _one_pod("a", 2)
    myopic = place(snapshot, first, OPTS)
    for queue, window in (([_one_pod("b", 2)], 4), ([_one_pod("b", 3), _one_pod("c", 2)], 0), ([], 4)):
        assert place_ahead(snapshot, first, queue, window, OPTS) == myopic


@settings(max_examples=40, deadline=None)
@given(
    free=st.lists(st.integers(min_value=0, max_value=8), min_size=2, max_size=6),
    asks=st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=5),
)
def test_whatever_it_picks_is_a_valid_placement_of_the_same_pods(free: list[int], asks: list[int]) -> None:
    """Property: the look-ahead places exactly the pods `place` would (or fails where it fails), never over-commits
    a node and keeps the required rack."""
    nodes = [node(f"n{i}", rack=f"r{i % 3}", gpu=8) for i in range(len(free))]
    busy = [bound(f"bg{i}", f"n{i}", gpu=8 - f) for i, f in enumerate(free) if f < 8]
    snapshot = Snapshot.build(nodes, busy)
    gangs = [_one_pod(f"g{k}", gpus) for k, gpus in enumerate(asks)]
    first, queue = gangs[0], gangs[1:]
    myopic = place(snapshot, first, OPTS)
    chosen = place_ahead(snapshot, first, queue, 4, OPTS)
    assert isinstance(chosen, Placement) == isinstance(myopic, Placement)
    if isinstance(chosen, Placement) and isinstance(myopic, Placement):
        assert set(chosen.assignments) == set(myopic.assignments)
        assert violations(nodes, busy, first, counts_of(first, chosen)) == []
