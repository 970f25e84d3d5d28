"""Structural-schema pruning, defaulting and validation of custom resources, driven by a CRD's openAPIV3Schema.

A real apiserver never trusts a custom resource: it drops unknown fields, fills declared defaults and rejects values
that break the schema or its ``x-kubernetes-validations`` CEL rules, with messages kubectl prints verbatim. The
simulated server does the same through :class:`StructuralSchema`, compiled once per CRD version (each schema node
becomes a :class:`grove_sim.schema.node.Node` with its regexes and CEL programs prepared), so each object is walked
once per operation. Call order on create/update, as in the apiserver: :meth:`~StructuralSchema.prune`, then
:meth:`~StructuralSchema.apply_defaults`, then :meth:`~StructuralSchema.validate` (with the stored object as ``old``
on update).

Messages follow ``k8s.io/apimachinery/pkg/util/validation/field`` (``<path>: <detail>``); the server adds the
``The <Kind> "<name>" is invalid:`` prefix and puts :attr:`FieldError.body` into ``details.causes``. ``metadata``,
``apiVersion`` and ``kind`` at the root belong to the server and are left alone here. On update, errors on values
equal to their correlated old value are dropped (CRD validation ratcheting, on by default since 1.30; rules that
use ``oldSelf`` are not ratcheted). Not modelled: CEL cost budgets and ``optionalOldSelf`` (such rules run only on
update).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from grove_sim.machinery.gofmt import go_quote
from grove_sim.schema.cel import CelError
from grove_sim.schema.node import (
    MISSING,
    FieldError,
    Node,
    Rule,
    SchemaError,
    compile_node,
    field_error,
    invalid,
    json_equal,
    json_type,
)

__all__ = ["FieldError", "SchemaError", "StructuralSchema"]

_ROOT_OWNED_BY_SERVER = frozenset({"apiVersion", "kind", "metadata"})
_ROOT_PATH = "<nil>"  # how Go prints the nil field.Path of an error on the object itself


class StructuralSchema:
    """One CRD version's compiled openAPIV3Schema: prune, default and validate custom resources."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.root: Node = compile_node(schema)

    # -- pruning -------------------------------------------------------------------------------------------------

    def prune(self, obj: dict[str, Any]) -> list[str]:
        """Drop fields the schema does not know (in place) and return their paths, like the apiserver's pruning."""
        dropped: list[str] = []
        _prune(obj, self.root, "", dropped, root=True)
        return dropped

    # -- defaulting ----------------------------------------------------------------------------------------------

    def apply_defaults(self, obj: dict[str, Any]) -> None:
        """Fill declared defaults in place, top-down, and drop nulls of non-nullable fields that have no default."""
        _default(obj, self.root, root=True)

    # -- validation ----------------------------------------------------------------------------------------------

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
        """All schema and CEL errors of ``obj``; ``old`` (on update) enables transition rules using ``oldSelf``."""
        walker = _Validator()
        walker.walk(self.root, obj, old, "", has_old=old is not None, root=True)
        if walker.blocked and self.root.any_rules:
            return [*walker.errors, _RULES_NOT_CHECKED]
        return walker.errors + walker.rule_errors


# ---------------------------------------------------------------------------------------------------------------------
# Pruning and defaulting walks


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(value: Any, node: Node | None, path: str, dropped: list[str], *, root: bool = False) -> None:
    if node is not None and node.preserve_unknown:
        _prune_known(value, node, path, dropped)
        return
    if isinstance(value, dict):
        for key in list(value):
            child_path = _join(path, key)
            if (root or (node is not None and node.embedded)) and key in _ROOT_OWNED_BY_SERVER:
                continue
            if node is None:
                dropped.append(child_path)
                del value[key]
            elif key in node.properties:
                _prune(value[key], node.properties[key], child_path, dropped)
            elif node.additional is not None:
                _prune(value[key], node.additional, child_path, dropped)
            elif node.additional_any:
                continue
            else:
                dropped.append(child_path)
                del value[key]
    elif isinstance(value, list):
        items = node.items if node is not None else None
        for position, item in enumerate(value):
            _prune(item, items, f"{path}[{position}]", dropped)


def _prune_known(value: Any, node: Node, path: str, dropped: list[str]) -> None:
    """Under ``x-kubernetes-preserve-unknown-fields`` unknown keys stay, but known children are still pruned."""
    if isinstance(value, dict):
        for key, child in value.items():
            sub = node.properties.get(key, node.additional)
            if sub is not None:
                _prune(child, sub, _join(path, key), dropped)
    elif isinstance(value, list) and node.items is not None:
        for position, item in enumerate(value):
            _prune(item, node.items, f"{path}[{position}]", dropped)


def _default(value: Any, node: Node, *, root: bool = False) -> None:
    if isinstance(value, dict):
        for key, prop in node.properties.items():
            if root and key in _ROOT_OWNED_BY_SERVER:
                continue
            current = value.get(key, MISSING)
            if current is MISSING or (current is None and not prop.nullable):
                if prop.default is not MISSING:
                    value[key] = copy.deepcopy(prop.default)
                elif current is None:
                    del value[key]
        for key, child in value.items():
            if root and key in _ROOT_OWNED_BY_SERVER:
                continue
            sub = node.properties.get(key, node.additional)
            if sub is not None and sub.needs_defaulting:
                _default(child, sub)
    elif isinstance(value, list) and node.items is not None and node.items.needs_defaulting:
        for item in value:
            _default(item, node.items)


# ---------------------------------------------------------------------------------------------------------------------
# Validation walk


# Like the apiserver, CEL rules are not evaluated once a type, length or count error is found (those bound the
# cost of CEL); the result then carries this marker instead of rule errors.
_BLOCKING_REASONS = frozenset({"FieldValueTypeInvalid", "FieldValueTooLong", "FieldValueTooMany"})
_RULES_NOT_CHECKED = FieldError(
    "<nil>",
    "FieldValueInvalid",
    '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; '
    "correct the existing errors to complete validation",
)


class _Validator:
    """One validation pass: schema errors and CEL rule errors, kept apart because the apiserver lists CEL last."""

    __slots__ = ("blocked", "errors", "rule_errors")

    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.rule_errors: list[FieldError] = []
        self.blocked = False

    def walk(self, node: Node, value: Any, old: Any, path: str, *, has_old: bool, root: bool = False) -> None:
        if value is None:
            if not node.nullable and not root and not (has_old and old is None):
                self.errors.append(_type_error(path, node.expected, "null"))
                self.blocked = True
            return
        if not node.accepts(value):
            if not _unchanged(value, old, has_old):
                self.errors.append(_type_error(path, node.expected, json_type(value)))
                self.blocked = True
            return
        if node.has_value_checks:
            found = node.check_value(value, path)
            if found and not _unchanged(value, old, has_old):
                self.errors.extend(found)
                self.blocked = self.blocked or any(e.reason in _BLOCKING_REASONS for e in found)
        if node.rules and not self.blocked:
            self.run_rules(node, value, old, path, has_old=has_old)
        if isinstance(value, dict):
            self.walk_object(node, value, old if has_old and isinstance(old, dict) else None, path, root=root)
        elif isinstance(value, list) and node.items is not None:
            self.walk_list(node, value, old if has_old and isinstance(old, list) else None, path)

    def walk_object(
        self, node: Node, value: Mapping[str, Any], old: Mapping[str, Any] | None, path: str, *, root: bool
    ) -> None:
        missing = [key for key in node.required if key not in value]
        if missing and not _unchanged(value, old, old is not None):
            for key in missing:
                self.errors.append(field_error(_join(path, key), "FieldValueRequired", "Required value"))
        for key, child in value.items():
            if root and key in _ROOT_OWNED_BY_SERVER:
                continue
            sub = node.properties.get(key, node.additional)
            if sub is None or not sub.needs_validation:
                continue
            child_old = MISSING if old is None else old.get(key, MISSING)
            self.walk(sub, child, child_old, _join(path, key), has_old=child_old is not MISSING)

    def walk_list(self, node: Node, value: list[Any], old: list[Any] | None, path: str) -> None:
        items = node.items
        assert items is not None
        old_by_key: dict[tuple[Any, ...], Any] = {}
        if old is not None and node.list_type == "map":
            for entry in old:
                if isinstance(entry, dict):
                    old_by_key[node.map_key(entry)] = entry
        if not items.needs_validation:
            return
        for position, item in enumerate(value):
            child_old: Any = MISSING
            if old_by_key and isinstance(item, dict):
                child_old = old_by_key.get(node.map_key(item), MISSING)
            self.walk(items, item, child_old, f"{path}[{position}]", has_old=child_old is not MISSING)

    def run_rules(self, node: Node, value: Any, old: Any, path: str, *, has_old: bool) -> None:
        cel_self: Any = MISSING
        ratchet: bool | None = None  # whether the value is unchanged; computed only if a rule fails
        for rule in node.rules:
            if rule.transition and not has_old:
                continue
            if cel_self is MISSING:
                cel_self = node.cel_value(value)
            variables = {"self": cel_self, "oldSelf": node.cel_value(old)} if rule.transition else {"self": cel_self}
            try:
                outcome: Any = rule.program.evaluate(variables)
            except CelError as exc:
                outcome = exc
            if outcome is True:
                continue
            if not rule.transition:
                if ratchet is None:
                    ratchet = _unchanged(value, old, has_old)
                if ratchet:
                    continue
            if isinstance(outcome, CelError):
                detail = f"{outcome} evaluating rule: {rule.text}"
                self.rule_errors.append(invalid(path or _ROOT_PATH, node.type_label, detail))
                continue
            if outcome is not False:
                detail = f"rule did not evaluate to a bool: {rule.text}"
                self.rule_errors.append(invalid(path or _ROOT_PATH, node.type_label, detail))
                continue
            self.rule_errors.append(_rule_error(rule, _rule_message(rule, variables), path, node.type_label))


def _unchanged(value: Any, old: Any, has_old: bool) -> bool:
    """Validation ratcheting: on update, a value equal to its correlated old value is not re-validated."""
    return has_old and json_equal(value, old)


def _rule_message(rule: Rule, variables: dict[str, Any]) -> str:
    """``messageExpression`` when it yields a non-empty string, else ``message``, else ``failed rule: <rule>``."""
    if rule.message_expression is not None:
        try:
            text = rule.message_expression.evaluate(variables)
        except CelError:
            text = None
        if isinstance(text, str) and text.strip():
            return text
    return rule.message or f"failed rule: {rule.text}"


def _type_error(path: str, expected: str, actual: str) -> FieldError:
    detail = f"{path} in body must be of type {expected}: {go_quote(actual)}"
    return field_error(path, "FieldValueTypeInvalid", f"Invalid value: {go_quote(actual)}: {detail}")


def _rule_error(rule: Rule, message: str, path: str, type_label: str) -> FieldError:
    target = _join(path, rule.field_path.lstrip(".")) if rule.field_path else path
    if rule.field_path.startswith("["):
        target = path + rule.field_path
    target = target or _ROOT_PATH
    if rule.reason == "FieldValueForbidden":
        return field_error(target, rule.reason, f"Forbidden: {message}")
    if rule.reason == "FieldValueRequired":
        return field_error(target, rule.reason, f"Required value: {message}")
    if rule.reason == "FieldValueDuplicate":
        return field_error(target, rule.reason, f"Duplicate value: {go_quote(type_label)}")
    return invalid(target, type_label, message)
