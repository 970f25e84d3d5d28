"""The JSONPath subset of ``k8s.io/client-go/util/jsonpath`` that CRDs use for printer columns and scale paths.

``additionalPrinterColumns[].jsonPath``, ``scale.specReplicasPath`` and friends are evaluated by the apiserver with
missing keys allowed (a missing value is simply no result). Supported: ``.field`` (with ``\\.`` escapes),
``['key']``/``["key"]``, ``[n]``/``[-n]``, slices ``[a:b:c]``, ``[*]``/``.*``, unions ``[0,2]``/``['a','b']``,
recursive descent ``..field`` and filters ``[?(@.a.b == "x")]`` with ``== != < <= > >=`` or bare existence
``[?(@.a)]``. An expression may be wrapped in ``{}`` as kubectl writes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

__all__ = ["JsonPath", "JsonPathError", "compile_jsonpath"]

Step = Callable[[list[Any]], list[Any]]


class JsonPathError(ValueError):
    """The expression is not valid JSONPath (the apiserver rejects such a CRD)."""


_FILTER_RE: Final = re.compile(r"^\s*@((?:\.[^.\s=!<>]+|\[[^\]]*\])*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*$")
_SLICE_RE: Final = re.compile(r"^\s*(-?\d*)\s*:\s*(-?\d*)\s*(?::\s*(-?\d*)\s*)?$")
_MISSING: Final = object()


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return list(value)
    return []


def _walk(value: Any) -> Iterator[Any]:
    yield value
    for child in _children(value):
        yield from _walk(child)


def _field(name: str) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if isinstance(value, dict) and name in value:
                out.append(value[name])
        return out

    return step


def _wildcard(values: list[Any]) -> list[Any]:
    return [child for value in values for child in _children(value)]


def _recursive(name: str | None) -> Step:
    def step(values: list[Any]) -> list[Any]:
        nodes = [node for value in values for node in _walk(value)]
        if name is None:
            return nodes
        return [node[name] for node in nodes if isinstance(node, dict) and name in node]

    return step


def _index(position: int) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if isinstance(value, list) and -len(value) <= position < len(value):
                out.append(value[position])
        return out

    return step


def _slice(start: int | None, stop: int | None, stride: int | None) -> Step:
    if stride == 0:
        raise JsonPathError("step cannot be 0")

    def step(values: list[Any]) -> list[Any]:
        return [item for value in values if isinstance(value, list) for item in value[start:stop:stride]]

    return step


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.startswith("@"):
        return compile_jsonpath(text[1:] or ".")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonPathError(f"unrecognized filter operand {text!r}") from exc


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "==":
        return bool(left == right) and isinstance(left, bool) == isinstance(right, bool)
    if op == "!=":
        return not _compare("==", left, right)
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right))
    if not numeric and not (isinstance(left, str) and isinstance(right, str)):
        return False
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _filter(body: str) -> Step:
    match = _FILTER_RE.match(body)
    if match is None:
        raise JsonPathError(f"unrecognized filter {body!r}")
    path = compile_jsonpath(match.group(1) or ".")
    op = match.group(2)
    right = _literal(match.group(3)) if op else None

    def keep(item: Any) -> bool:
        found = path.find(item)
        if op is None:
            return bool(found)
        if not found:
            return False
        rights = right.find(item) if isinstance(right, JsonPath) else [right]
        return bool(rights) and _compare(op, found[0], rights[0])

    def step(values: list[Any]) -> list[Any]:
        return [item for value in values for item in _children(value) if keep(item)]

    return step


def _bracket(body: str) -> Step:
    body = body.strip()
    if body == "*":
        return _wildcard
    if body.startswith("?(") and body.endswith(")"):
        return _filter(body[2:-1])
    slice_match = _SLICE_RE.match(body)
    if slice_match is not None:
        start, stop, stride = (int(g) if g else None for g in slice_match.groups())
        return _slice(start, stop, stride)
    parts = [part.strip() for part in _split_union(body)]
    steps: list[Step] = []
    for part in parts:
        if len(part) >= 2 and part[0] == part[-1] and part[0] in "'\"":
            steps.append(_field(part[1:-1]))
        else:
            try:
                steps.append(_index(int(part)))
            except ValueError as exc:
                raise JsonPathError(f"invalid array index {part!r}") from exc
    if len(steps) == 1:
        return steps[0]
    return lambda values: [found for value in values for step in steps for found in step([value])]


def _split_union(body: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    for char in body:
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _read_name(text: str, pos: int) -> tuple[str, int]:
    name: list[str] = []
    while pos < len(text) and text[pos] not in ".[":
        if text[pos] == "\\" and pos + 1 < len(text):
            name.append(text[pos + 1])
            pos += 2
            continue
        name.append(text[pos])
        pos += 1
    return "".join(name), pos


def _bracket_end(text: str, pos: int) -> int:
    depth, quote = 0, ""
    for i in range(pos, len(text)):
        char = text[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return i
    raise JsonPathError(f"unclosed bracket in {text!r}")


def _parse(text: str) -> list[Step]:
    steps: list[Step] = []
    pos = 0
    if text.startswith("$"):
        pos = 1
    while pos < len(text):
        if text.startswith("..", pos):
            name, pos = _read_name(text, pos + 2)
            steps.append(_recursive(None if name in ("", "*") else name))
        elif text[pos] == ".":
            name, pos = _read_name(text, pos + 1)
            if name == "*":
                steps.append(_wildcard)
            elif name:
                steps.append(_field(name))
        elif text[pos] == "[":
            end = _bracket_end(text, pos)
            steps.append(_bracket(text[pos + 1 : end]))
            pos = end + 1
        else:
            name, pos = _read_name(text, pos)
            steps.append(_field(name))
    return steps


class JsonPath:
    """A compiled JSONPath expression; :meth:`find` returns every match (empty when the path is missing)."""

    __slots__ = ("_steps", "source")

    def __init__(self, source: str, steps: list[Step]) -> None:
        self.source = source
        self._steps = steps

    def find(self, obj: Any) -> list[Any]:
        """All values the path selects in ``obj``, in document order."""
        values = [obj]
        for step in self._steps:
            values = step(values)
            if not values:
                break
        return values

    def first(self, obj: Any, default: Any = None) -> Any:
        """The first match or ``default``: what printer columns and scale paths use."""
        found = self.find(obj)
        return found[0] if found else default

    def __repr__(self) -> str:
        return f"JsonPath({self.source!r})"


def compile_jsonpath(expr: str) -> JsonPath:
    """Compile ``expr`` (``.spec.replicas``, ``{.status.conditions[?(@.type=="Ready")].status}``...)."""
    text = expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if not text:
        raise JsonPathError("empty JSONPath expression")
    return JsonPath(expr, _parse(text))
