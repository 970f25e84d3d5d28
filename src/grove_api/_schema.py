"""Turn pydantic API models into structural OpenAPI v3 schemas (the dialect CRDs accept).

A CRD schema must be *structural*: every node typed, everything inlined (no `$ref`), no `anyOf` hiding a type.
Rather than post-processing `model_json_schema()` (which emits `$ref`/`anyOf` for every optional field), this walks
the model fields directly: optional fields are simply not `required`, `Literal`s become enums, annotated-types
constraints become `minimum`/`maxLength`/`pattern`, and free-form core types (`dict[str, Any]`) become objects with
`x-kubernetes-preserve-unknown-fields`. Kind-specific extras (CRD defaults, CEL rules) are merged on by `crdgen`.
"""

from __future__ import annotations

import copy
import inspect
import types
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from grove_api._meta import IntFormat, ObjectMeta

__all__ = ["Schema", "TypeExtras", "deep_merge", "model_schema"]

Schema = dict[str, Any]
TypeExtras = Mapping[type[BaseModel], Schema]
"""Schema fragments merged onto every occurrence of a model (e.g. CEL rules of TopologyConstraint)."""


def deep_merge(base: Schema, extra: Mapping[str, Any]) -> Schema:
    """Merge a copy of `extra` into `base` in place: dicts merge, lists (CEL rules) append, scalars overwrite.

    Values are deep-copied so no two schema nodes share an object (YAML would otherwise emit anchors).
    """
    for key, value in extra.items():
        current = base.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            deep_merge(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            current.extend(copy.deepcopy(value))
        elif isinstance(value, Mapping):
            base[key] = deep_merge({}, value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def _description(model: type[BaseModel]) -> str | None:
    """First paragraph of the model's docstring: a short human description for `kubectl explain`."""
    doc = inspect.getdoc(model)
    if not doc:
        return None
    return doc.split("\n\n", 1)[0].replace("\n", " ")


def _strip_optional(annotation: Any) -> Any:
    """`X | None` -> `X`; anything else unchanged. Other unions are not representable structurally."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"union {annotation!r} has no structural schema")
        return args[0]
    return annotation


def _apply_constraints(schema: Schema, metadata: list[Any]) -> None:
    """Translate annotated-types / pydantic constraint metadata into OpenAPI keywords."""
    is_array = schema.get("type") == "array"
    for item in metadata:
        if isinstance(item, FieldInfo):
            _apply_constraints(schema, list(item.metadata))
        elif isinstance(item, IntFormat):
            schema["format"] = item.name
        elif isinstance(item, annotated_types.Ge):
            schema["minimum"] = item.ge
        elif isinstance(item, annotated_types.Le):
            schema["maximum"] = item.le
        elif isinstance(item, annotated_types.MinLen):
            schema["minItems" if is_array else "minLength"] = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            schema["maxItems" if is_array else "maxLength"] = item.max_length
        elif getattr(item, "pattern", None) is not None:
            schema["pattern"] = item.pattern


def _type_schema(annotation: Any, metadata: list[Any], extras: TypeExtras) -> Schema:
    """Schema of one annotation (after Optional has been stripped)."""
    if get_origin(annotation) is Annotated:
        inner, *more = get_args(annotation)
        return _type_schema(_strip_optional(inner), [*more, *metadata], extras)
    origin = get_origin(annotation)
    schema: Schema
    if origin is Literal:
        values = list(get_args(annotation))
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"only string Literals are supported, got {annotation!r}")
        schema = {"type": "string", "enum": values}
    elif origin is list:
        (item,) = get_args(annotation)
        schema = {"type": "array", "items": _type_schema(_strip_optional(item), [], extras)}
    elif origin is dict:
        key, value = get_args(annotation)
        if key is not str:
            raise TypeError(f"map keys must be strings, got {annotation!r}")
        if value is Any:
            schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        else:
            schema = {"type": "object", "additionalProperties": _type_schema(_strip_optional(value), [], extras)}
    elif annotation is ObjectMeta:
        schema = {"type": "object"}
    elif inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        schema = model_schema(annotation, extras)
    elif annotation is bool:
        schema = {"type": "boolean"}
    elif annotation is int:
        schema = {"type": "integer"}
    elif annotation is float:
        schema = {"type": "number"}
    elif annotation is str:
        schema = {"type": "string"}
    elif annotation is datetime:
        schema = {"type": "string", "format": "date-time"}
    else:
        raise TypeError(f"no structural schema for {annotation!r}")
    _apply_constraints(schema, metadata)
    return schema


def _scalar_default(field: FieldInfo) -> Any:
    """A pydantic default worth publishing in the CRD (plain scalars only; None means "absent")."""
    default = field.default
    if isinstance(default, bool | int | float | str):
        return default
    return None


def model_schema(model: type[BaseModel], extras: TypeExtras | None = None) -> Schema:
    """Structural schema of `model`: properties by JSON alias, `required` from required fields."""
    extras = extras or {}
    properties: Schema = {}
    required: list[str] = []
    for name, field in model.model_fields.items():
        alias = field.alias or name
        prop = _type_schema(_strip_optional(field.annotation), list(field.metadata), extras)
        default = _scalar_default(field)
        if default is not None:
            prop["default"] = default
        properties[alias] = prop
        if field.is_required():
            required.append(alias)
    schema: Schema = {"type": "object"}
    description = _description(model)
    if description:
        schema["description"] = description
    schema["properties"] = properties
    if required:
        schema["required"] = required
    if model in extras:
        deep_merge(schema, extras[model])
    return schema
