"""Look-ahead over the queue: of a gang's good placements, take the one that leaves room for the gangs behind it.

Why: the objective grades one gang at a time, and on sequences that fill a cluster the best placement of each gang
is not the best placement of the sequence (stop 30: CP-SAT optimising the per-gang objective better than greedy
did not place more GPUs over a sequence). A pilot method fixes the myopia where it bites, at the moment a gang's
choice decides whether later gangs still fit: `place_ahead` places the gang as `place` would, then places the next
gangs of the queue behind it with greedy alone (the rollout). When they all fit, nothing is lost by the myopic
choice and it stands. When some do not, it rolls the queue out behind each of `place`'s alternatives (greedy's
plans in the next best candidate domains, and greedy's plan when CP-SAT's is the answer) and keeps the placement
after which the most GPUs of the queue fit; ties keep `place`'s answer. The chosen placement is one of `place`'s
own plans, so every hard constraint holds as before; only the choice among them changes.

Cost: nothing while the cluster is far from full for the queue (`ROOMY`), then one rollout (`window` greedy
placements) per gang while the queue fits, up to `ALTERNATIVES` more when it does not. That is well above the
single-gang latency bound, so it is off by default (`PlacementOptions` has no say in it: callers pass the queue
and a window, the scheduler from `--lookahead-gangs`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from grove_sched.model import GPU, LOOKAHEAD_PATH, GangRequest, Placement, PlacementOptions, Unschedulable
from grove_sched.placement._place import assumed_pods, place
from grove_sched.placement._snapshot import Snapshot

__all__ = ["place_ahead"]


def _gpus(gang: GangRequest, placed: Placement | None = None) -> int:
    """GPUs of the gang's pods (of those `placed` assigns, when given): what a rollout counts."""
    total = 0
    for group in gang.groups:
        for pod in group.pods:
            if placed is None or pod.name in placed.assignments:
                requests = pod.requests if pod.requests is not None else group.requests
                total += int(requests.get(GPU, 0))
    return total


def _rollout(snapshot: Snapshot, queue: Sequence[GangRequest], options: PlacementOptions) -> int:
    """GPUs of `queue` that greedy places in order on `snapshot` (a gang that does not fit is skipped)."""
    placed = 0
    for gang in queue:
        result = place(snapshot, gang, options)
        if isinstance(result, Placement):
            snapshot = snapshot.with_assumed(assumed_pods(gang, result))
            placed += _gpus(gang, result)
    return placed


ROOMY = 2.0
"""No rollout while the cluster's free GPUs, once the gang is placed, are at least this many times what the queued
gangs ask for: far from full, the queue fits behind any of the plans (the rollout would only confirm it), and this
skips the look-ahead's whole cost for the first part of a sequence that fills a cluster."""


def _roomy(snapshot: Snapshot, gang_gpus: int, queued_gpus: int) -> bool:
    """True when the cluster is far from full for the queue (`ROOMY`)."""
    column = snapshot.resource_index(GPU)
    if column is None:
        return True
    free = int(snapshot.free[~snapshot.unschedulable, column].sum())
    return free - gang_gpus >= ROOMY * queued_gpus


def place_ahead(
    snapshot: Snapshot,
    gang: GangRequest,
    queue: Sequence[GangRequest],
    window: int,
    options: PlacementOptions | None = None,
) -> Placement | Unschedulable:
    """`place(snapshot, gang, options)`, or one of its alternatives that leaves more of the next `window` gangs
    of `queue` placeable (see the module docstring)."""
    ahead = list(queue[:window])
    if not ahead:
        return place(snapshot, gang, options)
    others: list[Placement] = []
    answer = place(snapshot, gang, options, alternatives=others)
    if not isinstance(answer, Placement) or not others:
        return answer
    wanted = sum(_gpus(g) for g in ahead)
    if _roomy(snapshot, _gpus(gang), wanted):
        return answer
    greedy_only = dataclasses.replace(options or PlacementOptions(), use_cpsat=False)
    best, best_room = answer, _rollout(snapshot.with_assumed(assumed_pods(gang, answer)), ahead, greedy_only)
    for other in others:
        if best_room >= wanted:
            break
        room = _rollout(snapshot.with_assumed(assumed_pods(gang, other)), ahead, greedy_only)
        if room > best_room:
            best, best_room = other, room
    if best is answer:
        return answer
    return dataclasses.replace(best, stats=dataclasses.replace(best.stats, path=LOOKAHEAD_PATH))
