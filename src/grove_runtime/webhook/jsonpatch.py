"""The JSON patch (RFC 6902) that turns one JSON document into another, as a defaulting webhook answers.

controller-runtime marshals the defaulted object and diffs it against the raw request; this does the same over
plain JSON values: objects member by member, arrays element by element when their lengths match (defaults are
filled in place), otherwise replaced whole. Paths escape ``~`` and ``/`` per RFC 6901.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_patch"]


def _pointer(parts: list[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _diff(old: Any, new: Any, path: list[str], ops: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": _pointer([*path, key])})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": _pointer([*path, key]), "value": value})
            else:
                _diff(old[key], value, [*path, key], ops)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            _diff(a, b, [*path, str(index)], ops)
        return
    if type(old) is not type(new) or old != new:
        ops.append({"op": "replace", "path": _pointer(path), "value": new})


def create_patch(original: Any, modified: Any) -> list[dict[str, Any]]:
    """Operations that make ``original`` equal to ``modified`` (empty when they are equal)."""
    ops: list[dict[str, Any]] = []
    _diff(original, modified, [], ops)
    return ops
