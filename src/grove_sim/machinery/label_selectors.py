"""Label selectors (``app=web,tier in (a,b),!canary``) with the grammar and validation of the real kube-apiserver.

List and watch requests filter through these on every object, so a selector is parsed once into an immutable
object whose ``matches`` is a short loop over precompiled requirements. Error messages become the ``message`` of a
400 BadRequest ``Status`` verbatim, so they follow upstream wording where clients (kubectl) show them to users.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["LabelSelector", "SelectorError", "label_selector_from_dict", "parse_label_selector"]


class SelectorError(ValueError):
    """A label or field selector that the real server would reject with 400 BadRequest."""


_NAME_RE: Final = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
_DNS1123_SUBDOMAIN_RE: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_INT_RE: Final = re.compile(r"-?[0-9]+\Z")

# Operator codes of a compiled requirement.
_EQ: Final = 0
_NE: Final = 1
_IN: Final = 2
_NOTIN: Final = 3
_EXISTS: Final = 4
_NOT_EXISTS: Final = 5
_GT: Final = 6
_LT: Final = 7

_OP_TEXT: Final = {_EQ: "=", _NE: "!=", _GT: ">", _LT: "<"}


def _validate_key(key: str) -> None:
    """Reject a label key that is not a qualified name (``[prefix/]name``), as the real server does."""
    prefix, slash, name = key.rpartition("/")
    if not slash:
        prefix, name = "", key
    problems: list[str] = []
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    elif not _NAME_RE.match(name):
        problems.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    if slash:
        if not prefix:
            problems.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            problems.append("prefix part must be no more than 253 characters")
        elif not _DNS1123_SUBDOMAIN_RE.match(prefix):
            problems.append(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character"
            )
    if problems:
        raise SelectorError(f'unable to parse requirement: key: Invalid value: "{key}": {"; ".join(problems)}')


def _validate_value(value: str) -> None:
    """Reject a label value that is too long or has characters a label value may not hold."""
    if len(value) > 63:
        raise SelectorError(
            f'unable to parse requirement: values[0][{value}]: Invalid value: "{value}": '
            "must be no more than 63 characters"
        )
    if value and not _NAME_RE.match(value):
        raise SelectorError(
            f'unable to parse requirement: values[0][{value}]: Invalid value: "{value}": a valid label must be an '
            "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )


class _Requirement:
    """One compiled ``key op value(s)`` term: ``value`` for =/!=, ``values`` for in/notin, ``number`` for >/<."""

    __slots__ = ("key", "number", "op", "value", "values")

    def __init__(
        self, key: str, op: int, *, value: str = "", values: frozenset[str] = frozenset(), number: int = 0
    ) -> None:
        self.key = key
        self.op = op
        self.value = value
        self.values = values
        self.number = number

    def __str__(self) -> str:
        if self.op == _EXISTS:
            return self.key
        if self.op == _NOT_EXISTS:
            return f"!{self.key}"
        if self.op in (_IN, _NOTIN):
            return f"{self.key} {'in' if self.op == _IN else 'notin'} ({','.join(sorted(self.values))})"
        if self.op in (_GT, _LT):
            return f"{self.key}{_OP_TEXT[self.op]}{self.number}"
        return f"{self.key}{_OP_TEXT[self.op]}{self.value}"


class LabelSelector:
    """A parsed label selector: an AND of requirements, matched against an object's ``metadata.labels``."""

    __slots__ = ("_reqs",)

    def __init__(self, requirements: Iterable[_Requirement] = ()) -> None:
        self._reqs: tuple[_Requirement, ...] = tuple(sorted(requirements, key=lambda r: (r.key, r.op)))

    @property
    def empty(self) -> bool:
        """True when the selector has no requirements and so selects everything."""
        return not self._reqs

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a label map satisfies every requirement (a missing map counts as no labels)."""
        if labels is None:
            labels = {}
        for req in self._reqs:
            op = req.op
            value = labels.get(req.key)
            if op == _EQ:
                if value != req.value:
                    return False
            elif op == _NE:
                if value == req.value:
                    return False
            elif op == _IN:
                if value is None or value not in req.values:
                    return False
            elif op == _NOTIN:
                if value is not None and value in req.values:
                    return False
            elif op == _EXISTS:
                if value is None:
                    return False
            elif op == _NOT_EXISTS:
                if value is not None:
                    return False
            else:
                if value is None or not _INT_RE.match(value):
                    return False
                number = int(value)
                if (op == _GT and number <= req.number) or (op == _LT and number >= req.number):
                    return False
        return True

    def required_value(self, key: str) -> str | None:
        """The exact value an ``=`` requirement demands for ``key``, so callers can use an index."""
        for req in self._reqs:
            if req.key == key and req.op == _EQ:
                return req.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self._reqs)

    def __repr__(self) -> str:
        return f"LabelSelector({str(self)!r})"


_LABEL_TOKEN_RE: Final = re.compile(r"\s*(?:(!=|==|=|!|\(|\)|,|>|<)|([^\s!=(),<>]+))")


def _tokenize(text: str) -> list[str]:
    """Split a label selector into operator, punctuation and identifier tokens, as the upstream lexer does."""
    tokens: list[str] = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        match = _LABEL_TOKEN_RE.match(text, pos)
        if match is None:  # pragma: no cover - the pattern accepts every non-blank character
            raise SelectorError(f"unable to parse requirement: unexpected character at position {pos}")
        tokens.append(match.group(1) or match.group(2))
        pos = match.end()
    return tokens


_SPECIAL: Final = frozenset({"!=", "==", "=", "!", "(", ")", ",", ">", "<"})


class _LabelParser:
    """Recursive-descent parser over the token list; one instance per parse."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> str | None:
        """The next token without consuming it (None at the end)."""
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        """Consume and return the next token (None at the end)."""
        token = self.peek()
        self.pos += 1
        return token

    def error(self, found: str | None, expected: str) -> SelectorError:
        """A parse error in the upstream wording."""
        where = "end of string" if found is None else repr(found)
        return SelectorError(f"unable to parse requirement: found {where}, expected: {expected}")

    def parse(self) -> list[_Requirement]:
        """Parse ``requirement ("," requirement)*`` to the end of the input."""
        requirements: list[_Requirement] = []
        while True:
            requirements.append(self.requirement())
            token = self.take()
            if token is None:
                return requirements
            if token != ",":
                raise self.error(token, "',' or 'end of string'")

    def identifier(self, expected: str) -> str:
        """Consume a key or value token; operators and punctuation are errors."""
        token = self.take()
        if token is None or token in _SPECIAL:
            raise self.error(token, expected)
        return token

    def requirement(self) -> _Requirement:
        """Parse ``["!"] key [op value | ("in" | "notin") "(" values ")"]``."""
        negated = self.peek() == "!"
        if negated:
            self.take()
        key = self.identifier("identifier")
        _validate_key(key)
        token = self.peek()
        if token is None or token == ",":
            return _Requirement(key, _NOT_EXISTS if negated else _EXISTS)
        if negated:
            raise self.error(token, "',' or 'end of string'")
        self.take()
        if token in ("in", "notin"):
            values = self.value_set()
            if not values:  # pragma: no cover - "()" yields {""} upstream, so a set is never empty here
                raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
            return _Requirement(key, _IN if token == "in" else _NOTIN, values=frozenset(values))
        if token in ("=", "=="):
            return _Requirement(key, _EQ, value=self.single_value())
        if token == "!=":
            return _Requirement(key, _NE, value=self.single_value())
        if token in (">", "<"):
            value = self.single_value()
            if not _INT_RE.match(value):
                raise SelectorError(
                    f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {value!r}"
                )
            return _Requirement(key, _GT if token == ">" else _LT, number=int(value))
        raise self.error(token, "'=', '!=', '==', 'in', notin'")

    def single_value(self) -> str:
        """The value after =, == or != (empty when the term ends right after the operator)."""
        token = self.peek()
        if token is None or token == ",":
            return ""
        value = self.identifier("identifier")
        _validate_value(value)
        return value

    def value_set(self) -> set[str]:
        """Parse ``"(" value ("," value)* ")"``; an empty slot is the empty value, as upstream."""
        token = self.take()
        if token != "(":
            raise self.error(token, "'('")
        values: set[str] = set()
        expect_value = True
        while True:
            token = self.take()
            if token == ")":
                if expect_value:
                    values.add("")
                return values
            if token == ",":
                if expect_value:
                    values.add("")
                expect_value = True
                continue
            if token is None or token in _SPECIAL or not expect_value:
                raise self.error(token, "',' or ')'")
            _validate_value(token)
            values.add(token)
            expect_value = False


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the ``labelSelector`` query syntax (``=``, ``==``, ``!=``, ``in``, ``notin``, ``key``, ``!key``, ``>``,
    ``<``; commas AND terms); an empty or blank string selects everything."""
    if not text.strip():
        return LabelSelector()
    return LabelSelector(_LabelParser(text).parse())


def label_selector_from_dict(sel: Mapping[str, Any]) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` (``matchLabels`` plus ``matchExpressions``); an empty one selects
    everything, as ``LabelSelectorAsSelector`` does."""
    requirements: list[_Requirement] = []
    match_labels = sel.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError("matchLabels must be a map of strings")
    for key, value in match_labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise SelectorError("matchLabels must be a map of strings")
        _validate_key(key)
        _validate_value(value)
        requirements.append(_Requirement(key, _EQ, value=value))
    for expr in sel.get("matchExpressions") or ():
        if not isinstance(expr, Mapping):
            raise SelectorError("matchExpressions entries must be objects")
        key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(key, str):
            raise SelectorError("matchExpressions key must be a string")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SelectorError("matchExpressions values must be a list of strings")
        _validate_key(key)
        if operator in ("In", "NotIn"):
            if not values:
                raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
            for value in values:
                _validate_value(value)
            requirements.append(_Requirement(key, _IN if operator == "In" else _NOTIN, values=frozenset(values)))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                raise SelectorError("values set must be empty for exists and does not exist")
            requirements.append(_Requirement(key, _EXISTS if operator == "Exists" else _NOT_EXISTS))
        else:
            raise SelectorError(f'"{operator}" is not a valid label selector operator')
    return LabelSelector(requirements)
