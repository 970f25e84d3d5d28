"""Koordinator's `network-topology-zone`: a preferred topology domain for the whole gang.

Why "pin, then fall back": the wish is a place, not a packing rule. The gang is first placed with every group's
node selector pinned to the domain (so the placement's own machinery, topology constraints included, works inside
it); only when it does not fit there is it placed as if it had no preference. A bare domain value is looked up
among the gang's topology levels, broadest first; a value no level has leaves the gang unpinned.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence

from grove_sched.model import HOSTNAME_KEY, GangRequest, NodeSelectorTerm, Placement, PlacementResult, Requirement
from grove_sched.placement import Snapshot

__all__ = ["in_zone", "on_nodes", "place_preferring_zone", "resolve_zone"]


def resolve_zone(
    zone: tuple[str | None, str], levels: Sequence[str], domain_names: Callable[[str], Sequence[str]]
) -> tuple[str, str] | None:
    """(node label key, value) of the zone: as given, or the first level (broadest first) with a domain `value`."""
    key, value = zone
    if key is not None:
        return key, value
    for level in levels:
        if value in domain_names(level):
            return level, value
    return None


def in_zone(request: GangRequest, key: str, value: str) -> GangRequest:
    """The same gang with every group pinned to the nodes labelled `key=value`."""
    groups = tuple(dataclasses.replace(g, node_selector={**g.node_selector, key: value}) for g in request.groups)
    return dataclasses.replace(request, groups=groups)


def on_nodes(request: GangRequest, nodes: Sequence[str], hostname_key: str = HOSTNAME_KEY) -> GangRequest:
    """The same gang with every group restricted to `nodes` (a reservation's), on top of its own node terms."""
    pin = Requirement(hostname_key, "In", tuple(sorted(set(nodes))))
    groups = tuple(
        dataclasses.replace(
            g,
            required_node_terms=tuple(
                dataclasses.replace(t, match_expressions=(*t.match_expressions, pin))
                for t in (g.required_node_terms or (NodeSelectorTerm(),))
            ),
        )
        for g in request.groups
    )
    return dataclasses.replace(request, groups=groups)


async def place_preferring_zone(
    solve: Callable[[Snapshot, GangRequest], Awaitable[PlacementResult]],
    snapshot: Snapshot,
    request: GangRequest,
    zone: tuple[str | None, str] | None,
    levels: Sequence[str],
    nodes: Sequence[str] = (),
) -> PlacementResult:
    """`solve` the gang on `nodes` (the reservations it owns) when it fits there, else in `zone` when that names a
    domain and the gang fits there, else unpinned."""
    preferred = [on_nodes(request, nodes)] if nodes else []
    resolved = resolve_zone(zone, levels, snapshot.domain_names) if zone is not None else None
    if resolved is not None:
        preferred.append(in_zone(request, *resolved))
    for pinned in preferred:
        result = await solve(snapshot, pinned)
        if isinstance(result, Placement) and result.assignments:
            return result
    return await solve(snapshot, request)
