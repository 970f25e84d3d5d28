"""The HPA's ``behavior``, pure: stabilisation windows and scaling policies (``normalizeDesiredReplicasWithBehaviors``
of kube-controller-manager's ``podautoscaler``), with upstream's defaults when a direction sets none.

Times are seconds on the controller's clock (a fake clock in tests). Returns the replica count and the
(condition, reason, message) explaining what limited it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Limited", "ScaleEvent", "apply_behavior"]

_DEFAULT_UP: Final[dict[str, Any]] = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_DEFAULT_DOWN: Final[dict[str, Any]] = {
    "stabilizationWindowSeconds": 300,
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


@dataclass(frozen=True, slots=True)
class ScaleEvent:
    """One rescale the controller made: when, and by how many replicas (positive up, negative down)."""

    at: float
    change: int


@dataclass(frozen=True, slots=True)
class Limited:
    """The normalised replica count and why: the AbleToScale reason/message and the ScalingLimited one."""

    replicas: int
    able_reason: str
    able_message: str
    limited: bool
    limit_reason: str
    limit_message: str


def _rules(behavior: dict[str, Any] | None, direction: str) -> dict[str, Any]:
    defaults = _DEFAULT_UP if direction == "scaleUp" else _DEFAULT_DOWN
    given = (behavior or {}).get(direction) or {}
    return {**defaults, **{k: v for k, v in given.items() if v is not None}}


def _stabilise(
    current: int, desired: int, now: float, history: Sequence[tuple[float, int]], up_window: float, down_window: float
) -> int:
    up, down = desired, desired
    for at, recommendation in history:
        if at > now - up_window:
            up = min(up, recommendation)
        if at > now - down_window:
            down = max(down, recommendation)
    return min(max(current, up), down)


def _limit(current: int, events: Sequence[ScaleEvent], now: float, rules: dict[str, Any], up: bool) -> int:
    """The furthest the replicas may go in one direction under the policies (``calculateScale*LimitWithBehaviors``)."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    limits = []
    for policy in rules.get("policies") or []:
        period = float(policy.get("periodSeconds") or 0)
        moved = sum(e.change for e in events if e.at > now - period and (e.change > 0) == up)
        start = current - moved
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            limits.append(start + value if up else start - value)
        else:
            limits.append(math.ceil(start * (1 + value / 100)) if up else math.floor(start * (1 - value / 100)))
    if not limits:
        return current
    most = max(limits) if up else min(limits)
    least = min(limits) if up else max(limits)
    return most if select == "Max" else least


def apply_behavior(
    *,
    current: int,
    desired: int,
    minimum: int,
    maximum: int,
    behavior: dict[str, Any] | None,
    now: float,
    history: Sequence[tuple[float, int]],
    events: Sequence[ScaleEvent],
) -> Limited:
    """Stabilise ``desired`` over the recommendation ``history``, then bound it by the rate policies and by
    ``minReplicas``/``maxReplicas``."""
    up_rules, down_rules = _rules(behavior, "scaleUp"), _rules(behavior, "scaleDown")
    stable = _stabilise(
        current,
        desired,
        now,
        history,
        float(up_rules.get("stabilizationWindowSeconds") or 0),
        float(down_rules.get("stabilizationWindowSeconds") or 0),
    )
    if stable == desired:
        able = ("ReadyForNewScale", "recommended size matches current size")
    elif stable < desired:
        able = (
            "ScaleUpStabilized",
            "recent recommendations were lower than current one, applying the lowest recent recommendation",
        )
    else:
        able = (
            "ScaleDownStabilized",
            "recent recommendations were higher than current one, applying the highest recent recommendation",
        )
    replicas = stable
    limit = ("DesiredWithinRange", "the desired count is within the acceptable range")
    limited = False
    if stable > current:
        ceiling = min(_limit(current, events, now, up_rules, up=True), maximum)
        if stable > ceiling:
            replicas, limited = ceiling, True
            limit = (
                ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
                if ceiling == maximum
                else ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
            )
    elif stable < current:
        floor = max(_limit(current, events, now, down_rules, up=False), minimum)
        if stable < floor:
            replicas, limited = floor, True
            limit = (
                ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
                if floor == minimum
                else ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")
            )
    if replicas > maximum:
        replicas, limited = maximum, True
        limit = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
    if replicas < minimum:
        replicas, limited = minimum, True
        limit = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
    return Limited(replicas, able[0], able[1], limited, limit[0], limit[1])
