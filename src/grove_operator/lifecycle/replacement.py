"""One rule for replacing the members of a unit on an older template: pods of a PodClique, replicas of a scaling
group (`podrollout`, `grouprollout` say what a member is).

* old members that do not serve (a pod not Ready, a scaling-group replica not available) serve nothing: they all go
  at once, once the replica's lane lets the unit act (a member the cache shows not serving may have just become
  Ready: deleting it while another unit is down would take two things down);
* serving ones go one at a time, in order, and only when nothing else of the unit is down: no member going, none
  missing (`shortfall`), every other member whole, and the replica's lane lets the unit act.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Member", "Replacement", "plan_replacement"]

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)  # not slotted: see `Replacement`
class Member(Generic[K]):
    """One pod or scaling-group replica as the rule sees it."""

    key: K
    old: bool
    """On an older template."""
    serving: bool
    """Ready (a pod), available (a scaling-group replica)."""
    whole: bool
    """Nothing of it down: Ready (a pod), every pod Ready (a scaling-group replica)."""
    going: bool
    """Being deleted."""
    order: tuple[Any, ...] = ()
    """Replacement order among the serving old members (smallest first)."""


# Not slotted: calling a subscripted generic such as `Replacement[str](...)` sets `__orig_class__` on the instance,
# which a slotted frozen dataclass refuses with a TypeError.
@dataclass(frozen=True)
class Replacement(Generic[K]):
    """One step of a unit's rolling update."""

    at_once: tuple[K, ...] = ()
    """Old members that do not serve."""
    replace: K | None = None
    """The serving old member to replace now (None: none may go yet, or none is left)."""
    old: int = 0
    """Live members on an older template before this step (0 and none `going`: the unit is updated)."""
    going: int = 0
    """Members being deleted: an update is not over while one is (a scaling-group replica being recreated still
    runs its old pods until its PodCliques are gone)."""
    waiting: str | None = None
    """Why the next serving member waits, when it does."""


def plan_replacement(
    members: Sequence[Member[K]], *, turn: bool, noun: str, shortfall: str | None = None
) -> Replacement[K]:
    """The step for a unit whose members are `members` (going ones included); `turn`: the lane lets it take one
    down; `shortfall`: why members are missing, if they are; `noun` names a member in `waiting`."""
    live = [m for m in members if not m.going]
    old = [m for m in live if m.old]
    at_once = tuple(m.key for m in sorted((m for m in old if not m.serving), key=lambda m: m.order))
    candidates = sorted((m for m in old if m.serving), key=lambda m: m.order)
    going = len(members) - len(live)
    if not turn and old:  # "not serving" is the cache's word, which may lag: nothing goes before the unit's turn
        return Replacement((), None, len(old), going, "another PodClique or scaling group of the replica is updating")
    if not candidates:
        return Replacement(at_once, None, len(old), going=going)
    chosen = candidates[0]
    waiting: str | None = None
    if at_once or len(live) < len(members):
        waiting = f"{noun}s of the unit are still being replaced"
    elif shortfall is not None:
        waiting = shortfall
    elif not all(m.whole for m in live if m is not chosen):
        waiting = f"a {noun} of the unit is not whole"
    if waiting is not None:
        return Replacement(at_once, None, len(old), going, waiting)
    return Replacement((), chosen.key, len(old), going=going)
