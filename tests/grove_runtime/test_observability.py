"""Logging carries reconcile context as JSON; signals stop the manager; the fake clock wakes sleepers in order."""

from __future__ import annotations

import asyncio
import io
import json
import logging as stdlib_logging
import os
import signal

import structlog

from grove_runtime import logging as grove_logging
from grove_runtime.client import KubeClient
from grove_runtime.clock import FakeClock, LoopClock
from grove_runtime.manager import Manager


def test_json_logs_carry_reconcile_context() -> None:
    """Inside reconcile_context every JSON line has controller, key and reconcile_id; outside it has none."""
    stream = io.StringIO()
    root = stdlib_logging.getLogger()
    saved = (root.handlers[:], root.level)
    grove_logging.configure("DEBUG", stream=stream)
    try:
        log = grove_logging.get_logger("t")
        with grove_logging.reconcile_context("pcs", "ns/a", "rid-1") as rid:
            log.info("inside", extra=1)
        log.info("outside")
    finally:
        structlog.reset_defaults()
        root.handlers[:], root.level = saved[0], saved[1]
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert rid == "rid-1"
    assert inside["controller"] == "pcs"
    assert inside["key"] == "ns/a"
    assert inside["reconcile_id"] == "rid-1"
    assert inside["extra"] == 1
    assert inside["level"] == "info"
    assert "controller" not in outside


async def test_fake_clock_wakes_sleepers_in_deadline_order() -> None:
    """Sleepers wake only when advance passes their deadline, earliest first."""
    clock = FakeClock()
    woke: list[int] = []

    async def sleeper(n: int) -> None:
        await clock.sleep(n)
        woke.append(n)

    tasks = [asyncio.ensure_future(sleeper(n)) for n in (3, 1, 2)]
    await asyncio.sleep(0)
    assert clock.sleepers == 3
    clock.advance(2)
    await asyncio.sleep(0)
    assert woke == [1, 2]
    clock.advance(1)
    await asyncio.gather(*tasks)
    assert woke == [1, 2, 3]
    assert clock.now().year == 2026


async def test_loop_clock_uses_loop_time() -> None:
    """LoopClock reports the running loop's time and a UTC wall clock."""
    clock = LoopClock()
    loop = asyncio.get_running_loop()
    before = loop.time()
    now = clock.monotonic()
    assert before <= now <= loop.time()
    assert clock.now().tzinfo is not None


async def test_sigterm_stops_the_manager_gracefully(mini_client: KubeClient) -> None:
    """SIGTERM while running makes run() return normally."""
    manager = Manager(mini_client, health_port=None)
    task = asyncio.ensure_future(manager.run())
    await manager.started.wait()
    os.kill(os.getpid(), signal.SIGTERM)
    await task
    assert task.exception() is None
    assert not manager.leading
