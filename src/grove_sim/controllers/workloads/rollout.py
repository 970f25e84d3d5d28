"""The arithmetic of a Deployment rollout, pure: given the ReplicaSets' sizes, what each should be scaled to.

It follows ``pkg/controller/deployment`` (``rolloutRolling``: scale the new ReplicaSet up within ``maxSurge``,
then, in a later step, clean up the old ReplicaSets' unhealthy pods and scale their healthy ones down while
``replicas - maxUnavailable`` stay available; ``rolloutRecreate``: old ReplicaSets to zero, wait until their pods
are gone, then the new one up) with one difference that makes the bounds hold at every instant rather than
eventually: a ReplicaSet counts ``max(spec.replicas, active pods)`` towards the surge (its pods may not have been
deleted yet) and ``min(spec.replicas, available pods)`` towards availability (its pods may not have been created
yet, and a scale-down removes unavailable pods first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ReplicaSetSize", "recreate_step", "rolling_step"]


@dataclass(frozen=True, slots=True)
class ReplicaSetSize:
    """What the rollout needs to know of one ReplicaSet."""

    name: str
    replicas: int
    """``spec.replicas``."""
    active: int
    """Pods neither being deleted nor finished."""
    available: int
    """Active pods that are Ready."""
    pods: int = 0
    """Every pod, terminating ones included (Recreate waits for them)."""

    @property
    def surge_count(self) -> int:
        return max(self.replicas, self.active)

    @property
    def available_count(self) -> int:
        return min(self.replicas, self.available)


def rolling_step(
    replicas: int, max_surge: int, max_unavailable: int, new: ReplicaSetSize, old: Sequence[ReplicaSetSize]
) -> dict[str, int]:
    """The ReplicaSets to resize in this step, by name (``old`` oldest first); empty when nothing is to change."""
    max_total = replicas + max_surge
    current = new.surge_count + sum(rs.surge_count for rs in old)
    if new.replicas > replicas:
        return {new.name: replicas}
    if new.replicas < replicas and current < max_total:
        return {new.name: new.replicas + min(max_total - current, replicas - new.replicas)}
    min_available = replicas - max_unavailable
    all_pods = new.replicas + sum(rs.replicas for rs in old)
    new_unavailable = new.replicas - new.available_count
    budget = all_pods - min_available - new_unavailable
    if budget <= 0:
        return {}
    sizes = {rs.name: rs.replicas for rs in old}
    for rs in old:
        unhealthy = rs.replicas - rs.available_count
        cut = min(budget, unhealthy)
        if cut > 0:
            sizes[rs.name] -= cut
            budget -= cut
    available = new.available_count + sum(min(sizes[rs.name], rs.available) for rs in old)
    remaining = available - min_available
    for rs in old:
        if remaining <= 0:
            break
        cut = min(sizes[rs.name], remaining)
        sizes[rs.name] -= cut
        remaining -= cut
    return {rs.name: sizes[rs.name] for rs in old if sizes[rs.name] != rs.replicas}


def recreate_step(replicas: int, new: ReplicaSetSize | None, old: Sequence[ReplicaSetSize]) -> dict[str, int]:
    """Old ReplicaSets to zero; once none has a pod left, the new one (``""`` names a new one to create)."""
    shrink = {rs.name: 0 for rs in old if rs.replicas}
    if shrink:
        return shrink
    if any(rs.pods for rs in old):
        return {}
    if new is None:
        return {"": replicas}
    return {new.name: replicas} if new.replicas != replicas else {}
