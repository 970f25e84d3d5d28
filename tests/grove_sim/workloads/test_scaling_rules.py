"""The HPA's behavior rules, pure: upstream's default policies, selectPolicy, rate limits over their periods,
stabilisation windows, and which condition explains the result."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_sim.controllers.workloads.scaling_rules import ScaleEvent, apply_behavior


def _limit(
    current: int,
    desired: int,
    behavior: dict[str, Any] | None = None,
    *,
    maximum: int = 100,
    events: list[ScaleEvent] | None = None,
) -> tuple[int, str]:
    result = apply_behavior(
        current=current, desired=desired, minimum=1, maximum=maximum, behavior=behavior, now=1000.0, history=[],
        events=events or [],
    )  # fmt: skip
    return result.replicas, result.limit_reason


def test_default_scale_up_is_four_pods_or_double_per_fifteen_seconds() -> None:
    """From 1 the defaults allow max(1 + 4, 2 * 1) = 5; from 10, max(14, 20) = 20; within range nothing limits."""
    assert _limit(1, 50) == (5, "ScaleUpLimit")
    assert _limit(10, 50) == (20, "ScaleUpLimit")
    assert _limit(3, 4) == (4, "DesiredWithinRange")
    assert _limit(3, 50, maximum=6) == (6, "TooManyReplicas")


def test_select_policy_and_disabled() -> None:
    """selectPolicy Min takes the smaller limit; Disabled keeps the current count."""
    up_min = {"scaleUp": {"selectPolicy": "Min"}}
    assert _limit(1, 50, up_min) == (2, "ScaleUpLimit")
    assert _limit(5, 50, {"scaleUp": {"selectPolicy": "Disabled"}})[0] == 5
    assert _limit(5, 1, {"scaleDown": {"selectPolicy": "Disabled", "stabilizationWindowSeconds": 0}})[0] == 5


def test_rate_counts_the_changes_inside_the_period() -> None:
    """A scale-up of 4 pods 10 s ago leaves no room under a 4-pods-per-15 s policy; 20 s ago it is outside."""
    behavior = {"scaleUp": {"policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]}}
    assert _limit(5, 20, behavior, events=[ScaleEvent(990.0, 4)]) == (5, "ScaleUpLimit")
    assert _limit(5, 20, behavior, events=[ScaleEvent(980.0, 4)]) == (9, "ScaleUpLimit")
    down = {
        "scaleDown": {
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}],
        }
    }
    assert _limit(10, 1, down) == (5, "ScaleDownLimit")
    assert _limit(8, 1, down, events=[ScaleEvent(950.0, -2)]) == (5, "ScaleDownLimit")


def test_down_window_keeps_the_highest_recent_recommendation() -> None:
    """With the default five-minute window a recommendation of 7 a minute ago holds a drop to 2 at 7."""
    result = apply_behavior(
        current=8, desired=2, minimum=1, maximum=10, behavior=None, now=1000.0, history=[(940.0, 7)], events=[]
    )
    assert (result.replicas, result.able_reason) == (7, "ScaleDownStabilized")
    later = apply_behavior(
        current=8, desired=2, minimum=1, maximum=10, behavior=None, now=1301.0, history=[(940.0, 7)], events=[]
    )
    assert later.replicas == 2


@given(
    current=st.integers(1, 50),
    desired=st.integers(0, 200),
    minimum=st.integers(1, 10),
    span=st.integers(0, 50),
    history=st.lists(st.tuples(st.floats(0, 1000), st.integers(0, 200)), max_size=8),
)
def test_result_stays_within_bounds_and_moves_towards_desired(
    current: int, desired: int, minimum: int, span: int, history: list[tuple[float, int]]
) -> None:
    """Whatever the history, the result lies in [minReplicas, maxReplicas] and never overshoots the desired count
    when both are within range."""
    maximum = minimum + span
    result = apply_behavior(
        current=current, desired=desired, minimum=minimum, maximum=maximum, behavior=None, now=1000.0,
        history=history, events=[],
    )  # fmt: skip
    assert minimum <= result.replicas <= maximum
    if minimum <= current <= maximum:
        low, high = sorted((current, max(min(desired, maximum), minimum)))
        assert low <= result.replicas <= high
