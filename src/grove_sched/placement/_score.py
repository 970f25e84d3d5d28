"""`placementScore`: how close a placement is to the best one provable, as a number in [0, 1].

The objective is lexicographic, so a ratio of costs says little. Instead the score walks the tiers in priority
order, each against a cheap lower bound that depends only on the gang and the snapshot (never on solver
settings):

* 1.0 only when the plan is proven optimal on every tier, preferred domains included: CP-SAT proved it over every
  candidate, or every tier value sits at its lower bound (then it is optimal as well).
* Otherwise let i be the first tier (0-based, most important first) above its floor, gap = value - floor, and
  g = gap / (gap + scale_i) in (0, 1), where scale_i is that tier's natural size for this gang (pods for pod
  tiers, the gang's GPUs for GPU tiers, 1 for domain counts). The score lies in tier i's band
  [1 - 2^-i, 1 - 2^-(i+1)): `score = 1 - 2^-i + 2^-(i+1) * (1 - g)`. A tier with one value per topology level
  splits its band the same way: value j of m (broadest level first) takes [lo + w(1 - 2^-j), lo + w(1 - 2^-(j+1)))
  of the band [lo, lo + w), the last value the rest, so one value per tier gives exactly the band above.

So tier 1 (extra pods missing) gives [0, 0.5), tier 2 (preferred-domain violations) [0.5, 0.75), and a plan
whose only possible improvement is a few stranded GPUs scores about 0.97. The further down the list the first
possible improvement is, and the smaller it is, the closer the score is to 1. Because the floors are fixed for a
gang and snapshot, a plan that is strictly worse under the objective never scores higher than a better one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grove_sched.placement._domains import Candidates, Level
from grove_sched.placement._objective import TIERS, Key, Layout, bound_rows, layout, room_floor
from grove_sched.placement._problem import Problem


def placement_score(values: Sequence[int], tier_floors: Sequence[int], scales: Sequence[int], proven: bool) -> float:
    """The banded score of a cost key against its floors (one scale per tier), single values per tier."""
    return banded_score(values, tier_floors, scales, Layout((1,) * len(values)), proven)


def banded_score(
    values: Sequence[int], tier_floors: Sequence[int], scales: Sequence[int], lay: Layout, proven: bool
) -> float:
    """The banded score of a cost key against its floors, with `lay` giving the values per tier."""
    if proven:
        return 1.0
    for position, (value, floor) in enumerate(zip(values, tier_floors, strict=True)):
        gap = value - floor
        if gap > 0:
            i, j, m = lay.tier_of(position)
            g = gap / (gap + max(scales[i], 1))
            low, width = 1.0 - 2.0**-i, 2.0 ** -(i + 1)
            if m > 1:
                low, width = low + width * (1.0 - 2.0**-j), width * (2.0 ** -(j + 1) if j < m - 1 else 2.0**-j)
            return low + width * (1.0 - g)
    return 1.0


def tier_scales(problem: Problem) -> tuple[int, ...]:
    """Each tier's natural size for this gang: what a gap is measured against."""
    pods = int(problem.internal_min.sum())
    extra = int((problem.replicas - problem.internal_min).sum())
    gpus = int(problem.req[:, problem.gpu] @ problem.internal_min) if problem.gpu is not None else 0
    missed = int((problem.replicas * problem.pref_cost.max(axis=1, initial=0)).sum())
    scale = {
        "missing": extra,
        "violations": 1,
        "domains": 1,
        "room": gpus,
        "fragmented": gpus,
        "empty": pods,
        "stranded": gpus,
        "missed": missed,
    }
    return tuple(max(scale[name], 1) for name in TIERS)


def score_floors(problem: Problem, level: Level, cands: Candidates) -> Key:
    """Per-value lower bounds valid for every feasible placement of this gang on this snapshot (key order).

    With a required deciding level every feasible plan lies in one candidate domain, so each value's floor is
    its least per-domain bound over the candidates; otherwise the whole cluster is one domain.
    """
    lay = layout(problem)
    if level.hard and cands.ids:
        rows = bound_rows(problem, level.domains, level.index)[list(cands.ids)]
        floor = rows.min(axis=0)
    else:
        floor = bound_rows(problem, problem.whole)[0]
    floor = np.where(floor == np.iinfo(np.int64).max, 0, floor)
    room = lay.start("room")
    floor[room] = max(int(floor[room]), room_floor(problem))
    return tuple(int(x) for x in floor)
