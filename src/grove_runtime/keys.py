"""The work-item vocabulary shared by queues, handlers and reconcilers.

Reconciliation is level-based: a reconciler receives only an :class:`ObjectKey` (never an event or an object) and
re-reads the world from the cache. It answers with a :class:`Result` (``requeue_after`` for waiting on time) or
raises: any exception means "retry with backoff", :class:`TerminalError` means "record it, do not retry".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    """Namespace and name of one object; ``namespace`` is ``""`` for cluster-scoped kinds.

    Keys are hashed millions of times by stores and queues, so the hash is computed once and equality is
    hand-written (the generated ones rebuild tuples on every call).
    """

    namespace: str
    name: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.namespace, self.name)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[ObjectKey], tuple[str, str]]:
        # Re-hash on unpickling: str hashes differ between processes.
        return (ObjectKey, (self.namespace, self.name))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not ObjectKey:
            return NotImplemented
        assert isinstance(other, ObjectKey)
        return self._hash == other._hash and self.name == other.name and self.namespace == other.namespace

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectKey:
        """Key of a plain object dict (reads ``metadata.namespace`` and ``metadata.name``)."""
        meta = obj.get("metadata") or {}
        return cls(str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    @classmethod
    def parse(cls, text: str) -> ObjectKey:
        """Inverse of ``str(key)``: ``"ns/name"`` or ``"name"`` for cluster-scoped objects."""
        namespace, sep, name = text.partition("/")
        return cls(namespace, name) if sep else cls("", namespace)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Result:
    """Outcome of a successful reconcile; ``requeue_after`` (seconds) asks to be called again later."""

    requeue_after: float | None = None


class TerminalError(Exception):
    """A reconcile failure that retrying cannot fix: it is logged and counted, and the key is forgotten."""
