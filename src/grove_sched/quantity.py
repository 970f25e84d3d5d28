"""Kubernetes quantities as the bounded integers the placement model counts in, whatever the object says.

Why bounded: every amount ends in an int64 numpy column and, from there, in CP-SAT coefficients, and sums of them
(a node's bound pods, a gang's demand) must stay exact. A node reporting `nvidia.com/gpu: "1e30"` or
`memory: 16Ei` once made every scheduling cycle fail with OverflowError. So an amount is read exactly (Decimal,
no float), rounded in the safe direction (demand up, capacity down: a fraction never over-commits a node), and
bounded by `MAX_QUANTITY`: anything larger comes back as `BEYOND` (= `MAX_QUANTITY + 1`), "more than any node
can hold". What each reader does with that:

* a node whose allocatable is malformed, negative or beyond the bound is set aside (`node_capacity` raises; the
  scheduler cache keeps the node out of every snapshot and records a Warning Event on it), so no node ever
  offers `BEYOND`;
* a pod to place that asks `BEYOND` fits no node: UnschedulableAndUnresolvable; a malformed or negative request
  makes its gang malformed (`pod_demand` raises);
* a pod already bound is charged conservatively (`bound_demand`): a malformed or out-of-range request counts as
  `BEYOND` (its node is full for that resource), a negative one as 0, never as capacity given back.

`MAX_QUANTITY` = 2^50: 1 PiB of memory or storage, about 10^12 CPU cores in millicores, 10^15 devices; far above
any real node, while 2^13 pods at the bound still sum exactly in int64 and `Snapshot` saturates beyond that.
"""

from __future__ import annotations

import decimal
import functools
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from grove_sched.model import CPU, PODS

__all__ = [
    "BEYOND",
    "MAX_QUANTITY",
    "bound_demand",
    "node_capacity",
    "parse_quantity",
    "pod_demand",
]

MAX_QUANTITY = 2**50
"""The largest amount of one resource the scheduler accounts exactly (cpu in millicores, the rest in units)."""
BEYOND = MAX_QUANTITY + 1
"""What every amount above `MAX_QUANTITY` reads as: more than any node the scheduler uses can offer."""

_SUFFIXES: Mapping[str, Decimal] = MappingProxyType(
    {
        "n": Decimal("1e-9"),
        "u": Decimal("1e-6"),
        "m": Decimal("1e-3"),
        "": Decimal(1),
        "k": Decimal(10**3),
        "M": Decimal(10**6),
        "G": Decimal(10**9),
        "T": Decimal(10**12),
        "P": Decimal(10**15),
        "E": Decimal(10**18),
        "Ki": Decimal(2**10),
        "Mi": Decimal(2**20),
        "Gi": Decimal(2**30),
        "Ti": Decimal(2**40),
        "Pi": Decimal(2**50),
        "Ei": Decimal(2**60),
    }
)
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+))?([numkMGTPE]i?|)$")
_EXPONENT_LIMIT = 10**6  # |exponent| above this is astronomically large or small whatever the mantissa
_LIMIT = Decimal(BEYOND) * 10**12  # above this, no suffix or unit can bring a number back under the bound
_CONTEXTS = {
    rounding: decimal.Context(
        prec=60,
        rounding=rounding,
        Emax=decimal.MAX_EMAX,
        Emin=decimal.MIN_EMIN,
        traps=[decimal.InvalidOperation],
    )
    for rounding in (decimal.ROUND_CEILING, decimal.ROUND_FLOOR)
}


def parse_quantity(value: object, resource: str, *, capacity: bool = False) -> int:
    """A quantity as an integer (millicores for cpu, whole units otherwise), rounded up, or down for `capacity`,
    and bounded to [-BEYOND, BEYOND]; raises ValueError naming the resource for text that is no quantity.

    Memoised by text (a bounded cache): every pod event of a gang's pods reads the same few quantities ("1",
    "4Gi", "8"), and parsing them with Decimal arithmetic was a tenth of the scheduler's CPU per bound pod."""
    text = str(value).strip()
    try:
        return _parsed(text, resource == CPU, capacity)
    except ValueError:
        raise ValueError(f"invalid quantity {text!r} for {resource}") from None


@functools.lru_cache(maxsize=4096)
def _parsed(text: str, cpu: bool, capacity: bool) -> int:
    """`parse_quantity` of stripped text; ValueError (without the resource name) for text that is no quantity."""
    match = _QUANTITY.match(text)
    if match is None or (match.group(3).endswith("i") and match.group(3)[:-1] in ("n", "u", "m", "")):
        raise ValueError(text)
    mantissa_text, exponent_text, suffix = match.groups()
    try:
        mantissa = Decimal(mantissa_text)
    except decimal.InvalidOperation:
        raise ValueError(text) from None
    if mantissa.is_zero():
        return 0
    ctx = _CONTEXTS[decimal.ROUND_FLOOR if capacity else decimal.ROUND_CEILING]
    exponent = int(exponent_text) if exponent_text and len(exponent_text) <= 8 else 0
    if exponent_text and len(exponent_text) > 8:  # more digits than any exponent worth computing with
        exponent = -_EXPONENT_LIMIT if exponent_text.startswith("-") else _EXPONENT_LIMIT
    number = mantissa.scaleb(max(-_EXPONENT_LIMIT, min(exponent, _EXPONENT_LIMIT)), ctx)
    if number.copy_abs() > _LIMIT:
        return BEYOND if number > 0 else -BEYOND
    amount = ctx.multiply(number, _SUFFIXES[suffix] * (1000 if cpu else 1))
    if amount.copy_abs() > MAX_QUANTITY:
        return BEYOND if amount > 0 else -BEYOND
    return int(amount.to_integral_value(rounding=ctx.rounding, context=ctx))


def _strict(resource: str, value: object) -> int:
    amount = parse_quantity(value, resource)
    if amount < 0:
        raise ValueError(f"negative quantity {value!r} for {resource}")
    return amount


def _conservative(resource: str, value: object) -> int:
    try:
        return max(parse_quantity(value, resource), 0)
    except ValueError:
        return BEYOND


def _requests(pod: Mapping[str, Any], read: Callable[[str, object], int]) -> dict[str, int]:
    """Effective requests: max(sum of containers, each init container) plus overhead (the kube-scheduler rule),
    each amount read by `read` and sums bounded by `BEYOND`."""
    spec = pod.get("spec") or {}

    def amounts(raw: object) -> dict[str, int]:
        return {str(name): read(str(name), value) for name, value in _mapping(raw).items()}

    def container(raw: object) -> dict[str, int]:
        resources = _mapping(_mapping(raw).get("resources"))
        merged = dict(_mapping(resources.get("limits")))  # limits stand in for missing requests, as defaulted
        merged.update(_mapping(resources.get("requests")))
        return amounts(merged)

    total: dict[str, int] = {}
    for raw in spec.get("containers") or ():
        for name, amount in container(raw).items():
            total[name] = min(total.get(name, 0) + amount, BEYOND)
    for raw in spec.get("initContainers") or ():
        for name, amount in container(raw).items():
            total[name] = max(total.get(name, 0), amount)
    for name, amount in amounts(spec.get("overhead")).items():
        total[name] = min(total.get(name, 0) + amount, BEYOND)
    total.pop(PODS, None)
    return {name: amount for name, amount in sorted(total.items()) if amount}


def _mapping(raw: object) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"expected a mapping, got {type(raw).__name__}")
    return raw


def pod_demand(pod: Mapping[str, Any]) -> dict[str, int]:
    """Requests of a pod to place; raises ValueError for a malformed or negative quantity."""
    return _requests(pod, _strict)


def bound_demand(pod: Mapping[str, Any]) -> dict[str, int]:
    """Requests of a pod already on a node, never understated: what cannot be read counts as `BEYOND`."""
    try:
        return _requests(pod, _conservative)
    except (ValueError, TypeError, AttributeError):
        return {}


def node_capacity(raw: object) -> dict[str, int]:
    """A node's allocatable, rounded down; raises ValueError for a quantity that is malformed, negative or beyond
    `MAX_QUANTITY` (the node is then set aside)."""
    capacity: dict[str, int] = {}
    for name, value in _mapping(raw).items():
        amount = parse_quantity(value, str(name), capacity=True)
        if not 0 <= amount <= MAX_QUANTITY:
            raise ValueError(f"allocatable {name}={value} is outside [0, {MAX_QUANTITY}]")
        capacity[str(name)] = amount
    return capacity
