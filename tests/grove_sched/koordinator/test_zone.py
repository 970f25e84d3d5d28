"""A preferred network-topology zone: the gang goes into that domain when it fits there, elsewhere otherwise."""

from __future__ import annotations

from grove_sched.koordinator import place_preferring_zone, resolve_zone
from grove_sched.model import DEFAULT_LEVELS, HOSTNAME_KEY, RACK_KEY, GangRequest, Placement, PlacementResult
from grove_sched.placement import Snapshot, place

from ..placement.placement_kit import bound, gang, group, node


def _gang(pods: int) -> GangRequest:
    return gang(group("w", pods, gpu=8))


async def _solve(snapshot: Snapshot, request: GangRequest) -> PlacementResult:
    return place(snapshot, request)


NODES = [node(f"n{i}", f"rack-{i // 2}") for i in range(6)]


def _racks(result: PlacementResult) -> set[str]:
    assert isinstance(result, Placement)
    by_name = {n.name: n.labels[RACK_KEY] for n in NODES}
    return {by_name[node] for node in result.assignments.values()}


async def test_the_gang_goes_into_its_zone() -> None:
    snapshot = Snapshot.build(NODES, [])
    result = await place_preferring_zone(_solve, snapshot, _gang(2), (RACK_KEY, "rack-2"), DEFAULT_LEVELS)
    assert _racks(result) == {"rack-2"}
    bare = await place_preferring_zone(_solve, snapshot, _gang(2), (None, "rack-1"), DEFAULT_LEVELS)
    assert _racks(bare) == {"rack-1"}


async def test_a_full_zone_is_only_a_preference() -> None:
    busy = [bound("bg", "n4", gpu=8)]
    snapshot = Snapshot.build(NODES, busy)
    result = await place_preferring_zone(_solve, snapshot, _gang(2), (RACK_KEY, "rack-2"), DEFAULT_LEVELS)
    assert isinstance(result, Placement)
    assert len(result.assignments) == 2
    assert "n4" not in result.assignments.values()


def test_a_bare_value_no_level_has_is_no_zone() -> None:
    snapshot = Snapshot.build(NODES, [])
    assert resolve_zone((None, "rack-9"), DEFAULT_LEVELS, snapshot.domain_names) is None
    assert resolve_zone((None, "n3"), DEFAULT_LEVELS, snapshot.domain_names) == (HOSTNAME_KEY, "n3")
