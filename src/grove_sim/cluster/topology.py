"""Topology domains: parsing ``"zone=1,block=2,rack=4"`` and dealing nodes over the domains it describes.

Levels are listed outermost first and each count is the number of domains per parent domain, so that example makes
1 zone, 2 blocks and 2 x 4 = 8 racks. Nodes are dealt contiguously and evenly over the innermost domains (sizes
differ by at most one). Domain values are ``<level>-<n>`` with ``n`` the domain's index across the whole cluster,
zero-padded to the width of the largest index at that level (8 racks: ``rack-0`` … ``rack-7``; 40 blocks:
``block-00`` … ``block-39``), so a value never repeats under another parent. Label keys are ``TOPOLOGY_LABELS``;
``kubernetes.io/hostname`` (the host level) is always the node name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

__all__ = [
    "TOPOLOGY_LABELS",
    "ClusterShapeError",
    "Topology",
    "domain_labels",
    "domain_totals",
    "index_width",
    "parse_topology",
]

TOPOLOGY_LABELS: Final[dict[str, str]] = {
    "region": "topology.kubernetes.io/region",
    "zone": "topology.kubernetes.io/zone",
    "datacenter": "topology.kubernetes.io/datacenter",
    "block": "topology.kubernetes.io/block",
    "rack": "topology.kubernetes.io/rack",
}

_LEVEL_ORDER: Final = list(TOPOLOGY_LABELS)


class ClusterShapeError(ValueError):
    """An invalid topology string, shape file or trace (reported to the ``grove-sim up`` user as is)."""


Topology = tuple[tuple[str, int], ...]


def parse_topology(text: str) -> Topology:
    """Parse ``"zone=1,block=2,rack=4"`` into ``(("zone", 1), ("block", 2), ("rack", 4))``, checking level order."""
    levels: list[tuple[str, int]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        level, sep, count = part.partition("=")
        level = level.strip()
        if level not in TOPOLOGY_LABELS:
            raise ClusterShapeError(f"unknown topology level {level!r}; known levels: {', '.join(_LEVEL_ORDER)}")
        if not sep or not count.strip().isdigit() or int(count) < 1:
            raise ClusterShapeError(f"topology level {level!r} needs a positive count, e.g. {level}=2")
        if levels and _LEVEL_ORDER.index(level) <= _LEVEL_ORDER.index(levels[-1][0]):
            raise ClusterShapeError(f"topology levels must be unique and listed outermost first: {text!r}")
        levels.append((level, int(count)))
    return tuple(levels)


def domain_labels(
    count: int, topology: Topology, offsets: Mapping[str, int], widths: Mapping[str, int]
) -> list[dict[str, str]]:
    """Topology labels for ``count`` consecutive nodes dealt evenly over the innermost domains."""
    if not topology:
        return [{} for _ in range(count)]
    leaves = math.prod(c for _, c in topology)
    spans = [math.prod(c for _, c in topology[i + 1 :]) for i in range(len(topology))]
    labels: list[dict[str, str]] = []
    for index in range(count):
        leaf = index * leaves // count
        labels.append(
            {
                TOPOLOGY_LABELS[level]: f"{level}-{offsets.get(level, 0) + leaf // span:0{widths[level]}d}"
                for (level, _), span in zip(topology, spans, strict=True)
            }
        )
    return labels


def domain_totals(topology: Topology) -> dict[str, int]:
    """How many domains each level of a topology creates in total."""
    totals: dict[str, int] = {}
    product = 1
    for level, count in topology:
        product *= count
        totals[level] = product
    return totals


def index_width(total: int) -> int:
    """Digits needed to print indices 0 .. total-1."""
    return len(str(max(total - 1, 0)))
