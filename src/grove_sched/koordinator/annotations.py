"""The Koordinator annotations grove-scheduler honours, read off a gang's PodGang and pods.

Why here and pure: workloads written for koord-scheduler carry their scheduling wishes as annotations on the
PodCliqueSet (which grove-operator copies onto each PodGang) or on the pod template (copied onto every pod). One
reader with one precedence rule (the PodGang's annotation, else the first pod by name that has it) keeps the
scheduling cycle free of string parsing, and lets the rules be tested without a cluster.

* `scheduling.koordinator.sh/gang-timeout` (also Koordinator's own `gang.scheduling.koordinator.sh/waiting-time`):
  how long a ready gang may stay unplaced, a Go duration (`30s`, `1m30s`, `1h`) or a number of seconds.
* `scheduling.koordinator.sh/network-topology-zone`: the gang's preferred topology domain, `KEY=VALUE` (a node label,
  e.g. `topology.kubernetes.io/rack=rack-1`) or a bare `VALUE` looked up among the gang's topology levels.
* `scheduling.koordinator.sh/reservation-ref`: the name of the Reservation the gang should be placed into.

A value that cannot be read is ignored (the gang is scheduled as without it) and named in `GangHints.problems`,
which the scheduler logs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ANNOTATION_GANG_TIMEOUT",
    "ANNOTATION_RESERVATION_REF",
    "ANNOTATION_WAITING_TIME",
    "ANNOTATION_ZONE",
    "GangHints",
    "gang_hints",
    "parse_duration",
    "parse_zone",
]

Obj = Mapping[str, Any]
ANNOTATION_GANG_TIMEOUT = "scheduling.koordinator.sh/gang-timeout"
ANNOTATION_WAITING_TIME = "gang.scheduling.koordinator.sh/waiting-time"
ANNOTATION_ZONE = "scheduling.koordinator.sh/network-topology-zone"
ANNOTATION_RESERVATION_REF = "scheduling.koordinator.sh/reservation-ref"
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(raw: str) -> float | None:
    """Seconds of a Go duration (`90s`, `1m30s`, `1.5h`) or a plain number of seconds; None if neither or <= 0."""
    text = raw.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = list(_PART.finditer(text))
        if not parts or "".join(m.group(0) for m in parts) != text:
            return None
        seconds = sum(float(m.group(1)) * _UNITS[m.group(2)] for m in parts)
    return seconds if seconds > 0 and seconds != float("inf") else None


def parse_zone(raw: str) -> tuple[str | None, str] | None:
    """`KEY=VALUE` → (key, value); a bare `VALUE` → (None, value); None when empty."""
    key, sep, value = raw.strip().partition("=")
    if not sep:
        return (None, key) if key else None
    return (key.strip(), value.strip()) if key.strip() and value.strip() else None


@dataclass(frozen=True, slots=True)
class GangHints:
    """What a gang's Koordinator annotations ask for; None = not asked."""

    gang_timeout: float | None = None
    zone: tuple[str | None, str] | None = None
    reservation_ref: str | None = None
    problems: tuple[str, ...] = ()


_NONE = GangHints()


def _annotations(obj: Obj | None) -> Mapping[str, str]:
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def _find(sources: Sequence[Mapping[str, str]], *keys: str) -> tuple[str, str] | None:
    """(annotation key, value) from the first of `sources` (annotation maps) that carries one of `keys`."""
    for found in sources:
        for key in keys:
            if key in found:
                return key, str(found[key])
    return None


def gang_hints(podgang: Obj | None, pods: Iterable[Obj]) -> GangHints:
    """The hints of a gang from its PodGang (None for a gang of one) and its pods."""
    annotated = [p for p in pods if _annotations(p)]
    annotated.sort(key=lambda p: str((p.get("metadata") or {}).get("name", "")))
    members = [_annotations(podgang), *(_annotations(p) for p in annotated)]
    if not any(members):
        return _NONE
    problems: list[str] = []
    timeout = None
    found = _find(members, ANNOTATION_GANG_TIMEOUT, ANNOTATION_WAITING_TIME)
    if found is not None:
        timeout = parse_duration(found[1])
        if timeout is None:
            problems.append(f"{found[0]}: {found[1]!r} is not a duration such as 30s or 1m30s")
    zone = None
    found = _find(members, ANNOTATION_ZONE)
    if found is not None:
        zone = parse_zone(found[1])
        if zone is None:
            problems.append(f"{found[0]}: {found[1]!r} is neither KEY=VALUE nor a domain name")
    found = _find(members, ANNOTATION_RESERVATION_REF)
    ref = found[1].strip() or None if found is not None else None
    return GangHints(timeout, zone, ref, tuple(problems))
