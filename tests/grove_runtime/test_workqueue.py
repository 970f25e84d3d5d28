"""WorkQueue: de-duplication, never-concurrent processing, delayed adds and per-item backoff."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from grove_runtime.clock import FakeClock
from grove_runtime.workqueue import ItemExponentialBackoff, QueueShutDown, RateLimiter, TokenBucket, WorkQueue


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


async def test_duplicate_adds_collapse() -> None:
    """A key added many times before a worker takes it is handed out once."""
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    for _ in range(5):
        q.add("a")
    q.add("b")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"
    assert len(q) == 0
    await q.shut_down()


async def test_readd_while_processing_is_deferred_until_done() -> None:
    """A key re-added while processing is not handed to another worker until done() is called."""
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add("a")
    item = await q.get()
    q.add("a")
    assert len(q) == 0
    assert q.is_processing("a")
    q.done(item)
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    assert len(q) == 0
    await q.shut_down()


@given(st.lists(st.sampled_from("abcde"), min_size=1, max_size=40))
def test_queue_never_holds_duplicates(ops: list[str]) -> None:
    """Whatever the add sequence, the ready queue contains each key at most once."""

    async def run() -> None:
        q: WorkQueue[str] = WorkQueue(clock=FakeClock())
        for key in ops:
            q.add(key)
        seen = []
        while len(q):
            seen.append(await q.get())
        assert sorted(seen) == sorted(set(ops))
        await q.shut_down()

    asyncio.run(run())


async def test_add_after_waits_for_the_clock_and_earliest_deadline_wins() -> None:
    """add_after parks a key until its deadline; a later, earlier deadline replaces it."""
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("a", 10)
    q.add_after("a", 2)
    await settle()
    assert len(q) == 0
    clock.advance(1.9)
    await settle()
    assert len(q) == 0
    clock.advance(0.2)
    await settle()
    assert len(q) == 1
    assert q.pending_delayed() == 0
    clock.advance(20)
    await settle()
    assert len(q) == 1
    await q.shut_down()


async def test_get_blocks_until_add_and_shutdown_wakes_waiters() -> None:
    """A waiting get receives a later add; after shutdown get raises QueueShutDown."""
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    waiter = asyncio.ensure_future(q.get())
    await settle()
    assert not waiter.done()
    q.add("x")
    assert await waiter == "x"
    second = asyncio.ensure_future(q.get())
    await settle()
    await q.shut_down()
    try:
        await second
        raise AssertionError("expected QueueShutDown")
    except QueueShutDown:
        pass
    q.add("y")
    assert len(q) == 0


def test_item_backoff_doubles_and_caps_and_forget_resets() -> None:
    """Per-item backoff is 5 ms * 2^n, capped, and forget resets it."""
    backoff: ItemExponentialBackoff[str] = ItemExponentialBackoff(0.005, 1.0)
    delays = [backoff.when("a") for _ in range(10)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1.0
    assert backoff.when("b") == 0.005
    assert backoff.num_requeues("a") == 10
    backoff.forget("a")
    assert backoff.when("a") == 0.005


def test_token_bucket_allows_burst_then_spaces_requests() -> None:
    """The overall bucket grants `burst` immediate tokens, then one per 1/qps seconds."""
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert abs(bucket.reserve() - 0.1) < 1e-9
    clock.advance(10)
    assert bucket.reserve() == 0.0


def test_rate_limiter_takes_the_larger_delay() -> None:
    """The combined limiter returns the max of item backoff and bucket delay."""
    clock = FakeClock()
    limiter: RateLimiter[str] = RateLimiter(base_delay=0.005, max_delay=100, qps=1, burst=1, clock=clock)
    assert limiter.when("a") == 0.005
    assert abs(limiter.when("b") - 1.0) < 1e-9
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


async def test_add_rate_limited_backs_off_per_item() -> None:
    """Repeated failures of one key wait exponentially longer before it is ready again."""
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock, rate_limiter=RateLimiter(base_delay=1.0, clock=clock))
    q.add_rate_limited("a")
    q.add_rate_limited("a")
    await settle()
    clock.advance(1.0)
    await settle()
    assert len(q) == 1
    assert q.num_requeues("a") == 2
    item = await q.get()
    q.done(item)
    q.add_rate_limited("a")
    await settle()
    clock.advance(3.9)
    await settle()
    assert len(q) == 0
    clock.advance(0.1)
    await settle()
    assert len(q) == 1
    q.forget("a")
    assert q.num_requeues("a") == 0
    await q.shut_down()
