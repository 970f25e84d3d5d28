"""`placementScore`: how close a placement is to the best one provable, as a number in [0, 1].

The objective is lexicographic, so a ratio of weighted costs says little: the top tier's weight swamps the rest,
and a cheap lower bound on the weighted cost is often 0, which made good placements score 0. Instead the score
walks the tiers in priority order, each against a cheap lower bound that depends only on the gang and the
snapshot (never on solver settings):

* 1.0 when the plan is proven optimal (CP-SAT proved it over every candidate, its bound reaches the cost, or the
  cost is 0), or when every tier sits at its lower bound (then it is optimal as well).
* Otherwise let i be the first tier (0-based, most important first) above its floor, gap = value - floor, and
  g = gap / (gap + scale_i) in (0, 1), where scale_i is that tier's natural size for this gang (pods for pod
  tiers, the gang's GPUs for GPU tiers, 1 for domain counts). The score lies in tier i's band
  [1 - 2^-i, 1 - 2^-(i+1)): `score = 1 - 2^-i + 2^-(i+1) * (1 - g)`.

So tier 1 (extra pods missing) gives [0, 0.5), tier 2 (preferred-domain violations) [0.5, 0.75), and a plan
whose only possible improvement is a few stranded GPUs scores about 0.97. The further down the list the first
possible improvement is, and the smaller it is, the closer the score is to 1. Because the floors are fixed for a
gang and snapshot, a plan that is strictly worse under the objective never scores higher than a better one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grove_sched.model import ObjectiveBreakdown
from grove_sched.placement._domains import Candidates, Level
from grove_sched.placement._objective import TIERS, floors, room_floor
from grove_sched.placement._problem import Problem

_FIELDS = {
    "missing": "missing_extra_pods",
    "violations": "preferred_domain_violations",
    "racks": "empty_racks_opened",
    "room": "required_domain_free_gpus",
    "fragmented": "fragmented_gpus",
    "empty": "empty_nodes_opened",
    "stranded": "stranded_gpus",
    "missed": "missed_preference_weight",
}


def placement_score(values: Sequence[int], tier_floors: Sequence[int], scales: Sequence[int], proven: bool) -> float:
    """The banded score of tier `values` against their `tier_floors` (both in `TIERS` order)."""
    if proven:
        return 1.0
    for i, (value, floor, scale) in enumerate(zip(values, tier_floors, scales, strict=True)):
        gap = value - floor
        if gap > 0:
            g = gap / (gap + max(scale, 1))
            return 1.0 - 2.0**-i + 2.0 ** -(i + 1) * (1.0 - g)
    return 1.0


def tier_values(objective: ObjectiveBreakdown) -> tuple[int, ...]:
    """The breakdown's tier values in `TIERS` order."""
    return tuple(int(getattr(objective, _FIELDS[name])) for name in TIERS)


def tier_scales(problem: Problem) -> tuple[int, ...]:
    """Each tier's natural size for this gang: what a gap is measured against."""
    pods = int(problem.internal_min.sum())
    extra = int((problem.replicas - problem.internal_min).sum())
    gpus = int(problem.req[:, problem.gpu] @ problem.internal_min) if problem.gpu is not None else 0
    missed = int((problem.replicas * problem.pref_cost.max(axis=1, initial=0)).sum())
    scale = {
        "missing": extra,
        "violations": 1,
        "racks": 1,
        "room": gpus,
        "fragmented": gpus,
        "empty": pods,
        "stranded": gpus,
        "missed": missed,
    }
    return tuple(max(scale[name], 1) for name in TIERS)


def score_floors(problem: Problem, level: Level, cands: Candidates) -> tuple[int, ...]:
    """Per-tier lower bounds valid for every feasible placement of this gang on this snapshot (`TIERS` order).

    With a required deciding level every feasible plan lies in one candidate domain, so each tier's floor is its
    least per-domain bound over the candidates; otherwise the whole cluster is one domain.
    """
    if level.hard and cands.ids:
        per = floors(problem, level.domains)
        ids = list(cands.ids)
        missing, racks, empty = (int(arr[ids].min()) for arr in (per.missing, per.racks, per.empty))
    else:
        whole = floors(problem, np.zeros(problem.snapshot.num_nodes, dtype=np.int32))
        missing, racks, empty = int(whole.missing[0]), int(whole.racks[0]), int(whole.empty[0])
    floor = {"missing": missing, "racks": racks, "room": room_floor(problem), "empty": empty}  # others: 0
    return tuple(floor.get(name, 0) for name in TIERS)
