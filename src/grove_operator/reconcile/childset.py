"""The child-set component: an owner's children of one kind kept equal to a desired set.

Why one component: PodCliques, scaling groups, headless Services, HPAs, PodGangs and scaling-group members are all
"one child per slot of the spec" (a replica index, a clique, a scaling-group replica), and each used to compute
its own desired list, diff it, create, patch and delete, with its own mistakes (Services were never pruned).

Why desired sets are never listed whole: the slots come from numbers in a spec (`replicas: 100000000` is valid
by the CRD), and a list, dict or range materialised from such a number grows the operator's memory before a
single object exists. So a child set works from what exists plus a bounded window of what to create next:

* every cached child is mapped back to its slot (`key_of`) and kept if the slot is still `wanted`, else deleted;
* the slots are enumerated lazily in creation order (`candidates`), skipping the ones that exist, until
  `window` missing children are found; if more remain, the owner is requeued to create the next window.

The work of one sync is therefore proportional to what exists plus `window`, whatever the spec says.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, TypeVar

from grove_operator.desired.layout import is_terminating
from grove_operator.reconcile.compare import in_sync
from grove_operator.reconcile.concurrency import bounded
from grove_operator.reconcile.context import SyncContext
from grove_operator.reconcile.ownership import cached
from grove_operator.reconcile.writes import create_or_patch, delete_if_exists
from grove_operator.syncmemo import SyncMemo
from grove_runtime.keys import Result
from grove_runtime.resources import ResourceType

__all__ = ["CONTINUE_AFTER", "CREATE_WINDOW", "ChildPlan", "ChildSet"]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
Obj = dict[str, Any]

CREATE_WINDOW = 1000
"""Children a child set creates at most per sync; a 500-replica PodCliqueSet still needs a single pass."""

CONTINUE_AFTER = 0.1
"""Seconds before the owner is reconciled again when a window was not enough."""


@dataclass
class ChildPlan(Generic[K]):
    """One sync's work: children to delete, (slot, cached object or None) to converge, and whether more remain."""

    stale: list[str] = field(default_factory=list)
    targets: list[tuple[K, Obj | None]] = field(default_factory=list)
    more: bool = False


class ChildSet(ABC, Generic[T, K]):
    """Create missing children, patch drifted ones, delete the ones whose slot is gone.

    Subclasses say which children exist, which slot each fills, which slots are wanted and in what order, and how
    a child is built. `noun` names the kind in Events (`<noun>Created` / `<noun>Deleted`); None records none.
    With a `fingerprint`, a child found in sync is not built again while it and the fingerprint are unchanged.
    """

    name: str
    rt: ResourceType
    noun: str | None = None
    patch_fields: tuple[str, ...] = ("spec",)
    window: int = CREATE_WINDOW

    def __init__(self) -> None:
        self.memo = SyncMemo()

    @abstractmethod
    def existing(self, ctx: SyncContext[T]) -> Iterable[Obj]:
        """The cached children of the owner."""

    @abstractmethod
    def key_of(self, ctx: SyncContext[T], child: Obj) -> K | None:
        """The slot an existing child fills (None: it fills none and is stale)."""

    @abstractmethod
    def wanted(self, ctx: SyncContext[T], key: K) -> bool:
        """Whether the spec still has slot `key` (constant time: never by listing the slots)."""

    @abstractmethod
    def candidates(self, ctx: SyncContext[T]) -> Iterable[K]:
        """Every wanted slot, lazily, in the order children are created."""

    @abstractmethod
    def child_name(self, ctx: SyncContext[T], key: K) -> str:
        """The name of the child of slot `key`."""

    @abstractmethod
    def build(self, ctx: SyncContext[T], key: K, existing: Obj | None) -> Obj:
        """The desired child of slot `key` (`existing`: the cached one, whose live fields it may keep)."""

    def fingerprint(self, ctx: SyncContext[T]) -> Hashable | None:
        """What the desired children depend on besides their own cached object; None disables the memo."""
        return None

    def existing_names(self, ctx: SyncContext[T]) -> list[str]:
        """Names of the cached children."""
        return [str(o["metadata"]["name"]) for o in self.existing(ctx)]

    def plan(self, ctx: SyncContext[T]) -> ChildPlan[K]:
        """Sort the cached children into kept and stale, then find the next `window` missing slots."""
        plan: ChildPlan[K] = ChildPlan()
        names: set[str] = set()
        for child in self.existing(ctx):
            name = str(child["metadata"]["name"])
            names.add(name)
            key = self.key_of(ctx, child)
            if key is not None and self.wanted(ctx, key):
                plan.targets.append((key, child))
            elif not is_terminating(child):
                plan.stale.append(name)
        plan.stale.sort(reverse=True)
        missing = 0
        for key in self.candidates(ctx):
            name = self.child_name(ctx, key)
            if name in names:
                continue
            if missing == self.window:
                plan.more = True
                break
            missing += 1
            plan.targets.append((key, cached(ctx, self.rt, name)))
        return plan

    async def sync(self, ctx: SyncContext[T]) -> Result | None:
        """Delete the stale children, then create or patch the others (bounded concurrency)."""
        plan = self.plan(ctx)
        await self.delete_stale(ctx, plan)
        fingerprint = self.fingerprint(ctx)
        writes: list[Callable[[], Awaitable[None]]] = []
        for key, existing in plan.targets:
            memo_key = (ctx.namespace, self.child_name(ctx, key))
            if (
                existing is not None
                and fingerprint is not None
                and self.memo.unchanged(memo_key, existing, fingerprint)
            ):
                continue
            desired = self.build(ctx, key, existing)
            if in_sync(desired, existing, component=self.name, patch_fields=self.patch_fields):
                if fingerprint is not None:
                    self.memo.in_sync(memo_key, existing, fingerprint)
                continue
            self.memo.forget(memo_key)
            writes.append(partial(self.write, ctx, desired, existing))
        await bounded(writes)
        if plan.more:
            ctx.requeue_after(CONTINUE_AFTER)
        return None

    async def write(self, ctx: SyncContext[T], desired: Obj, existing: Obj | None) -> None:
        """Create or patch one child; a creation is told in an Event on the owner."""
        outcome, _ = await create_or_patch(
            ctx, self.rt, desired, existing, component=self.name, patch_fields=self.patch_fields
        )
        if outcome == "created" and self.noun is not None:
            name = desired["metadata"]["name"]
            await ctx.recorder.normal(ctx.raw, f"{self.noun}Created", f"Created {self.noun} {name}")

    async def delete_stale(self, ctx: SyncContext[T], plan: ChildPlan[K]) -> None:
        """Delete the children whose slot is gone (those already terminating are not deleted again)."""
        await bounded(partial(self._delete_one, ctx, name) for name in plan.stale)

    async def _delete_one(self, ctx: SyncContext[T], name: str) -> None:
        if await delete_if_exists(ctx.client, self.rt, name, ctx.namespace) and self.noun is not None:
            await ctx.recorder.normal(ctx.raw, f"{self.noun}Deleted", f"Deleted {self.noun} {name}")

    async def delete(self, ctx: SyncContext[T]) -> None:
        """Delete every child (explicit cleanup; normally garbage collection does it)."""
        await bounded(partial(self._delete_one, ctx, name) for name in self.existing_names(ctx))
