"""Which scaling-group replicas a rolling update recreates: `lifecycle.grouprollout` and its invariants."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_operator.lifecycle.grouprollout import plan_group
from grove_operator.lifecycle.lane import GroupReplica


def replica(
    index: int, *, stale: bool = True, available: bool = True, quiet: bool | None = None, terminating: bool = False
) -> GroupReplica:
    """A scaling-group replica in a given state (quiet, i.e. every pod Ready, defaults to available)."""
    whole = available if quiet is None else quiet
    return GroupReplica(index, (f"m{index}",), not terminating, stale, available, whole, terminating, 0)


def test_unavailable_old_replicas_go_at_once_available_ones_one_at_a_time_lowest_first() -> None:
    """Broken old replicas are recreated together; available ones wait for them, then go lowest index first."""
    plan = plan_group([replica(0), replica(1, available=False), replica(2, available=False)], turn=True)
    assert (plan.at_once, plan.replace) == ((1, 2), None)
    plan = plan_group([replica(2), replica(0), replica(1, stale=False)], turn=True)
    assert (plan.at_once, plan.replace, plan.old) == ((), 0, 2)


def test_waits_while_a_replica_is_being_recreated_or_not_fully_ready_or_not_its_turn() -> None:
    """A terminating member, an unsettled up-to-date replica or the lane hold the next replica back."""
    assert plan_group([replica(0), replica(1, stale=False, terminating=True)], turn=True).replace is None
    assert plan_group([replica(0), replica(1, stale=False, available=True, quiet=False)], turn=True).replace is None
    assert plan_group([replica(0), replica(1, available=True, quiet=False)], turn=True).replace is None
    assert plan_group([replica(0)], turn=False).replace is None
    assert plan_group([replica(0, stale=False)], turn=True).old == 0


@dataclass
class Group:
    """A scaling group whose recreated replicas come back (available, then settled) when the world says so."""

    replicas: list[GroupReplica]
    min_available: int
    recreated: list[int] = field(default_factory=list)

    def available(self) -> int:
        return sum(r.available and not r.terminating for r in self.replicas)

    def act(self) -> None:
        plan = plan_group(self.replicas, turn=True)
        for index in [*plan.at_once, *([plan.replace] if plan.replace is not None else [])]:
            self.recreated.append(index)
            self.replicas[index] = replica(index, stale=False, available=False, quiet=False, terminating=True)

    def environment(self, event: int) -> None:
        """A deleted replica's PodCliques come back, or a recreated replica becomes available, then whole."""
        index = event % len(self.replicas)
        current = self.replicas[index]
        if current.terminating:
            self.replicas[index] = replace(current, terminating=False, complete=True)
        elif not current.stale and not current.available:
            self.replicas[index] = replace(current, available=True)
        elif not current.stale and not current.quiet:
            self.replicas[index] = replace(current, quiet=True)


@settings(max_examples=200)
@given(st.integers(1, 5), st.data())
def test_at_most_one_replica_down_and_all_recreated_once(count: int, data: st.DataObject) -> None:
    """All replicas start available on the old template: at most one is down at any moment, each is recreated
    exactly once, and the group ends with every replica up to date and available."""
    group = Group([replica(j) for j in range(count)], min_available=1)
    for _ in range(40):
        group.act()
        assert group.available() >= count - 1
        group.environment(data.draw(st.integers(0, 99), label="event"))
    for _ in range(10 * count):
        group.act()
        for event in range(count * 3):
            group.environment(event)
    assert sorted(group.recreated) == list(range(count))
    assert all(not r.stale and r.available and r.settled for r in group.replicas)
