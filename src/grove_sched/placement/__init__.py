"""Pure, deterministic gang placement: `place(snapshot, gang, options) -> Placement | Unschedulable`.

The scheduler loop builds a `Snapshot` per cycle (or derives one with `Snapshot.with_assumed`), calls `place`,
and binds or reports. Nothing here performs I/O, reads a clock or keeps global state.
"""

from __future__ import annotations

from grove_sched.placement._place import assumed_pods, place
from grove_sched.placement._snapshot import LabelColumns, Snapshot

__all__ = ["LabelColumns", "Snapshot", "assumed_pods", "place"]
