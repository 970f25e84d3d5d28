"""Timestamps of captured container output: one UTC format, to the microsecond, that sorts as text.

Shared by the kubelet's log rings (which stamp each line) and ``pods/log`` (which turns ``sinceSeconds`` and
``sinceTime`` into the same format to pick lines).
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["stamp"]

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def stamp(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as ``2026-01-02T03:04:05.678901Z``."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime(_FORMAT)
