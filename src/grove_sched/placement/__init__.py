"""Pure, deterministic gang placement: `place(snapshot, gang, options) -> Placement | Unschedulable`.

The scheduler loop builds a `Snapshot` per cycle (or derives one with `Snapshot.with_assumed`), calls `place`,
and binds or reports. Nothing here performs I/O, reads a clock or keeps global state.

The stages `place` chains are public too, for tests and benchmarks that look at one of them (the modules behind
them stay private): `build_problem` (stage 1: validate, split, filter), `deciding_level` and `candidates` (stage
2), `greedy`, `prune_bounds` and `greedy_plans` (stage 3), `class_units` / `node_units` and `solve` (stage 4),
`layout` / `evaluate` / `bound_rows` (the objective: a tuple of tier values compared lexicographically),
`build_hierarchy` (the topology levels) and `placement_score`.
"""

from __future__ import annotations

from grove_sched.placement._cpsat import SolveResult, solve
from grove_sched.placement._domains import Candidates, Level, broader_level, candidates, deciding_level
from grove_sched.placement._fragment import Profile, may_fragment, profile, shape_counts, unusable_gpus
from grove_sched.placement._greedy import greedy
from grove_sched.placement._levels import Hierarchy, build_hierarchy
from grove_sched.placement._lexsolve import Solved, solve_lexicographically, stages
from grove_sched.placement._lookahead import place_ahead
from grove_sched.placement._objective import Layout, bound_rows, evaluate, layout
from grove_sched.placement._place import assumed_pods, greedy_plans, place, prune_bounds
from grove_sched.placement._problem import InvalidGang, Problem, build_problem
from grove_sched.placement._score import placement_score
from grove_sched.placement._selectors import (
    SelectorError,
    label_selector_mask,
    node_terms_mask,
    tolerates,
    untolerated_taints,
)
from grove_sched.placement._snapshot import BoolArray, CodeArray, IntArray, LabelColumns, Snapshot
from grove_sched.placement._units import UnitSet, class_units, enumerate_patterns, node_units

__all__ = [
    "BoolArray",
    "Candidates",
    "CodeArray",
    "Hierarchy",
    "IntArray",
    "InvalidGang",
    "LabelColumns",
    "Layout",
    "Level",
    "Problem",
    "Profile",
    "SelectorError",
    "Snapshot",
    "SolveResult",
    "Solved",
    "UnitSet",
    "assumed_pods",
    "bound_rows",
    "broader_level",
    "build_hierarchy",
    "build_problem",
    "candidates",
    "class_units",
    "deciding_level",
    "enumerate_patterns",
    "evaluate",
    "greedy",
    "greedy_plans",
    "label_selector_mask",
    "layout",
    "may_fragment",
    "node_terms_mask",
    "node_units",
    "place",
    "place_ahead",
    "placement_score",
    "profile",
    "prune_bounds",
    "shape_counts",
    "solve",
    "solve_lexicographically",
    "stages",
    "tolerates",
    "untolerated_taints",
    "unusable_gpus",
]
