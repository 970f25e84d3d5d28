"""Quantities as bounded integers: exact, rounded the safe way, never beyond `MAX_QUANTITY`, never raising but for
text that is no quantity."""

from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_sched import quantity
from grove_sched.model import CPU
from grove_sched.quantity import BEYOND, MAX_QUANTITY, bound_demand, node_capacity, parse_quantity, pod_demand


def test_pod_demand_follows_kubernetes_rules() -> None:
    """Requests are the sum of containers, at least each init container, plus overhead; limits default requests."""
    p = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"resources": {"limits": {"cpu": "1", "nvidia.com/gpu": "2"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "4"}}}],
            "overhead": {"cpu": "100m"},
        }
    }
    assert pod_demand(p) == {"cpu": 4100, "memory": 2**30, "nvidia.com/gpu": 2}


@pytest.mark.parametrize(
    ("text", "resource", "value"),
    [
        pytest.param("250m", "cpu", 250, id="millicores"),
        pytest.param("2", "cpu", 2000, id="cores"),
        pytest.param("1.5Gi", "memory", 3 * 2**29, id="binary"),
        pytest.param("1k", "memory", 1000, id="decimal"),
        pytest.param("1e3", "memory", 1000, id="exponent"),
        pytest.param("100m", "memory", 1, id="fraction-rounds-up"),
        pytest.param("1e30", "nvidia.com/gpu", BEYOND, id="huge"),
        pytest.param("16Ei", "memory", BEYOND, id="exbibytes"),
        pytest.param("1e999999999999999999999", "memory", BEYOND, id="exponent-beyond-decimal"),
        pytest.param("-1e30", "memory", -BEYOND, id="huge-negative"),
        pytest.param("1e-999999999999999999999", "memory", 1, id="tiny-rounds-up"),
        pytest.param(str(MAX_QUANTITY), "memory", MAX_QUANTITY, id="at-the-bound"),
        pytest.param(str(MAX_QUANTITY + 1), "memory", BEYOND, id="past-the-bound"),
        pytest.param(1e30, "memory", BEYOND, id="json-float"),
        pytest.param(8, "nvidia.com/gpu", 8, id="json-int"),
    ],
)
def test_parse_quantity(text: object, resource: str, value: int) -> None:
    """Quantities parse to millicores (cpu) or whole units rounded up, and saturate at `BEYOND`."""
    assert parse_quantity(text, resource) == value


def test_capacity_rounds_down() -> None:
    """Allocatable rounds down, so a fractional node never offers a unit it does not have."""
    assert parse_quantity("1500m", "memory", capacity=True) == 1
    assert parse_quantity("1500m", "memory") == 2


@pytest.mark.parametrize("text", ["12XB", "", ".", "1.2.3", "nan", "inf", "1e", "0x10", "1Mii", "True", "[1]"])
def test_parse_quantity_rejects_garbage(text: str) -> None:
    """An invalid quantity raises ValueError naming the resource."""
    with pytest.raises(ValueError, match="memory"):
        parse_quantity(text, "memory")


def test_node_capacity_rejects_what_it_cannot_account() -> None:
    """A node's allocatable beyond the bound, negative or malformed raises (the cache then sets the node aside)."""
    assert node_capacity({"nvidia.com/gpu": "8", "memory": "2Ti"}) == {"nvidia.com/gpu": 8, "memory": 2**41}
    for odd in ("1e30", "16Ei", "-1", "lots"):
        with pytest.raises(ValueError, match=r"nvidia\.com/gpu"):
            node_capacity({"nvidia.com/gpu": odd})


def test_bound_demand_never_understates() -> None:
    """A bound pod's unreadable request fills its node (`BEYOND`); a negative one gives nothing back (0)."""
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "lots", "memory": "-1Gi", "x/y": "1e30"}}}]}}
    assert bound_demand(pod) == {"cpu": BEYOND, "x/y": BEYOND}
    with pytest.raises(ValueError, match="cpu"):
        pod_demand(pod)


def test_sums_saturate() -> None:
    """Containers that each ask the bound sum to `BEYOND`, not past it."""
    container = {"resources": {"requests": {"memory": str(MAX_QUANTITY)}}}
    assert pod_demand({"spec": {"containers": [container] * 3}}) == {"memory": BEYOND}


QUANTITY_TEXT = st.one_of(
    st.from_regex(r"\A[+-]?[0-9]{0,30}(\.[0-9]{0,30})?([eE][+-]?[0-9]{1,25})?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?\Z"),
    st.text(max_size=12),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
)


@given(QUANTITY_TEXT, st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.booleans())
def test_parse_quantity_is_bounded_or_rejects(value: object, resource: str, capacity: bool) -> None:
    """Any input either parses into [-BEYOND, BEYOND] or raises ValueError; nothing else escapes."""
    try:
        amount = parse_quantity(value, resource, capacity=capacity)
    except ValueError:
        return
    assert -BEYOND <= amount <= BEYOND


@given(QUANTITY_TEXT, st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.booleans())
def test_a_remembered_quantity_answers_as_a_fresh_parse(value: object, resource: str, capacity: bool) -> None:
    """Parses are remembered by text: asking again, after the same text was asked for another resource and
    rounding, gives what an unremembered parse gives, and a rejection still names the resource asked about."""
    other = "memory" if resource == CPU else CPU
    with contextlib.suppress(ValueError):  # the same text remembered under the other key first
        parse_quantity(value, other, capacity=not capacity)
    try:
        fresh = quantity._parsed.__wrapped__(str(value).strip(), resource == CPU, capacity)
    except ValueError:
        with pytest.raises(ValueError, match=re.escape(resource)):
            parse_quantity(value, resource, capacity=capacity)
        return
    assert parse_quantity(value, resource, capacity=capacity) == fresh
    assert parse_quantity(value, resource, capacity=capacity) == fresh


def test_cpu_and_other_resources_do_not_share_a_remembered_parse() -> None:
    """The same text is millicores for cpu and whole units otherwise, in either order of asking."""
    assert parse_quantity("2", "memory") == 2
    assert parse_quantity("2", "cpu") == 2000
    assert parse_quantity("2", "memory") == 2
    assert parse_quantity("1500m", "cpu", capacity=True) == 1500
    assert parse_quantity("1500m", "memory", capacity=True) == 1
