"""The strategy interface every placement approach in the benchmark implements, and our CP-SAT `place` behind it.

A strategy sees an immutable `Snapshot` and one `GangRequest` and answers with pod → node assignments or `None`
(cannot place now). The runner owns committing decisions to the strategy's own evolving snapshot, so baselines
and `place` are measured on exactly the same footing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from grove_sched.model import GangRequest, Placement, PlacementOptions
from grove_sched.placement import Snapshot, place_ahead


@dataclass(frozen=True, slots=True)
class Decision:
    """Pod name → node name for every placed pod; `score` is the placementScore when the strategy has one.

    `path` says whose answer it is ("greedy" or "cpsat" for ours, the baseline's kind otherwise) and `status` how
    CP-SAT ended ("OPTIMAL", "FEASIBLE" / "UNKNOWN" when it hit its deterministic limit, "AT_BOUND", ...). A
    strategy that reports why a gang did not fit returns `placed=False` with no assignments."""

    assignments: Mapping[str, str]
    score: float | None = None
    path: str = ""
    status: str = ""
    placed: bool = True


class Strategy(Protocol):
    """Places one gang against a snapshot; pure, so the runner can time it and commit the result itself."""

    @property
    def name(self) -> str:
        """Short name used in tables and plots."""
        ...

    def __call__(self, snapshot: Snapshot, gang: GangRequest) -> Decision | None:
        """The gang's placement, or None when it cannot be placed whole (its minimum) now."""
        ...


@dataclass(frozen=True, slots=True)
class GroveStrategy:
    """grove-scheduler's pure placement function (`use_cpsat=False` gives its greedy stages alone; `lookahead` > 0
    looks that many queued gangs ahead, `place_ahead`, when the runner passes the queue)."""

    name: str = "cpsat"
    options: PlacementOptions = field(default_factory=PlacementOptions)
    lookahead: int = 0

    def __call__(self, snapshot: Snapshot, gang: GangRequest, queue: Sequence[GangRequest] = ()) -> Decision | None:
        """Call `place` (or `place_ahead` over `queue`); an `Unschedulable` answer becomes an unplaced decision
        carrying the solver's status."""
        result = place_ahead(snapshot, gang, queue, self.lookahead, self.options)  # no window or queue: `place`
        if isinstance(result, Placement):
            return Decision(result.assignments, result.score, result.stats.path, result.stats.status)
        if result.stats is None:
            return None
        return Decision({}, None, result.stats.path, result.stats.status, placed=False)
