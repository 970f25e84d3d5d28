"""What one reconcile carries: the operator's shared services (`Deps`) and the owner being reconciled.

Why: upstream Grove gives each owned kind a component with three verbs (existing names, sync, delete) so a
reconciler reads as an ordered list of them. Here a component takes one `SyncContext`, built once per reconcile,
instead of reaching for globals: the caches it may use (`parsed`) belong to the operator that built `Deps`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from grove_operator.config import OperatorConfig
from grove_operator.parsed import ParseMemo
from grove_runtime.cache import Cache
from grove_runtime.client import Client
from grove_runtime.clock import Clock
from grove_runtime.events import EventRecorder
from grove_runtime.expectations import Expectations
from grove_runtime.keys import ObjectKey, Result

__all__ = ["Component", "Deps", "Obj", "Step", "SyncContext"]

T = TypeVar("T")
Obj = dict[str, Any]
"""A Kubernetes object as the cache and the API client hand it over: plain JSON."""


@dataclass(frozen=True, slots=True)
class Deps:
    """The services every reconciler of one operator shares (built once by the wiring)."""

    client: Client
    cache: Cache
    recorder: EventRecorder
    config: OperatorConfig
    expectations: Expectations[ObjectKey]
    clock: Clock
    parsed: ParseMemo


@dataclass
class SyncContext(Generic[T]):
    """One reconcile of one owner: the operator's services, its key, cached object, parsed model and start time.

    `extra` carries what an early step derived for later ones (the parent PodCliqueSet, the topology bindings);
    `requeue` is a wait that does not stop the later steps (more children to create next round).
    """

    client: Client
    cache: Cache
    recorder: EventRecorder
    expectations: Expectations[ObjectKey]
    config: OperatorConfig
    parsed: ParseMemo
    key: ObjectKey
    raw: Obj
    owner: T
    now: datetime
    extra: dict[str, Any] = field(default_factory=dict)
    requeue: Result | None = None

    @classmethod
    def of(cls, deps: Deps, key: ObjectKey, raw: Obj, owner: T) -> SyncContext[T]:
        """The context of one reconcile of `owner`, starting now."""
        return cls(
            deps.client, deps.cache, deps.recorder, deps.expectations, deps.config, deps.parsed, key, raw, owner,
            deps.clock.now(),
        )  # fmt: skip

    @property
    def namespace(self) -> str:
        """Namespace of the owner."""
        return self.key.namespace

    def requeue_after(self, seconds: float) -> None:
        """Ask for another reconcile after `seconds` without stopping the later steps (the earliest ask wins)."""
        if seconds <= 0:
            return
        if self.requeue is None or (self.requeue.requeue_after or 0.0) > seconds:
            self.requeue = Result(requeue_after=seconds)


Step = Callable[[SyncContext[T]], Awaitable[Result | None]]
"""One spec step of a reconciler: `None` to go on, a `Result` to stop the later steps and requeue."""


class Component(Protocol[T]):
    """One kind of child object an owner manages: what exists, make it right, remove it."""

    @property
    def name(self) -> str:
        """The component's name (error codes are derived from it)."""
        ...

    def existing_names(self, ctx: SyncContext[T]) -> list[str]:
        """Names of the children of this kind that currently exist (from the cache)."""
        ...

    async def sync(self, ctx: SyncContext[T]) -> Result | None:
        """Create, patch or delete children; a `Result` asks the reconciler to stop later groups and requeue."""
        ...

    async def delete(self, ctx: SyncContext[T]) -> None:
        """Delete every child of this kind (explicit cleanup; normally garbage collection does it)."""
        ...
