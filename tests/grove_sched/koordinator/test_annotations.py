"""Reading the Koordinator annotations: durations, zones, and which object's annotation counts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_sched.koordinator import (
    ANNOTATION_GANG_TIMEOUT,
    ANNOTATION_RESERVATION_REF,
    ANNOTATION_WAITING_TIME,
    ANNOTATION_ZONE,
    gang_hints,
    parse_duration,
    parse_zone,
)


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("30s", 30.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("250ms", 0.25), ("45", 45.0), (" 2s ", 2.0)],
)
def test_durations_are_read_as_go_writes_them(raw: str, seconds: float) -> None:
    assert parse_duration(raw) == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["", "soon", "30 s", "-5s", "0", "1d", "s30", "inf", "nan"])
def test_what_is_not_a_positive_duration_is_refused(raw: str) -> None:
    assert parse_duration(raw) is None


@given(st.integers(0, 99), st.integers(0, 59), st.integers(1, 59))
def test_a_composite_duration_is_the_sum_of_its_parts(h: int, m: int, s: int) -> None:
    assert parse_duration(f"{h}h{m}m{s}s") == pytest.approx(3600 * h + 60 * m + s)


def test_zones() -> None:
    assert parse_zone("topology.kubernetes.io/rack=rack-1") == ("topology.kubernetes.io/rack", "rack-1")
    assert parse_zone("rack-1") == (None, "rack-1")
    assert parse_zone("") is None
    assert parse_zone("key=") is None


def _obj(name: str, **annotations: str) -> dict[str, object]:
    return {"metadata": {"name": name, "annotations": annotations}}


def test_the_podgang_wins_then_the_first_pod_by_name() -> None:
    """The PodCliqueSet's annotation (copied onto the PodGang) wins; else the first pod by name that has one."""
    podgang = _obj("g", **{ANNOTATION_GANG_TIMEOUT: "30s"})
    pods = [
        _obj("b", **{ANNOTATION_GANG_TIMEOUT: "5s", ANNOTATION_ZONE: "rack-2"}),
        _obj("a", **{ANNOTATION_ZONE: "r1"}),
    ]
    hints = gang_hints(podgang, pods)
    assert hints.gang_timeout == 30.0
    assert hints.zone == (None, "r1")
    assert hints.reservation_ref is None
    assert gang_hints(None, pods).gang_timeout == 5.0


def test_koordinators_own_waiting_time_and_a_reservation_ref() -> None:
    hints = gang_hints(_obj("g", **{ANNOTATION_WAITING_TIME: "2m", ANNOTATION_RESERVATION_REF: " r1 "}), [])
    assert (hints.gang_timeout, hints.reservation_ref) == (120.0, "r1")


def test_an_unreadable_value_is_ignored_and_named() -> None:
    hints = gang_hints(_obj("g", **{ANNOTATION_GANG_TIMEOUT: "soon", ANNOTATION_ZONE: "="}), [])
    assert hints.gang_timeout is None
    assert hints.zone is None
    assert len(hints.problems) == 2
