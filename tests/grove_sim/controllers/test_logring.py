"""The container log ring: bounded whatever a process prints, its tail is the newest whole lines, and a follower
sees every line appended after its position, then ends with the output."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from hypothesis import assume, given
from hypothesis import strategies as st

from grove_sim.controllers.logring import ContainerLogs, LogRing
from grove_sim.machinery.logstamps import stamp

chunks = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\r", b"")), max_size=30)


def lines_of(data: bytes) -> list[bytes]:
    """The lines ``data`` prints once its output ends (a partial last line counts)."""
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1] + b"\n"] if parts[-1] else [])


@given(chunks, st.integers(min_value=1, max_value=64))
def test_the_ring_keeps_the_newest_lines_within_its_limit(pieces: list[bytes], limit: int) -> None:
    """Never more than ``limit`` bytes; when every line fits, exactly the newest lines that fit together."""
    ring = LogRing(limit)
    for piece in pieces:
        ring.append(piece)
    ring.close()
    kept, _ = ring.tail()
    assert len(kept) <= limit
    expected = lines_of(b"".join(pieces))
    assume(all(len(line) <= limit for line in expected))
    newest: list[bytes] = []
    for line in reversed(expected):
        if sum(map(len, newest)) + len(line) > limit:
            break
        newest.insert(0, line)
    assert kept == b"".join(newest)


@given(chunks, st.integers(min_value=0, max_value=5))
def test_tail_lines_are_the_last_ones(pieces: list[bytes], count: int) -> None:
    ring = LogRing(1 << 20)
    for piece in pieces:
        ring.append(piece)
    ring.close()
    everything = lines_of(b"".join(pieces))
    assert ring.tail(count)[0] == b"".join(everything[len(everything) - count :] if count else [])


async def test_a_follower_sees_later_lines_and_ends_with_the_output() -> None:
    ring = LogRing(64)
    ring.append(b"before\n")
    _, position = ring.tail()
    seen: list[bytes] = []

    async def follow() -> None:
        async for chunk in ring.follow(position):
            seen.append(chunk)

    task = asyncio.get_running_loop().create_task(follow())
    await asyncio.sleep(0)
    ring.append(b"after one\nafter")
    await asyncio.sleep(0)
    ring.append(b" two\n")
    ring.close()
    await asyncio.wait_for(task, 5)
    assert b"".join(seen) == b"after one\nafter two\n"


def test_a_new_run_keeps_the_previous_runs_output() -> None:
    logs = ContainerLogs(64)
    first = logs.new_run()
    first.append(b"run 1\n")
    second = logs.new_run()
    second.append(b"run 2\n")
    assert logs.previous is first
    assert first.closed
    assert logs.current is second
    assert second.tail()[0] == b"run 2\n"


def test_since_keeps_the_lines_printed_from_then_on() -> None:
    ring = LogRing(1024)
    ring.append(b"old\n")
    cut = stamp()
    ring.append(b"new\n")
    assert ring.tail(since=cut)[0] == b"new\n"
    assert ring.tail(since=stamp(datetime(2000, 1, 1, tzinfo=UTC)))[0] == b"old\nnew\n"
