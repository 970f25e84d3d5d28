"""Scheduling queue: ordering, backoff, unschedulable moves, flush, and no hot loop."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_runtime.clock import FakeClock
from grove_sched.model import Code
from grove_sched.queue import QueueClosed, Room, SchedulingQueue

CODES = {
    "scheduled": Code.SUCCESS,
    "unschedulable": Code.UNSCHEDULABLE,
    "unresolvable": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    "error": Code.ERROR,
}


def make(clock: FakeClock | None = None, **kw: float) -> SchedulingQueue[str]:
    return SchedulingQueue(clock=clock or FakeClock(), initial_backoff=1.0, max_backoff=8.0, flush_after=30.0, **kw)


async def pop_now(q: SchedulingQueue[str]) -> str | None:
    """Pop if something is active right now, else None (without advancing time)."""
    task = asyncio.ensure_future(q.pop())
    for _ in range(5):
        await asyncio.sleep(0)
    if task.done():
        return task.result()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return None


async def test_priority_then_age_then_name() -> None:
    """Higher priority pops first; equal priority pops oldest first, then by name."""
    q = make()
    q.add("old-low", priority=0, since=1.0)
    q.add("new-high", priority=10, since=5.0)
    q.add("b-mid", priority=5, since=3.0)
    q.add("a-mid", priority=5, since=3.0)
    q.add("older-mid", priority=5, since=2.0)
    order = [await q.pop() for _ in range(5)]
    assert order == ["new-high", "older-mid", "a-mid", "b-mid", "old-low"]


async def test_priority_update_reorders_active_gang() -> None:
    """Re-adding an active gang with a higher priority moves it ahead."""
    q = make()
    q.add("a", priority=1, since=1.0)
    q.add("b", priority=2, since=2.0)
    q.add("a", priority=3, since=1.0)
    assert await q.pop() == "a"
    assert await q.pop() == "b"


async def test_error_goes_to_backoff_with_exponential_delay() -> None:
    """After an error the gang is not handed out until its backoff (1 s, then 2 s) expires."""
    clock = FakeClock()
    q = make(clock)
    q.add("g")
    assert await q.pop() == "g"
    q.done("g", Code.ERROR)
    assert q.room("g") is Room.BACKOFF
    assert await pop_now(q) is None
    clock.advance(1.0)
    assert await pop_now(q) == "g"
    q.done("g", Code.ERROR)
    clock.advance(1.5)
    assert await pop_now(q) is None
    clock.advance(0.5)
    assert await pop_now(q) == "g"


@pytest.mark.parametrize("code", [Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE])
async def test_unschedulable_waits_for_an_event(code: Code) -> None:
    """An unschedulable (or unresolvable) gang stays parked, even past its backoff, until a cluster event moves it:
    it is never retried in a loop."""
    clock = FakeClock()
    q = make(clock)
    q.add("g")
    await q.pop()
    q.done("g", code)
    assert q.room("g") is Room.UNSCHEDULABLE
    clock.advance(5.0)
    assert await pop_now(q) is None
    assert q.move_all() == 1
    assert await pop_now(q) == "g"


async def test_event_before_backoff_expiry_goes_to_backoff() -> None:
    """A gang woken by an event during its backoff waits for the backoff, never retrying at once."""
    clock = FakeClock()
    q = make(clock)
    q.add("g")
    await q.pop()
    q.done("g", Code.UNSCHEDULABLE)
    q.move_all()
    assert q.room("g") is Room.BACKOFF
    assert await pop_now(q) is None
    clock.advance(1.0)
    assert await pop_now(q) == "g"


async def test_event_during_attempt_is_not_lost() -> None:
    """An event that arrives while the gang is in flight sends an unschedulable result to backoff, not to park."""
    q = make()
    q.add("g")
    await q.pop()
    q.move_all()
    q.done("g", Code.UNSCHEDULABLE)
    assert q.room("g") is Room.BACKOFF


async def test_own_change_wakes_parked_gang() -> None:
    """`add` for a parked gang (its PodGang or pods changed) releases it."""
    clock = FakeClock()
    q = make(clock)
    q.add("g")
    await q.pop()
    q.done("g", Code.UNSCHEDULABLE)
    clock.advance(2.0)
    q.add("g")
    assert q.room("g") is Room.ACTIVE


async def test_periodic_flush_releases_parked_gangs() -> None:
    """Without any event a parked gang comes back after the flush interval."""
    clock = FakeClock()
    q = make(clock)
    q.add("g")
    await q.pop()
    q.done("g", Code.UNSCHEDULABLE)
    waiter = asyncio.ensure_future(q.pop())
    for _ in range(100):
        if clock.sleepers:
            break
        await asyncio.sleep(0)
    clock.advance(29.0)
    await asyncio.sleep(0)
    assert not waiter.done()
    clock.advance(1.0)
    assert await asyncio.wait_for(waiter, 5) == "g"


async def test_scheduled_forgets_and_readd_during_flight_requeues() -> None:
    """SCHEDULED drops the gang, unless it was re-added while in flight."""
    q = make()
    q.add("a")
    q.add("b")
    await q.pop()
    q.done("a", Code.SUCCESS)
    assert q.room("a") is None
    await q.pop()
    q.add("b")
    q.done("b", Code.SUCCESS)
    assert q.room("b") is Room.ACTIVE


async def test_remove_and_close() -> None:
    """Removed gangs are never popped; close wakes a waiting pop with QueueClosed."""
    q = make()
    q.add("a")
    q.remove("a")
    waiter = asyncio.ensure_future(q.pop())
    await asyncio.sleep(0)
    q.close()
    with pytest.raises(QueueClosed):
        await waiter


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["error", "unschedulable", "event"]), min_size=1, max_size=12))
def test_never_hot_loops(steps: list[str]) -> None:
    """Whatever mix of failures and events, a failed gang is never handed out again without time passing."""

    async def scenario() -> None:
        clock = FakeClock()
        q = make(clock)
        q.add("g")
        assert await q.pop() == "g"
        for step in steps:
            if step == "event":
                q.move_all()
                continue
            q.done("g", Code.ERROR if step == "error" else Code.UNSCHEDULABLE)
            q.move_all()
            assert await pop_now(q) is None
            clock.advance(q.backoff(q.attempts("g")))
            assert await pop_now(q) == "g"

    asyncio.run(scenario())


def test_backoff_is_capped() -> None:
    """Backoff doubles from the initial value up to the cap."""
    q = make()
    assert [q.backoff(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


async def test_set_priority_reorders_without_waking() -> None:
    """A priority change reorders active gangs but leaves a parked gang parked."""
    q = make()
    q.add("a", priority=1, since=1.0)
    q.add("b", priority=1, since=2.0)
    q.add("parked", priority=10, since=0.0)
    assert await q.pop() == "parked"
    q.done("parked", Code.UNSCHEDULABLE)
    q.set_priority("b", 5)
    q.set_priority("parked", 9)
    assert q.room("parked") is Room.UNSCHEDULABLE
    assert sorted(q.held()) == ["a", "b", "parked"]
    assert await q.pop() == "b"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                ["add", "pop", "scheduled", "unschedulable", "unresolvable", "error", "event", "remove", "tick"]
            ),
            st.sampled_from(["a", "b", "c", "d"]),
        ),
        max_size=40,
    )
)
def test_room_counts_and_flush_follow_every_transition(steps: list[tuple[str, str]]) -> None:
    """The per-room index behind `counts`, `move_all` and the flush agrees with `room` after any sequence, and a
    parked gang is never left parked past the flush interval."""

    async def scenario() -> None:
        clock = FakeClock()
        q = make(clock)
        in_flight: set[str] = set()
        for op, key in steps:
            if op == "add":
                q.add(key)
            elif op == "pop":
                popped = await pop_now(q)
                if popped is not None:
                    in_flight.add(popped)
            elif op in CODES and key in in_flight:
                in_flight.discard(key)
                q.done(key, CODES[op])
            elif op == "event":
                q.move_all()
            elif op == "remove":
                q.remove(key)
                in_flight.discard(key)
            elif op == "tick":
                clock.advance(31.0)
                await pop_now(q)  # runs the flush; whatever it pops is in flight now
                in_flight.update(k for k in "abcd" if q.room(k) is Room.IN_FLIGHT)
            rooms = [q.room(k) for k in q.held()]
            assert q.counts() == {room: rooms.count(room) for room in Room}
            assert len(q) == len(rooms)
        clock.advance(31.0)
        await pop_now(q)
        assert q.counts()[Room.UNSCHEDULABLE] == 0

    asyncio.run(scenario())


@settings(max_examples=50, deadline=None)
@given(
    gangs=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=12), count=st.integers(0, 14)
)
async def test_peek_shows_the_pop_order_and_moves_nothing(gangs: list[tuple[int, int]], count: int) -> None:
    """Property: `peek(n)` is the first n keys `pop` hands out, and peeking leaves every gang where it was."""
    q = make()
    for k, (priority, since) in enumerate(gangs):
        q.add(f"g{k}", priority=priority, since=float(since))
    seen = q.peek(count)
    assert q.counts()[Room.ACTIVE] == len(gangs)
    popped = [await q.pop() for _ in gangs]
    assert seen == popped[:count]
