"""Value semantics of the CEL subset: arithmetic, comparison, equality, conversions and the function library.

Kept apart from the parser in :mod:`grove_sim.schema.cel` so each module holds one concept. CEL values map onto plain
Python/JSON values (``int``, ``float``, ``str``, ``bool``, ``None``, ``list``, ``dict``, ``bytes``) plus
:class:`UInt` for ``uint`` and :class:`CelType` for ``type()`` results. Because ``bool`` is an ``int`` subclass in
Python, every check here uses exact ``type(...)`` tests: CEL never mixes booleans and numbers.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from typing import Any, Final

__all__ = ["CelError", "CelType", "UInt", "call_function", "call_method", "cel_eq", "type_name"]

INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1
UINT_MAX: Final = 2**64 - 1


class CelError(Exception):
    """A CEL syntax or evaluation error; the message follows cel-go wording where it matters to users."""


class UInt(int):
    """A CEL ``uint`` value: an ``int`` that remembers its CEL type."""

    __slots__ = ()


class CelType:
    """A CEL type value, the result of ``type(x)`` or a bare type identifier such as ``int``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("CelType", self.name))

    def __repr__(self) -> str:
        return self.name


TYPE_NAMES: Final = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"})


def type_name(value: Any) -> str:
    """The CEL type name of a runtime value."""
    kind = type(value)
    if kind is bool:
        return "bool"
    if kind is UInt:
        return "uint"
    if kind is int:
        return "int"
    if kind is float:
        return "double"
    if kind is str:
        return "string"
    if kind is bytes:
        return "bytes"
    if value is None:
        return "null_type"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if kind is CelType:
        return "type"
    return kind.__name__


def _is_num(value: Any) -> bool:
    kind = type(value)
    return kind is int or kind is float or kind is UInt


def no_overload(op: str, *args: Any) -> CelError:
    """The cel-go 'no such overload' error for an operator applied to the wrong types."""
    return CelError(f"no such overload: {op}({', '.join(type_name(a) for a in args)})")


def check_int(value: int) -> int:
    """Raise CEL's overflow error when an int result leaves the int64 range."""
    if value < INT_MIN or value > INT_MAX:
        raise CelError("integer overflow")
    return value


def _check_uint(value: int) -> UInt:
    if value < 0 or value > UINT_MAX:
        raise CelError("unsigned integer overflow")
    return UInt(value)


# ---------------------------------------------------------------------------------------------------------------------
# Operators


def add(a: Any, b: Any) -> Any:
    """``a + b``: numbers of one type, string/bytes/list concatenation."""
    ta, tb = type(a), type(b)
    if ta is not tb and not (isinstance(a, list) and isinstance(b, list)):
        raise no_overload("_+_", a, b)
    if ta is int:
        return check_int(a + b)
    if ta is UInt:
        return _check_uint(a + b)
    if ta is float or ta is str or ta is bytes:
        return a + b
    if isinstance(a, list):
        return [*a, *b]
    raise no_overload("_+_", a, b)


def sub(a: Any, b: Any) -> Any:
    """``a - b`` on numbers of one type."""
    ta = type(a)
    if ta is not type(b) or not _is_num(a):
        raise no_overload("_-_", a, b)
    if ta is int:
        return check_int(a - b)
    if ta is UInt:
        return _check_uint(a - b)
    return a - b


def mul(a: Any, b: Any) -> Any:
    """``a * b`` on numbers of one type."""
    ta = type(a)
    if ta is not type(b) or not _is_num(a):
        raise no_overload("_*_", a, b)
    if ta is int:
        return check_int(a * b)
    if ta is UInt:
        return _check_uint(a * b)
    return a * b


def _trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def div(a: Any, b: Any) -> Any:
    """``a / b``: integer division truncates toward zero (as in Go); double division follows IEEE 754."""
    ta = type(a)
    if ta is not type(b) or not _is_num(a):
        raise no_overload("_/_", a, b)
    if ta is float:
        if b == 0.0:
            return math.nan if a == 0.0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if b == 0:
        raise CelError("division by zero")
    if ta is UInt:
        return UInt(a // b)
    return check_int(_trunc_div(a, b))


def mod(a: Any, b: Any) -> Any:
    """``a % b`` on ints: the result takes the sign of the dividend (as in Go)."""
    ta = type(a)
    if ta is not type(b) or (ta is not int and ta is not UInt):
        raise no_overload("_%_", a, b)
    if b == 0:
        raise CelError("modulus by zero")
    if ta is UInt:
        return UInt(a % b)
    return a - b * _trunc_div(a, b)


def negate(a: Any) -> Any:
    """Unary minus on int and double."""
    if type(a) is int:
        return check_int(-a)
    if type(a) is float:
        return -a
    raise no_overload("-_", a)


def cel_eq(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality: numbers compare by value across int/uint/double; other kinds must match."""
    if _is_num(a) and _is_num(b):
        return bool(a == b)
    ta, tb = type(a), type(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(cel_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        return all(not (key not in b or not cel_eq(value, b[key])) for key, value in a.items())
    if ta is not tb:
        return False
    return bool(a == b)


def compare(op: str, a: Any, b: Any) -> bool:
    """Ordering operators on numbers (across numeric types), strings, bytes and bools."""
    if not ((_is_num(a) and _is_num(b)) or (type(a) is type(b) and type(a) in (str, bytes, bool))):
        raise no_overload(f"_{op}_", a, b)
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def contains_in(element: Any, container: Any) -> bool:
    """``element in container`` for lists (by CEL equality) and maps (by key)."""
    if isinstance(container, list):
        return any(cel_eq(element, item) for item in container)
    if isinstance(container, dict):
        return element in container
    raise no_overload("@in", element, container)


def index(container: Any, key: Any) -> Any:
    """``container[key]`` for lists (int index) and maps (any key)."""
    if isinstance(container, list):
        if type(key) not in (int, UInt) and not (type(key) is float and key.is_integer()):
            raise no_overload("_[_]", container, key)
        position = int(key)
        if position < 0 or position >= len(container):
            raise CelError(f"index out of bounds: {position}")
        return container[position]
    if isinstance(container, dict):
        if key not in container:
            raise CelError(f"no such key: {key}")
        return container[key]
    raise no_overload("_[_]", container, key)


def select(operand: Any, field: str) -> Any:
    """``operand.field`` on a map: a missing key is an error, as in CEL."""
    if isinstance(operand, dict):
        if field not in operand:
            raise CelError(f"no such key: {field}")
        return operand[field]
    raise CelError(f"type '{type_name(operand)}' does not support field selection")


def has_field(operand: Any, field: str) -> bool:
    """The ``has(operand.field)`` macro: presence test on a map."""
    if isinstance(operand, dict):
        return field in operand
    raise CelError(f"invalid type for field selection: {type_name(operand)}")


# ---------------------------------------------------------------------------------------------------------------------
# Conversions and functions


def _format_double(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').zfill(2)}"
    return text


def to_string(value: Any) -> str:
    """``string(x)``."""
    kind = type(value)
    if kind is str:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is UInt:
        return str(int(value))
    if kind is float:
        return _format_double(value)
    if kind is bytes:
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CelError("invalid UTF-8 in bytes, cannot convert to string") from exc
    raise no_overload("string", value)


def to_int(value: Any) -> int:
    """``int(x)``: truncates doubles, parses base-10 strings, range-checked."""
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is UInt:
        return check_int(int(value))
    if kind is float:
        if math.isnan(value) or math.isinf(value) or not (INT_MIN <= value < 2.0**63):
            raise CelError("integer overflow")
        return int(value)
    if kind is str:
        try:
            return check_int(int(value, 10))
        except ValueError as exc:
            raise CelError(f"cannot convert string '{value}' to int") from exc
    raise no_overload("int", value)


def to_uint(value: Any) -> UInt:
    """``uint(x)``."""
    kind = type(value)
    if kind is int or kind is UInt:
        return _check_uint(int(value))
    if kind is float:
        if math.isnan(value) or not (0 <= value < 2.0**64):
            raise CelError("unsigned integer overflow")
        return UInt(int(value))
    if kind is str:
        try:
            return _check_uint(int(value, 10))
        except ValueError as exc:
            raise CelError(f"cannot convert string '{value}' to uint") from exc
    raise no_overload("uint", value)


def to_double(value: Any) -> float:
    """``double(x)``."""
    kind = type(value)
    if kind is float or kind is int or kind is UInt:
        return float(value)
    if kind is str:
        try:
            return float(value)
        except ValueError as exc:
            raise CelError(f"cannot convert string '{value}' to double") from exc
    raise no_overload("double", value)


def size(value: Any) -> int:
    """``size(x)``: code points of a string, bytes of bytes, elements of a list or map."""
    if isinstance(value, str | bytes | list | dict):
        return len(value)
    raise no_overload("size", value)


_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER: Final = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise CelError(f"invalid regular expression: {pattern}: {exc}") from exc


def _str_method(name: str, target: str, args: list[Any]) -> Any:
    if any(type(a) is not str for a in args[:1]) and name not in ("substring", "charAt"):
        raise no_overload(name, target, *args)
    if name == "startsWith":
        return target.startswith(args[0])
    if name == "endsWith":
        return target.endswith(args[0])
    if name == "contains":
        return args[0] in target
    if name == "matches":
        return _regex(args[0]).search(target) is not None
    if name == "indexOf":
        return target.find(args[0])
    if name == "lastIndexOf":
        return target.rfind(args[0])
    if name == "split":
        return target.split(args[0]) if args[0] else list(target)
    if name == "replace":
        limit = -1 if len(args) < 3 else args[2]
        return target.replace(args[0], args[1], limit)
    if name == "substring":
        end = len(target) if len(args) < 2 else args[1]
        if not (0 <= args[0] <= end <= len(target)):
            raise CelError(f"index out of range: {args[0]}")
        return target[args[0] : end]
    if name == "charAt":
        if not 0 <= args[0] <= len(target):
            raise CelError(f"index out of range: {args[0]}")
        return target[args[0] : args[0] + 1]
    raise no_overload(name, target, *args)


def _list_method(name: str, target: list[Any], args: list[Any]) -> Any:
    if name == "join":
        if not all(type(item) is str for item in target):
            raise no_overload("join", target, *args)
        return (args[0] if args else "").join(target)
    if name in ("sum", "min", "max", "isSorted"):
        if target and len({type(item) for item in target}) != 1:
            raise no_overload(name, target)
        if name == "sum":
            return add_all(target)
        if name == "isSorted":
            return all(compare("<=", a, b) for a, b in itertools.pairwise(target))
        if not target:
            raise CelError(f"{name}() called on an empty list")
        return min(target) if name == "min" else max(target)
    if name == "indexOf":
        return next((i for i, item in enumerate(target) if cel_eq(item, args[0])), -1)
    if name == "lastIndexOf":
        return next((i for i in range(len(target) - 1, -1, -1) if cel_eq(target[i], args[0])), -1)
    raise no_overload(name, target, *args)


def add_all(items: list[Any]) -> Any:
    """``list.sum()``: 0 for an empty list, else the CEL sum of the elements."""
    total: Any = 0
    for position, item in enumerate(items):
        total = item if position == 0 else add(total, item)
    return total


_ZERO_ARG: Final[dict[str, Callable[[Any], Any]]] = {
    "size": size,
    "lowerAscii": lambda s: s.translate(_ASCII_LOWER) if type(s) is str else _raise(no_overload("lowerAscii", s)),
    "upperAscii": lambda s: s.translate(_ASCII_UPPER) if type(s) is str else _raise(no_overload("upperAscii", s)),
    "trim": lambda s: s.strip() if type(s) is str else _raise(no_overload("trim", s)),
}


def _raise(error: CelError) -> Any:
    raise error


def call_method(name: str, target: Any, args: list[Any]) -> Any:
    """A receiver-style call ``target.name(args)``."""
    if not args and name in _ZERO_ARG:
        return _ZERO_ARG[name](target)
    if type(target) is str:
        return _str_method(name, target, args)
    if isinstance(target, list):
        return _list_method(name, target, args)
    raise CelError(f"found no matching overload for '{name}' applied to '{type_name(target)}'")


_GLOBALS: Final[dict[str, Callable[[Any], Any]]] = {
    "size": size,
    "int": to_int,
    "uint": to_uint,
    "double": to_double,
    "string": to_string,
    "dyn": lambda v: v,
    "type": lambda v: CelType(type_name(v)),
    "bool": lambda v: (
        v
        if type(v) is bool
        else {"true": True, "false": False}[v]
        if v in ("true", "false")
        else _raise(no_overload("bool", v))
    ),
}


def call_function(name: str, args: list[Any]) -> Any:
    """A global call ``name(args)``."""
    if len(args) == 1 and name in _GLOBALS:
        return _GLOBALS[name](args[0])
    if name == "matches" and len(args) == 2:
        return call_method("matches", args[0], args[1:])
    raise CelError(f"undeclared reference to '{name}' (in container '')")
