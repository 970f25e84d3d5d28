"""Fair share: how much of each resource every queue of a tree deserves now, given what each one asks.

KAI's division, per resource and level by level from the roots down (the roots share the cluster's capacity; the
children of a queue share what their parent got):

1. **demand**: a leaf asks what its bound and pending gangs request; a parent what its children ask; either is cut
   at the queue's `limit` (a hard cap, so a queue's share never exceeds it);
2. **quota**: each queue first gets min(quota, demand) (quota -1: its whole demand); when the siblings' quotas
   together exceed what they share (over-committed quotas), each gets the same fraction of its quota;
3. **over quota**: what is left goes to the queues still asking more, highest `priority` first (siblings of a
   higher priority are served whole before a lower one gets anything, as KAI orders over-quota division), and
   within one priority in proportion to `overQuotaWeight`, by water filling: a queue whose weighted portion exceeds
   what it still asks takes only that, and the rest is divided again among the others; queues of weight 0 share
   (equally) only what no weighted queue wants.

The result is exact (floats), never above a queue's demand or limit, and the siblings' shares never sum above what
they divide. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from grove_sched.tenancy.spec import RESOURCES, QueueSpec, Vector, zero

__all__ = ["children_of", "effective_demand", "fair_shares", "water_fill"]

_EPS = 1e-9


def children_of(queues: Mapping[str, QueueSpec]) -> dict[str | None, list[str]]:
    """Parent name (None: roots) → child names, sorted; a queue whose parent is unknown or in a cycle is a root."""
    roots_of: dict[str | None, list[str]] = {}
    for name, spec in queues.items():
        parent = spec.parent if spec.parent in queues and not _cyclic(queues, name) else None
        roots_of.setdefault(parent, []).append(name)
    for names in roots_of.values():
        names.sort()
    return roots_of


def _cyclic(queues: Mapping[str, QueueSpec], name: str) -> bool:
    seen = {name}
    parent = queues[name].parent
    while parent is not None and parent in queues:
        if parent in seen:
            return True
        seen.add(parent)
        parent = queues[parent].parent
    return False


def effective_demand(
    queues: Mapping[str, QueueSpec], demand: Mapping[str, Vector], tree: Mapping[str | None, list[str]] | None = None
) -> dict[str, Vector]:
    """Each queue's demand: its own (leaf gangs) plus its children's, cut at its limit, per resource."""
    tree = tree if tree is not None else children_of(queues)
    out: dict[str, Vector] = {}

    def visit(name: str) -> Vector:
        own = demand.get(name, zero())
        total = list(own)
        for child in tree.get(name, ()):
            sub = visit(child)
            for r in range(len(RESOURCES)):
                total[r] += sub[r]
        shares = queues[name].shares
        capped = tuple(min(total[r], shares[r].cap()) for r in range(len(RESOURCES)))
        out[name] = (capped[0], capped[1], capped[2])
        return out[name]

    for root in tree.get(None, ()):
        visit(root)
    return out


def water_fill(amount: float, wants: Mapping[str, float], weights: Mapping[str, float]) -> dict[str, float]:
    """Divide `amount` among `wants` by weight, never giving anyone more than it wants (weight 0: only leftovers,
    equally)."""
    given = dict.fromkeys(wants, 0.0)
    left = amount
    for weighted in (True, False):
        active = [n for n in wants if (weights.get(n, 0.0) > 0) == weighted and wants[n] > _EPS]
        while left > _EPS and active:
            total = sum(weights[n] if weights.get(n, 0.0) > 0 else 1.0 for n in active)
            portion = {n: left * (weights[n] if weights.get(n, 0.0) > 0 else 1.0) / total for n in active}
            sated = [n for n in active if wants[n] - given[n] <= portion[n] + _EPS]
            if not sated:
                for n in active:
                    given[n] += portion[n]
                left = 0.0
                break
            for n in sated:
                left -= wants[n] - given[n]
                given[n] = wants[n]
            active = [n for n in active if n not in sated]
    return given


def _divide(capacity: float, names: Iterable[str], quota: Mapping[str, float], want: Mapping[str, float],
            weight: Mapping[str, float], priority: Mapping[str, int]) -> dict[str, float]:  # fmt: skip
    """One resource among siblings: quotas first (scaled down when over-committed), then water filling, one
    priority level at a time, highest first."""
    names = list(names)
    guaranteed = {n: min(want[n], want[n] if quota[n] < 0 else quota[n]) for n in names}
    total = sum(guaranteed.values())
    if total > capacity:
        scale = capacity / total if total > 0 else 0.0
        return {n: guaranteed[n] * scale for n in names}
    out = dict(guaranteed)
    left = capacity - total
    for level in sorted({priority[n] for n in names}, reverse=True):
        tier = [n for n in names if priority[n] == level]
        rest = water_fill(left, {n: want[n] - guaranteed[n] for n in tier}, weight)
        for n in tier:
            out[n] += rest[n]
            left -= rest[n]
    return out


def fair_shares(queues: Mapping[str, QueueSpec], demand: Mapping[str, Vector], capacity: Vector) -> dict[str, Vector]:
    """Every queue's fair share per resource (see the module docstring); `demand` is each queue's own ask."""
    tree = children_of(queues)
    asks = effective_demand(queues, demand, tree)
    out: dict[str, Vector] = {}

    def share(names: list[str], available: Vector) -> None:
        if not names:
            return
        per: list[dict[str, float]] = []
        for r in range(len(RESOURCES)):
            cap = available[r] if math.isfinite(available[r]) else sum(asks[n][r] for n in names)
            per.append(
                _divide(
                    cap,
                    names,
                    {n: queues[n].shares[r].quota for n in names},
                    {n: asks[n][r] for n in names},
                    {n: queues[n].shares[r].weight for n in names},
                    {n: queues[n].priority for n in names},
                )
            )
        for n in names:
            out[n] = (per[0][n], per[1][n], per[2][n])
            share(tree.get(n, []), out[n])

    share(tree.get(None, []), capacity)
    return out
