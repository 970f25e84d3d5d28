"""Koordinator compatibility: the gang annotations of workloads written for koord-scheduler (gang timeout,
preferred network-topology zone, reservation reference), read and applied by grove-scheduler."""

from __future__ import annotations

from grove_sched.koordinator.annotations import (
    ANNOTATION_GANG_TIMEOUT,
    ANNOTATION_RESERVATION_REF,
    ANNOTATION_WAITING_TIME,
    ANNOTATION_ZONE,
    GangHints,
    gang_hints,
    parse_duration,
    parse_zone,
)
from grove_sched.koordinator.timeouts import REASON_GANG_TIMEOUT, GangTimeouts
from grove_sched.koordinator.zone import in_zone, on_nodes, place_preferring_zone, resolve_zone

__all__ = [
    "ANNOTATION_GANG_TIMEOUT",
    "ANNOTATION_RESERVATION_REF",
    "ANNOTATION_WAITING_TIME",
    "ANNOTATION_ZONE",
    "REASON_GANG_TIMEOUT",
    "GangHints",
    "GangTimeouts",
    "gang_hints",
    "in_zone",
    "on_nodes",
    "parse_duration",
    "parse_zone",
    "place_preferring_zone",
    "resolve_zone",
]
