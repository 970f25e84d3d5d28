"""metav1.Condition bookkeeping shared by the status computations.

A condition's `lastTransitionTime` must only move when its status flips: gang termination measures
`terminationDelay` from it. Centralising the merge keeps that rule in one place.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from grove_api import Condition, format_time

__all__ = ["condition_status", "find_condition", "set_condition"]


def find_condition(conditions: Iterable[Condition] | None, type_: str) -> Condition | None:
    """The condition of type `type_`, if present."""
    return next((c for c in conditions or () if c.type == type_), None)


def condition_status(conditions: Iterable[Condition] | None, type_: str) -> str | None:
    """The status string of a condition, or None when absent."""
    found = find_condition(conditions, type_)
    return found.status if found is not None else None


def set_condition(
    conditions: list[dict[str, Any]],
    previous: Iterable[Condition] | None,
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
    observed_generation: int | None = None,
) -> None:
    """Append the condition to `conditions`, keeping the previous `lastTransitionTime` if the status is unchanged."""
    old = find_condition(previous, type_)
    transition = old.last_transition_time if old is not None and old.status == status else now
    entry: dict[str, Any] = {
        "type": type_,
        "status": status,
        "lastTransitionTime": format_time(transition),
        "reason": reason,
        "message": message,
    }
    if observed_generation is not None:
        entry["observedGeneration"] = observed_generation
    conditions.append(entry)
