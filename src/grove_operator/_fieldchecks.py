"""Field errors and syntax checks used by the PodCliqueSet validation: DNS names, labels, durations, cycles.

They mirror apimachinery's validators closely enough to reject what a real API server would, and are kept apart
from the Grove-specific rules in `validation` so those read as a list of rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ErrorType",
    "FieldError",
    "FieldErrors",
    "cycles",
    "dns_label_error",
    "dns_subdomain_error",
    "go_duration_seconds",
    "label_key_error",
    "label_value_error",
]

ErrorType = Literal["Invalid", "Required", "Duplicate", "NotFound", "Forbidden"]


@dataclass(frozen=True)
class FieldError:
    """One rule violation: where, what kind, and why (mirrors apimachinery's field.Error)."""

    field: str
    type: ErrorType
    detail: str

    def __str__(self) -> str:
        return f"{self.field}: {self.type}: {self.detail}"


class FieldErrors(list[FieldError]):
    """A list of field errors with a terse `add`."""

    def add(self, field: str, type_: ErrorType, detail: str) -> None:
        """Record one violation."""
        self.append(FieldError(field, type_, detail))


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def dns_subdomain_error(value: str) -> str | None:
    """Why `value` is not an RFC 1123 subdomain, or None."""
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _DNS_SUBDOMAIN.match(value):
        return "must be a lowercase RFC 1123 subdomain"
    return None


def dns_label_error(value: str) -> str | None:
    """Why `value` is not an RFC 1123 label, or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS_LABEL.match(value):
        return "must be a lowercase RFC 1123 label"
    return None


def label_key_error(key: str) -> str | None:
    """Why `key` is not a qualified label/annotation key (`[prefix/]name`), or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and dns_subdomain_error(prefix) is not None:
        return "prefix must be a DNS subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return "name part must be a qualified name of at most 63 characters"
    return None


def label_value_error(value: str) -> str | None:
    """Why `value` is not a valid label value, or None."""
    if value and (len(value) > 63 or not _QUALIFIED_NAME.match(value)):
        return "must be empty or a qualified name of at most 63 characters"
    return None


def go_duration_seconds(text: str) -> float | None:
    """Parse a Go `time.Duration` string (`1h30m`, `10s`, `-5m`); None when malformed."""
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    if body == "0":
        return 0.0
    position, total = 0, 0.0
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    return sign * total if body else None


def cycles(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted; self-loops are not reported."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in graph:
                continue
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found
