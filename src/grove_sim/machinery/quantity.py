"""Kubernetes resource quantities (``500m``, ``8Gi``, ``1e3``) as exact numbers, and their canonical text.

The simulated kubelet compares the summed requests of pods on a node with the node's allocatable, so quantities
must compare exactly (``Fraction``), never through floats that could admit a pod one milli-CPU too many. Validation
messages quote quantities the way Go's ``resource.Quantity.String()`` prints them (``0.5`` as ``500m``, ``1.5Gi`` as
``1536Mi``), which ``canonical_quantity`` reproduces.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import Any, Final

__all__ = ["QuantityError", "canonical_quantity", "format_quantity", "parse_quantity"]

_SUFFIX: Final[dict[str, Fraction]] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_RE: Final = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?\Z")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: Any) -> Fraction:
    """The exact value of a quantity (``"250m"`` → 1/4); ints and floats pass through."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or number, not {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise QuantityError(f"quantity must be a finite number, not {value!r}")
    if isinstance(value, int | float):
        return Fraction(value)
    return _parse_text(str(value))


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    """Parse a quantity string; memoised because a cluster uses a handful of distinct amounts (Fractions are
    immutable, so sharing one is safe). Errors are not cached and re-raise every time."""
    match = _RE.match(value.strip())
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {value!r}"
        )
    number, exponent, suffix = match.groups()
    result = Fraction(number)
    if exponent:
        result *= Fraction(10) ** int(exponent[1:])
    return result * _SUFFIX[suffix or ""]


def format_quantity(value: Fraction, resource: str) -> str:
    """How the kubelet prints amounts in rejection messages: milli-units for CPU, plain integers otherwise."""
    if resource == "cpu":
        return str(int(value * 1000))
    return str(int(value)) if value.denominator == 1 else str(float(value))


_BINARY: Final = frozenset({"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"})
_DECIMAL_SUFFIX: Final = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX: Final = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}


def canonical_quantity(value: Any) -> str:
    """Go's ``Quantity.String()``: the value rounded up to nano units, in the format (decimal SI, binary SI or
    decimal exponent) its text was written in, with the largest suffix that keeps the mantissa whole."""
    number = parse_quantity(value)
    text = value.strip() if isinstance(value, str) else ""
    match = _RE.match(text)
    exponent_form = bool(match and match.group(2))
    binary = bool(match and match.group(3) in _BINARY)
    nanos = math.ceil(abs(number) * 10**9)
    if nanos == 0:
        return "0"
    sign = "-" if number < 0 else ""
    whole = nanos % 10**9 == 0
    if binary and whole and abs(number) >= 1024:
        amount, power = nanos // 10**9, 0
        while amount % 1024 == 0 and power < 6:
            amount, power = amount // 1024, power + 1
        return f"{sign}{amount}{_BINARY_SUFFIX[power]}"
    amount, exponent = nanos, -9
    while amount % 10 == 0:
        amount, exponent = amount // 10, exponent + 1
    amount *= 10 ** (exponent % 3)
    exponent -= exponent % 3
    if exponent_form:
        return f"{sign}{amount}" + (f"e{exponent}" if exponent else "")
    suffix = _DECIMAL_SUFFIX.get(exponent)
    return f"{sign}{amount}{suffix}" if suffix is not None else f"{sign}{amount}e{exponent}"
