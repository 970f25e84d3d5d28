"""Where `place` runs: on the event loop while solves are short, in a worker thread after a long one.

A greedy placement costs a few ms of CPU, but handed to a worker thread it took ~10x that
in wall time in a busy scheduler: the thread and the event loop (binds, Events, watch decoding of the previous
gangs) fight over the GIL, and the result then waits its turn in the loop's ready queue (measured at 1,000 nodes:
3.5 ms CPU, 11 ms in the thread, 23 ms until the cycle resumed). So `place` runs on the loop thread while solves
stay short (`Solver`): whenever the previous solve took at most `inline_solve_limit` seconds of CPU. After a longer one
(CP-SAT, which releases the GIL while it searches) the solves run in a worker thread until one is short again,
so a run of long solves blocks the loop at most once. CPU time, not wall time, decides, so a solve slowed by a
busy machine does not flip the mode. Each cycle first yields to the loop, so binds and informer events of
earlier gangs keep flowing between cycles.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import structlog

from grove_sched.model import GangRequest, PlacementOptions, PlacementResult
from grove_sched.placement import Snapshot, place, place_ahead

__all__ = ["Solver"]

log = structlog.get_logger("grove_sched.solver")


class Solver:
    """Runs `place` on the loop thread while solves are short, else in a worker thread (module docstring).

    With `lookahead` > 0 the scheduler sets `queue` (the gangs queued behind the one being placed) for the cycle,
    and `place_ahead` looks that many of them ahead (`grove_sched.placement._lookahead`)."""

    def __init__(self, options: PlacementOptions | None = None, inline_limit: float = 0.02, lookahead: int = 0) -> None:
        self.options = options or PlacementOptions()
        self.lookahead = lookahead
        self.queue: Sequence[GangRequest] = ()
        self._inline_limit = inline_limit
        self._last_cpu = 0.0

    async def solve(self, snapshot: Snapshot, request: GangRequest) -> PlacementResult:
        """`place(snapshot, request)` (or `place_ahead` over `queue`), inline or in a worker thread."""
        queue = self.queue if self.lookahead > 0 else ()
        if self._inline_limit > 0 and self._last_cpu <= self._inline_limit:
            result, self._last_cpu = _timed_place(snapshot, request, self.options, queue, self.lookahead)
            if self._last_cpu > self._inline_limit:
                log.debug("long solve on the loop, the next one runs in a worker thread", gang=request.name)
            return result
        result, self._last_cpu = await asyncio.to_thread(
            _timed_place, snapshot, request, self.options, queue, self.lookahead
        )
        return result


def _timed_place(
    snapshot: Snapshot,
    request: GangRequest,
    options: PlacementOptions,
    queue: Sequence[GangRequest] = (),
    window: int = 0,
) -> tuple[PlacementResult, float]:
    """`place` (`place_ahead` when there is a queue) and the CPU seconds it took on the calling thread."""
    start = time.thread_time()
    result = place_ahead(snapshot, request, queue, window, options) if queue else place(snapshot, request, options)
    return result, time.thread_time() - start
