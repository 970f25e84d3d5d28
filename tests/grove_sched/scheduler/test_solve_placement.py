"""Where the scheduling cycle runs the solver: on the loop while solves are short, else in a worker thread."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from grove_sched import solver as solver_module
from grove_sched.model import Code, GangRequest, Status, Unschedulable
from grove_sched.solver import Solver

REQUEST = GangRequest("g", "default", ())


class FakePlace:
    """Stands in for `place`: records the thread it ran on and burns `cpu` seconds of CPU there."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.threads: list[str] = []

    def __call__(self, snapshot: Any, request: GangRequest, options: Any) -> Unschedulable:
        self.threads.append("loop" if threading.current_thread() is threading.main_thread() else "worker")
        end = time.thread_time() + self.cpu
        while time.thread_time() < end:
            pass
        return Unschedulable(Status(Code.UNSCHEDULABLE, ("fake",)))


async def test_after_a_long_solve_solves_run_in_a_thread_until_one_is_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short solves stay on the loop; one over the limit sends the next ones to a worker until one is short."""
    fake = FakePlace()
    monkeypatch.setattr(solver_module, "place", fake)
    solver = Solver(inline_limit=0.005)
    for cpu in (0.0, 0.02, 0.02, 0.0, 0.0):
        fake.cpu = cpu
        await solver.solve(None, REQUEST)  # type: ignore[arg-type]
    assert fake.threads == ["loop", "loop", "worker", "worker", "loop"]


async def test_limit_zero_always_uses_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """`inline_solve_limit=0` keeps the solver off the loop thread entirely."""
    fake = FakePlace()
    monkeypatch.setattr(solver_module, "place", fake)
    solver = Solver(inline_limit=0.0)
    await solver.solve(None, REQUEST)  # type: ignore[arg-type]
    await solver.solve(None, REQUEST)  # type: ignore[arg-type]
    assert fake.threads == ["worker", "worker"]


async def test_a_solver_that_looks_ahead_hands_place_ahead_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `lookahead` > 0 and a queue set for the cycle, the solve is `place_ahead` over that queue and window;
    without a window, or with no queue, it stays `place`."""
    calls: list[tuple[str, Any]] = []
    unplaced = Unschedulable(Status(Code.UNSCHEDULABLE, ("fake",)))

    def fake_place(snapshot: Any, request: GangRequest, options: Any) -> Unschedulable:
        calls.append(("place", None))
        return unplaced

    def fake_ahead(snapshot: Any, request: GangRequest, queue: Any, window: int, options: Any) -> Unschedulable:
        calls.append(("ahead", (tuple(q.name for q in queue), window)))
        return unplaced

    monkeypatch.setattr(solver_module, "place", fake_place)
    monkeypatch.setattr(solver_module, "place_ahead", fake_ahead)
    behind = (GangRequest("h", "default", ()),)
    ahead = Solver(lookahead=8)
    await ahead.solve(None, REQUEST)  # type: ignore[arg-type]
    ahead.queue = behind
    await ahead.solve(None, REQUEST)  # type: ignore[arg-type]
    off = Solver()
    off.queue = behind
    await off.solve(None, REQUEST)  # type: ignore[arg-type]
    assert calls == [("place", None), ("ahead", (("h",), 8)), ("place", None)]
