"""Which replicas of a scaling group a rolling update recreates now: the pure half of `scalinggroup/lifecycle.py`.

A scaling-group replica is a multi-node gang (a leader and its workers, say) that only works on one template, so
it is never updated pod by pod: all its member PodCliques are deleted and recreated from the newest template. The
rule, for a scaling group of the PodCliqueSet replica being updated:

* old replicas that are not available (a member below its minAvailable Ready pods) serve nothing: all recreated
  at once when the replica's lane lets the group act;
* available ones are recreated one at a time, lowest index first, and only when nothing else of the group is down:
  no member PodClique being deleted, every other replica quiet (complete, every pod Ready), and the replica's lane
  lets the group act (`lane.lane_allows`).
"""

from __future__ import annotations

from collections.abc import Sequence

from grove_operator.lifecycle.lane import GroupReplica
from grove_operator.lifecycle.replacement import Member, Replacement, plan_replacement

__all__ = ["plan_group"]


def plan_group(replicas: Sequence[GroupReplica], *, turn: bool) -> Replacement[int]:
    """The step for a scaling group whose replicas are `replicas`; `turn`: the lane lets it take one down.
    `at_once`: the old replicas that are not available; `replace`: the available one to recreate now."""
    members = [Member(r.index, r.stale, r.available, r.quiet, going=r.terminating, order=(r.index,)) for r in replicas]
    return plan_replacement(members, turn=turn, noun="replica")
