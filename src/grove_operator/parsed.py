"""Parsed models of informer-cache objects, memoised per object identity.

Why: a 500-replica PodCliqueSet reconcile reads 500 PodCliques and 500 PodGangs from the cache and used to parse
each one with pydantic on every reconcile, although almost none had changed since the last one (pydantic
validation was the largest single cost in the operator's profile). Informer objects are shared and never mutated
(a change replaces the dict), so a parse is valid exactly as long as the *same dict object* is in the cache: the
memo is keyed by kind and object name and holds the dict it parsed, and a different dict under that name is parsed
afresh. Parsed models are shared too: callers must treat them as read-only (use ``model_copy``), as they do.

One `ParseMemo` belongs to one operator (the wiring builds it and hands it to every reconciler, so a PodClique
parsed by the PodCliqueSet controller is not parsed again by its own). It holds at most one entry per
(parser, namespace, name), and drops an object's entries when its informer sees it deleted (the wiring registers
`ParseMemo.on_delete` with every informer): an operator's memory must not grow with every object it ever saw.
`max_entries` is only a backstop (it clears the memo when exceeded).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

import pydantic
from pydantic import BaseModel

from grove_api import ClusterTopologyBinding, PodCliqueSet
from grove_operator import defaults

__all__ = ["MAX_ENTRIES", "ParseMemo", "defaulted_podcliqueset", "parsed_topologies"]

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")
Obj = dict[str, Any]
MAX_ENTRIES = 200_000


def defaulted_podcliqueset(raw: Obj) -> PodCliqueSet:
    """The PCS as the defaulting webhook would have stored it (defaults are idempotent)."""
    return PodCliqueSet.model_validate(defaults.default_podcliqueset(raw))


def _key(tag: Hashable, raw: Obj) -> tuple[Hashable, str, str]:
    meta = raw.get("metadata")
    if not isinstance(meta, dict):
        return (tag, "", "")
    return (tag, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class ParseMemo:
    """The last parse of each cached object, reused while the cache holds that very dict."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._max_entries = max_entries
        self._entries: dict[tuple[Hashable, str, str], tuple[Obj, Any]] = {}
        self._tags: set[Hashable] = set()

    def parse_with(self, tag: Hashable, parser: Callable[[Obj], R], raw: Obj) -> R:
        """`parser(raw)`, reused while `raw` (the very same dict) is what was last parsed under `tag` and its name.

        `tag` names the parser (two parsers of one kind must use different tags). Exceptions are not memoised.
        """
        key = _key(tag, raw)
        hit = self._entries.get(key)
        if hit is not None and hit[0] is raw:
            value: R = hit[1]
            return value
        value = parser(raw)
        if len(self._entries) >= self._max_entries:
            self._entries.clear()
        self._entries[key] = (raw, value)
        self._tags.add(tag)
        return value

    def forget(self, namespace: str, name: str) -> None:
        """Drop every parse of objects called `name` in `namespace` (of any kind: another kind's entry of the same
        name costs one parse again, nothing more)."""
        for tag in self._tags:
            self._entries.pop((tag, namespace, name), None)

    # An informer handler (`Informer.add_handler`): only deletions matter; a changed object is a different dict.
    def on_add(self, obj: Obj) -> None:
        """Nothing to do: a new object is parsed when first read."""

    def on_update(self, old: Obj, new: Obj) -> None:
        """Nothing to do: the new dict misses the memo and replaces the entry."""

    def on_delete(self, obj: Obj) -> None:
        """The object is gone: forget its parses."""
        _, namespace, name = _key(None, obj)
        self.forget(namespace, name)

    def parse(self, model: type[M], raw: Obj) -> M:
        """`model.model_validate(raw)`, memoised on the identity of `raw` (see the module docstring)."""
        return self.parse_with(model, model.model_validate, raw)

    def podcliqueset(self, raw: Obj) -> PodCliqueSet:
        """`defaulted_podcliqueset(raw)`, memoised like `parse`."""
        return self.parse_with(defaulted_podcliqueset, defaulted_podcliqueset, raw)

    def clear(self) -> None:
        """Forget every memoised parse (tests; never needed for correctness)."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def held(self, namespace: str) -> int:
        """Entries of objects in `namespace` (tests: none may outlive the objects)."""
        return sum(1 for key in self._entries if key[1] == namespace)


def parsed_topologies(objects: Iterable[Obj], memo: ParseMemo) -> dict[str, ClusterTopologyBinding]:
    """The ClusterTopologyBindings by name (ones that do not parse are left out: nothing can use them)."""
    topologies: dict[str, ClusterTopologyBinding] = {}
    for obj in objects:
        try:
            topologies[str(obj["metadata"]["name"])] = memo.parse(ClusterTopologyBinding, obj)
        except pydantic.ValidationError:
            continue
    return topologies
