"""Compiled form of one openAPIV3Schema node, prepared once so that per-object work is a plain walk.

:mod:`grove_sim.schema.structural` walks objects; this module turns the schema dict into :class:`Node` trees
with compiled regexes, CEL programs, precomputed "is there anything below here" flags (so walks skip subtrees that
cannot default or fail), and the value checks (enum, bounds, lengths, patterns, formats, list-type uniqueness) that
render apiserver-style messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from grove_sim.machinery.gofmt import format_value, go_float, go_quote
from grove_sim.machinery.patch import json_equal
from grove_sim.schema import cel

__all__ = [
    "MISSING",
    "FieldError",
    "Node",
    "Rule",
    "SchemaError",
    "compile_node",
    "field_error",
    "invalid",
    "json_equal",
    "json_type",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()
_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class FieldError:
    """One apiserver ``field.Error``: the path, its ``metav1.CauseType`` reason and the full rendered message."""

    field: str
    reason: str
    message: str

    @property
    def body(self) -> str:
        """The message without its ``<field>: `` prefix: what ``Status.details.causes[].message`` carries."""
        prefix = f"{self.field}: "
        return self.message[len(prefix) :] if self.message.startswith(prefix) else self.message


def field_error(path: str, reason: str, body: str) -> FieldError:
    return FieldError(path, reason, f"{path}: {body}")


def invalid(path: str, value: Any, detail: str) -> FieldError:
    """``field.Invalid``."""
    return field_error(path, "FieldValueInvalid", f"Invalid value: {format_value(value)}: {detail}")


class SchemaError(ValueError):
    """The schema itself is unusable (bad pattern, CEL syntax error); the apiserver would reject the CRD."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled ``x-kubernetes-validations`` entry."""

    program: cel.Program
    text: str
    message: str
    message_expression: cel.Program | None
    field_path: str
    reason: str
    transition: bool


def json_type(value: Any) -> str:
    """The OpenAPI type name of a decoded JSON value, as used in type-error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, bool):
        return ("bool", value)
    return value


def _accepts_integer(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())


_ACCEPTS: Final[dict[str, Callable[[Any], bool]]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _accepts_integer,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


class Node:
    """A compiled schema node; attributes mirror the OpenAPI keywords that structural schemas allow."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.type: str = str(raw.get("type", ""))
        self.int_or_string = bool(raw.get("x-kubernetes-int-or-string", False))
        self.nullable = bool(raw.get("nullable", False))
        self.preserve_unknown = bool(raw.get("x-kubernetes-preserve-unknown-fields", False))
        self.embedded = bool(raw.get("x-kubernetes-embedded-resource", False))
        self.default: Any = raw.get("default", MISSING)
        self.properties: dict[str, Node] = {k: Node(v) for k, v in (raw.get("properties") or {}).items()}
        additional = raw.get("additionalProperties")
        self.additional: Node | None = Node(additional) if isinstance(additional, Mapping) else None
        self.additional_any = additional is True
        self.items: Node | None = Node(raw["items"]) if isinstance(raw.get("items"), Mapping) else None
        self.required: tuple[str, ...] = tuple(raw.get("required") or ())
        self.enum: list[Any] | None = list(raw["enum"]) if "enum" in raw else None
        self.minimum: float | None = raw.get("minimum")
        self.maximum: float | None = raw.get("maximum")
        self.exclusive_minimum = bool(raw.get("exclusiveMinimum", False))
        self.exclusive_maximum = bool(raw.get("exclusiveMaximum", False))
        self.min_length: int | None = raw.get("minLength")
        self.max_length: int | None = raw.get("maxLength")
        self.min_items: int | None = raw.get("minItems")
        self.max_items: int | None = raw.get("maxItems")
        self.min_properties: int | None = raw.get("minProperties")
        self.max_properties: int | None = raw.get("maxProperties")
        self.format: str = str(raw.get("format", ""))
        self.pattern_text: str | None = raw.get("pattern")
        try:
            self.pattern = re.compile(self.pattern_text) if self.pattern_text is not None else None
        except re.error as exc:
            raise SchemaError(f"invalid pattern {self.pattern_text!r}: {exc}") from exc
        self.list_type: str = str(raw.get("x-kubernetes-list-type", ""))
        self.map_keys: tuple[str, ...] = tuple(raw.get("x-kubernetes-list-map-keys") or ())
        self.all_of = [Node(s) for s in raw.get("allOf") or ()]
        self.any_of = [Node(s) for s in raw.get("anyOf") or ()]
        self.one_of = [Node(s) for s in raw.get("oneOf") or ()]
        self.not_: Node | None = Node(raw["not"]) if isinstance(raw.get("not"), Mapping) else None
        self.rules: tuple[Rule, ...] = tuple(_compile_rule(r) for r in raw.get("x-kubernetes-validations") or ())

        self.type_label = self.type
        self.expected = "integer,string" if self.int_or_string and not self.type else self.type
        self._accept = _ACCEPTS.get(self.type)
        children = [*self.properties.values(), *(n for n in (self.additional, self.items) if n is not None)]
        self.has_value_checks = any(
            x is not None
            for x in (self.enum, self.minimum, self.maximum, self.min_length, self.max_length, self.pattern)
        ) or any(x is not None for x in (self.min_items, self.max_items, self.min_properties, self.max_properties))
        self.has_value_checks |= bool(
            self.format in ("int32", "int64", "date-time") or self.list_type in ("set", "map")
        )
        self.has_value_checks |= bool(self.all_of or self.any_of or self.one_of or self.not_)
        self.needs_validation: bool = bool(
            self.type or self.int_or_string or self.has_value_checks or self.rules or self.required or not self.nullable
        ) or any(c.needs_validation for c in children)
        self.needs_defaulting: bool = bool(self.properties) or any(c.needs_defaulting for c in children)
        self.rules_below: bool = any(r.transition for r in self.rules) or any(c.rules_below for c in children)
        self.any_rules: bool = bool(self.rules) or any(c.any_rules for c in children)
        self.numbers_below: bool = self.type == "number" or any(c.numbers_below for c in children)

    def cel_value(self, value: Any) -> Any:
        """``value`` as CEL sees it: JSON integers in ``type: number`` fields become doubles."""
        if not self.numbers_below:
            return value
        if self.type == "number":
            return float(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, child in value.items():
                sub = self.properties.get(key, self.additional)
                out[key] = sub.cel_value(child) if sub is not None else child
            return out
        if isinstance(value, list) and self.items is not None:
            return [self.items.cel_value(item) for item in value]
        return value

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` has the declared type (int-or-string and untyped nodes included)."""
        if self._accept is not None:
            return self._accept(value)
        if self.int_or_string:
            return isinstance(value, str) or _accepts_integer(value)
        return True

    def map_key(self, entry: Mapping[str, Any]) -> tuple[Any, ...]:
        """The identity of a list-type=map entry: the values of its key fields."""
        return tuple(_freeze(entry.get(k)) for k in self.map_keys)

    def check_value(self, value: Any, path: str) -> list[FieldError]:
        """Every non-structural keyword check on ``value``; the type has already been accepted."""
        errors: list[FieldError] = []
        if self.enum is not None and not any(json_equal(value, allowed) for allowed in self.enum):
            supported = ", ".join(go_quote(_go_sprint(v)) for v in self.enum)
            body = f"Unsupported value: {format_value(value)}: supported values: {supported}"
            errors.append(FieldError(path, "FieldValueNotSupported", f"{path}: {body}"))
        if isinstance(value, int | float) and not isinstance(value, bool):
            if self.minimum is not None and (value <= self.minimum if self.exclusive_minimum else value < self.minimum):
                relation = "greater than" if self.exclusive_minimum else "greater than or equal to"
                detail = f"{path} in body should be {relation} {go_float(float(self.minimum))}"
                errors.append(invalid(path, value, detail))
            if self.maximum is not None and (value >= self.maximum if self.exclusive_maximum else value > self.maximum):
                relation = "less than" if self.exclusive_maximum else "less than or equal to"
                detail = f"{path} in body should be {relation} {go_float(float(self.maximum))}"
                errors.append(invalid(path, value, detail))
            bounds = {"int32": _INT32, "int64": _INT64}.get(self.format)
            if bounds is not None and not bounds[0] <= value <= bounds[1]:
                detail = f"{path} in body must be of type {self.format}: {go_quote(format_value(value))}"
                errors.append(invalid(path, value, detail))
        elif isinstance(value, str):
            length = len(value)
            if self.max_length is not None and length > self.max_length:
                body = f"Too long: may not be more than {self.max_length} bytes"
                errors.append(FieldError(path, "FieldValueTooLong", f"{path}: {body}"))
            if self.min_length is not None and length < self.min_length:
                errors.append(invalid(path, value, f"{path} in body should be at least {self.min_length} chars long"))
            if self.pattern is not None and self.pattern.search(value) is None:
                errors.append(invalid(path, value, f"{path} in body should match '{self.pattern_text}'"))
            if self.format == "date-time" and not _is_date_time(value):
                errors.append(invalid(path, value, f"{path} in body must be of type date-time: {go_quote(value)}"))
        elif isinstance(value, list):
            errors.extend(self._check_list(value, path))
        elif isinstance(value, dict):
            count = len(value)
            if self.min_properties is not None and count < self.min_properties:
                detail = f"{path} in body should have at least {self.min_properties} properties"
                errors.append(invalid(path, count, detail))
            if self.max_properties is not None and count > self.max_properties:
                body = f"Too many: {count}: must have at most {self.max_properties} items"
                errors.append(FieldError(path, "FieldValueTooMany", f"{path}: {body}"))
        errors.extend(self._check_combinators(value, path))
        return errors

    def _check_list(self, value: list[Any], path: str) -> list[FieldError]:
        errors: list[FieldError] = []
        if self.max_items is not None and len(value) > self.max_items:
            body = f"Too many: {len(value)}: must have at most {self.max_items} items"
            errors.append(FieldError(path, "FieldValueTooMany", f"{path}: {body}"))
        if self.min_items is not None and len(value) < self.min_items:
            errors.append(invalid(path, len(value), f"{path} in body should have at least {self.min_items} items"))
        if self.list_type in ("set", "map"):
            seen: set[Any] = set()
            for position, item in enumerate(value):
                if self.list_type == "map":
                    if not isinstance(item, dict):
                        continue
                    key: Any = self.map_key(item)
                    shown: Any = {k: item.get(k) for k in self.map_keys if k in item}
                else:
                    key, shown = _freeze(item), item
                if key in seen:
                    item_path = f"{path}[{position}]"
                    body = f"Duplicate value: {format_value(shown)}"
                    errors.append(FieldError(item_path, "FieldValueDuplicate", f"{item_path}: {body}"))
                seen.add(key)
        return errors

    def _check_combinators(self, value: Any, path: str) -> list[FieldError]:
        errors: list[FieldError] = []
        for sub in self.all_of:
            errors.extend(sub._errors_for(value, path))
        if self.any_of and all(sub._errors_for(value, path) for sub in self.any_of):
            errors.append(invalid(path, value, f"{path} in body must validate at least one schema (anyOf)"))
        if self.one_of and sum(not sub._errors_for(value, path) for sub in self.one_of) != 1:
            errors.append(invalid(path, value, f"{path} in body must validate one and only one schema (oneOf)"))
        if self.not_ is not None and not self.not_._errors_for(value, path):
            errors.append(invalid(path, value, f"{path} in body must not validate the schema (not)"))
        return errors

    def _errors_for(self, value: Any, path: str) -> list[FieldError]:
        """Value-level errors of a combinator branch (its type, keywords and required keys)."""
        if (self.type or self.int_or_string) and not self.accepts(value):
            return [invalid(path, value, f"{path} in body must be of type {self.expected}")]
        errors = self.check_value(value, path) if self.has_value_checks else []
        if isinstance(value, dict):
            for key in self.required:
                if key not in value:
                    errors.append(FieldError(f"{path}.{key}", "FieldValueRequired", f"{path}.{key}: Required value"))
        return errors


def _go_sprint(value: Any) -> str:
    return value if isinstance(value, str) else format_value(value)


def _is_date_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in text.upper()


def _compile_rule(raw: Mapping[str, Any]) -> Rule:
    text = str(raw.get("rule", "")).strip()
    try:
        program = cel.compile(text)
        expression = raw.get("messageExpression")
        message_program = cel.compile(str(expression)) if expression else None
    except cel.CelError as exc:
        raise SchemaError(f"x-kubernetes-validations rule {text!r}: {exc}") from exc
    return Rule(
        program=program,
        text=text,
        message=str(raw.get("message", "")),
        message_expression=message_program,
        field_path=str(raw.get("fieldPath", "")),
        reason=str(raw.get("reason", "")),
        transition="oldSelf" in program.references,
    )


def compile_node(raw: Mapping[str, Any]) -> Node:
    """Compile a whole openAPIV3Schema; raises :class:`SchemaError` for patterns or rules that do not compile."""
    return Node(raw)
