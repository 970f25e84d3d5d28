"""Nominations: who must treat a preemptor's reserved capacity as taken, and what a preemptor remembers."""

from __future__ import annotations

from grove_sched.gangs import GangKey
from grove_sched.model import GPU, BoundPod
from grove_sched.preemption import Nomination, Nominations

HIGH = GangKey("default", "high")
VICTIM = GangKey("default", "victim")


def nomination(gang: GangKey, priority: int, since: float = 0.0) -> Nomination:
    pods = (BoundPod(f"{gang.name}-0", gang.namespace, "node-0", {}, {GPU: 8}),)
    return Nomination(gang, priority, pods, ("default/victim-0",), (VICTIM,), since)


def test_reserved_for_lower_or_equal_priority_only_and_never_for_the_preemptor_itself() -> None:
    book = Nominations()
    book.nominate(nomination(HIGH, 100))
    assert [p.name for p in book.reserved_for(GangKey("default", "low"), 10)] == ["high-0"]
    assert [p.name for p in book.reserved_for(GangKey("default", "peer"), 100)] == ["high-0"]
    assert book.reserved_for(GangKey("default", "urgent"), 1000) == []
    assert book.reserved_for(HIGH, 100) == []
    assert book.get(HIGH) is not None
    assert book.get(HIGH).nodes == {"high-0": "node-0"}  # type: ignore[union-attr]


def test_release_keeps_the_history_forget_drops_it() -> None:
    book = Nominations()
    book.nominate(nomination(HIGH, 100))
    released = book.release(HIGH)
    assert released is not None
    assert len(book) == 0
    assert book.reserved_for(GangKey("default", "low"), 10) == []
    assert book.preempted(HIGH) == frozenset({VICTIM})  # never chosen again for this preemptor
    book.forget(HIGH)
    assert book.preempted(HIGH) == frozenset()


def test_ages_follow_the_clock() -> None:
    book = Nominations()
    book.nominate(nomination(HIGH, 100, since=1000.0))
    assert list(book.ages(1012.5)) == [12.5]
