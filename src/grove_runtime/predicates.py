"""Event filters applied before an event becomes a key, so controllers skip work that cannot change anything.

Mirrors controller-runtime's ``predicate`` package: :data:`GENERATION_CHANGED` drops status-only updates,
:data:`LABELS_CHANGED` and :data:`RESOURCE_VERSION_CHANGED` do what they say, and :func:`predicate` builds a
custom one from plain functions. Predicates see the raw object dicts and must not mutate them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

Obj = dict[str, Any]


class Predicate(Protocol):
    """Decides per event kind whether an event should reach the event handler."""

    def create(self, obj: Obj) -> bool:
        """Keep an add event?"""
        ...

    def update(self, old: Obj, new: Obj) -> bool:
        """Keep an update event?"""
        ...

    def delete(self, obj: Obj) -> bool:
        """Keep a delete event?"""
        ...


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


@dataclass(frozen=True, slots=True)
class FuncPredicate:
    """A predicate from optional functions; a missing function lets the event through."""

    on_create: Callable[[Obj], bool] | None = None
    on_update: Callable[[Obj, Obj], bool] | None = None
    on_delete: Callable[[Obj], bool] | None = None

    def create(self, obj: Obj) -> bool:
        """Apply ``on_create``."""
        return self.on_create(obj) if self.on_create else True

    def update(self, old: Obj, new: Obj) -> bool:
        """Apply ``on_update``."""
        return self.on_update(old, new) if self.on_update else True

    def delete(self, obj: Obj) -> bool:
        """Apply ``on_delete``."""
        return self.on_delete(obj) if self.on_delete else True


def predicate(
    *,
    create: Callable[[Obj], bool] | None = None,
    update: Callable[[Obj, Obj], bool] | None = None,
    delete: Callable[[Obj], bool] | None = None,
) -> FuncPredicate:
    """A custom predicate (e.g. "pod readiness changed")."""
    return FuncPredicate(create, update, delete)


def _generation_changed(old: Obj, new: Obj) -> bool:
    return _meta(old).get("generation") != _meta(new).get("generation")


def _labels_changed(old: Obj, new: Obj) -> bool:
    return (_meta(old).get("labels") or {}) != (_meta(new).get("labels") or {})


def _rv_changed(old: Obj, new: Obj) -> bool:
    return _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion")


GENERATION_CHANGED = FuncPredicate(on_update=_generation_changed)
"""Skip updates that did not bump ``metadata.generation`` (status-only or metadata-only writes)."""

LABELS_CHANGED = FuncPredicate(on_update=_labels_changed)
"""Only updates whose labels changed."""

RESOURCE_VERSION_CHANGED = FuncPredicate(on_update=_rv_changed)
"""Skip updates with an unchanged resourceVersion (re-list duplicates)."""


@dataclass(frozen=True, slots=True)
class _AnyOf:
    preds: tuple[Predicate, ...]

    def create(self, obj: Obj) -> bool:
        return any(p.create(obj) for p in self.preds)

    def update(self, old: Obj, new: Obj) -> bool:
        return any(p.update(old, new) for p in self.preds)

    def delete(self, obj: Obj) -> bool:
        return any(p.delete(obj) for p in self.preds)


@dataclass(frozen=True, slots=True)
class _AllOf:
    preds: tuple[Predicate, ...]

    def create(self, obj: Obj) -> bool:
        return all(p.create(obj) for p in self.preds)

    def update(self, old: Obj, new: Obj) -> bool:
        return all(p.update(old, new) for p in self.preds)

    def delete(self, obj: Obj) -> bool:
        return all(p.delete(obj) for p in self.preds)


def any_of(*preds: Predicate) -> Predicate:
    """Keep an event if any predicate keeps it (e.g. generation *or* labels changed)."""
    return _AnyOf(preds)


def all_of(*preds: Predicate) -> Predicate:
    """Keep an event only if every predicate keeps it."""
    return _AllOf(preds)
