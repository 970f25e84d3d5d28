"""Go's rendering of values in API messages: ``%q`` strings, ``%v`` floats and ``field.Error`` bad values.

kube-apiserver messages are built with Go's ``fmt`` and clients (and users) read them verbatim, so the schema
validator, the built-in validators and the Table printers all render numbers and strings through these helpers.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

__all__ = ["format_value", "go_float", "go_quote", "go_scalar"]


def go_scalar(value: Any) -> str | None:
    """Go's ``%v`` for a JSON boolean or number; None for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    return None


def format_value(value: Any) -> str:
    """Render a bad value the way Go's ``field.Error`` does (strings quoted, scalars bare, null as ``null``)."""
    if value is None:
        return "null"
    scalar = go_scalar(value)
    if scalar is not None:
        return scalar
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{format_value(v)}" for k, v in value.items())
        return f"map[string]interface {{}}{{{inner}}}"
    if isinstance(value, list):
        return f"[]interface {{}}{{{', '.join(format_value(v) for v in value)}}}"
    return str(value)


def go_quote(text: str) -> str:
    """Go's ``%q`` for the characters that occur in practice."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def go_float(value: float) -> str:
    """Go's ``%v`` for a float64: shortest digits, exponent form when the exponent is below -4 or at least 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # position of the decimal point within ``text``
    prefix = "-" if sign else ""
    decimal_exponent = point - 1
    if decimal_exponent < -4 or decimal_exponent >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if decimal_exponent < 0 else '+'}{abs(decimal_exponent):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{prefix}{text}{'0' * (point - len(text))}"
    return f"{prefix}{text[:point]}.{text[point:]}"
