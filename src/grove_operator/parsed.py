"""Parsed models of informer-cache objects, memoised per object identity.

Why: a 500-replica PodCliqueSet reconcile reads 500 PodCliques and 500 PodGangs from the cache and used to parse
each one with pydantic on every reconcile, although almost none had changed since the last one (pydantic
validation was the largest single cost in the operator's profile). Informer objects are shared and never mutated
(a change replaces the dict), so a parse is valid exactly as long as the *same dict object* is in the cache: the
memo is keyed by kind and object name and holds the dict it parsed, and a different dict under that name is parsed
afresh. Parsed models are shared too: callers must treat them as read-only (use ``model_copy``), as they do.

The memo holds at most one entry per (kind, namespace, name) and is cleared when it exceeds ``MAX_ENTRIES``, so
objects that were deleted cannot pile up.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["MAX_ENTRIES", "clear", "parse", "parse_with"]

M = TypeVar("M", bound=BaseModel)
Obj = dict[str, Any]
MAX_ENTRIES = 200_000

_entries: dict[tuple[Hashable, str, str], tuple[Obj, Any]] = {}


def _key(tag: Hashable, raw: Obj) -> tuple[Hashable, str, str]:
    meta = raw.get("metadata")
    if not isinstance(meta, dict):
        return (tag, "", "")
    return (tag, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def parse_with(tag: Hashable, parser: Callable[[Obj], M], raw: Obj) -> M:
    """`parser(raw)`, reused while `raw` (the very same dict) is what was last parsed under `tag` and its name.

    `tag` names the parser (two parsers of one kind must use different tags). Exceptions are not memoised.
    """
    key = _key(tag, raw)
    hit = _entries.get(key)
    if hit is not None and hit[0] is raw:
        model: M = hit[1]
        return model
    model = parser(raw)
    if len(_entries) >= MAX_ENTRIES:
        _entries.clear()
    _entries[key] = (raw, model)
    return model


def parse(model: type[M], raw: Obj) -> M:
    """`model.model_validate(raw)`, memoised on the identity of `raw` (see the module docstring)."""
    return parse_with(model, model.model_validate, raw)


def clear() -> None:
    """Forget every memoised parse (tests; never needed for correctness)."""
    _entries.clear()
