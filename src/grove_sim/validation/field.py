"""Field errors the way ``k8s.io/apimachinery/pkg/util/validation/field`` renders them, plus typed field access.

A cause is ``(field path, reason, detail)``: the reason is the ``field.ErrorType`` (``FieldValueInvalid``...), the
detail is ``ErrorBody()`` (``Invalid value: "x": must be ...``), which the registry joins into the 422 ``Status``
message and ``details.causes``. Bad values render as Go does: strings with ``%q``, numbers and booleans bare, other
values as JSON. Paths follow ``field.Path``: ``spec.containers[0].resources.limits[nvidia.com/gpu]``.

Objects arrive as decoded JSON, so a field may hold the wrong JSON type; kube-apiserver refuses such a body while
decoding it (400), which ``DecodeError`` stands for, and the typed getters below raise it instead of crashing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from grove_sim.machinery.gofmt import go_quote, go_scalar

__all__ = [
    "Cause",
    "DecodeError",
    "changed_keys",
    "duplicate",
    "enum_causes",
    "forbidden",
    "get_int",
    "get_list",
    "get_map",
    "get_str",
    "get_str_map",
    "invalid",
    "not_found",
    "not_supported",
    "required",
    "too_long",
    "type_error",
]

Cause = tuple[str, str, str]
"""(field, reason, detail) of one ``field.Error``."""

_JSON_TYPE: Final = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


class DecodeError(ValueError):
    """A body kube-apiserver could not even decode into its Go type (a wrong JSON type, a malformed quantity); the
    server answers 400, as its decoder would."""


def type_error(path: str, value: Any, go_type: str) -> DecodeError:
    """The decoder's complaint about a field holding the wrong JSON type."""
    found = _JSON_TYPE.get(type(value), "value")
    return DecodeError(f"json: cannot unmarshal {found} into Go struct field {path} of type {go_type}")


def bad_value(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: JSON for structures, in the order given (Go's struct field order,
    or sorted keys for a Go map: the caller arranges which)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return go_quote(value)
    scalar = go_scalar(value)
    if scalar is not None:
        return scalar
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def invalid(path: str, value: Any, detail: str) -> Cause:
    """``field.Invalid``."""
    return (path, "FieldValueInvalid", f"Invalid value: {bad_value(value)}: {detail}")


def required(path: str, detail: str = "") -> Cause:
    """``field.Required``."""
    return (path, "FieldValueRequired", f"Required value: {detail}" if detail else "Required value")


def duplicate(path: str, value: Any) -> Cause:
    """``field.Duplicate``."""
    return (path, "FieldValueDuplicate", f"Duplicate value: {bad_value(value)}")


def not_found(path: str, value: Any) -> Cause:
    """``field.NotFound``."""
    return (path, "FieldValueNotFound", f"Not found: {bad_value(value)}")


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    """``field.NotSupported``, listing the supported values in the order given."""
    listed = ", ".join(go_quote(s) for s in supported)
    return (path, "FieldValueNotSupported", f"Unsupported value: {bad_value(value)}: supported values: {listed}")


def forbidden(path: str, detail: str) -> Cause:
    """``field.Forbidden``."""
    return (path, "FieldValueForbidden", f"Forbidden: {detail}")


def too_long(path: str, limit: int) -> Cause:
    """``field.TooLong`` (the value itself is never printed)."""
    return (path, "FieldValueTooLong", f"Too long: may not be more than {limit} bytes")


def _at(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def changed_keys(new: dict[str, Any], old: dict[str, Any]) -> set[str]:
    """The top-level keys whose values differ between ``new`` and ``old`` (added and removed ones included)."""
    if new == old:
        return set()
    return {key for key in new.keys() | old.keys() if new.get(key) != old.get(key)}


def enum_causes(obj: dict[str, Any], key: str, parent: str, supported: tuple[str, ...]) -> list[Cause]:
    """A required string field with a fixed set of values: ``Required`` when empty, ``NotSupported`` when unknown."""
    value = get_str(obj, key, parent)
    path = _at(parent, key)
    if not value:
        return [required(path)]
    return [] if value in supported else [not_supported(path, value, supported)]


def get_str(obj: dict[str, Any], key: str, parent: str) -> str:
    """A string field of the object at ``parent``; JSON null and absence read as "" like Go's zero value."""
    value = obj.get(key)
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    raise type_error(_at(parent, key), value, "string")


def get_int(obj: dict[str, Any], key: str, parent: str) -> int | None:
    """An integer field, or None when absent or null."""
    value = obj.get(key)
    if value is None or value.__class__ is int:
        return value
    if isinstance(value, float) and value == int(value):
        return int(value)
    raise type_error(_at(parent, key), value, "int64")


def get_map(obj: dict[str, Any], key: str, parent: str) -> dict[str, Any]:
    """An object field ({} when absent or null)."""
    value = obj.get(key)
    if value.__class__ is dict:
        return value
    if value is None:
        return {}
    raise type_error(_at(parent, key), value, "struct")


def get_str_map(obj: dict[str, Any], key: str, parent: str) -> dict[str, str]:
    """A ``map[string]string`` field ({} when absent or null; a null value reads as "")."""
    value = obj.get(key)
    if value is None:
        return {}
    if value.__class__ is not dict:
        raise type_error(_at(parent, key), value, "map[string]string")
    for item in value.values():
        if item.__class__ is not str and item is not None:
            raise type_error(_at(parent, key), item, "string")
    return value


def get_list(obj: dict[str, Any], key: str, parent: str, item: type = dict) -> list[Any]:
    """A list field whose items have the JSON type ``item`` ([] when absent or null)."""
    value = obj.get(key)
    if value is None:
        return []
    if value.__class__ is not list:
        raise type_error(_at(parent, key), value, "array")
    for element in value:
        if element.__class__ is not item:
            raise type_error(_at(parent, key), element, "struct" if item is dict else "string")
    return value
