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
from typing import Any, ClassVar, Generic, TypeVar

from grove_operator.desired.layout import is_terminating, split_indexed_name
from grove_operator.reconcile.compare import in_sync
from grove_operator.reconcile.concurrency import bounded
from grove_operator.reconcile.context import SyncContext
from grove_operator.reconcile.ownership import cached
from grove_operator.reconcile.writes import create_or_patch, delete_if_exists
from grove_operator.syncmemo import SyncMemo
from grove_runtime.keys import ObjectKey, Result
from grove_runtime.resources import ResourceType

__all__ = ["CONTINUE_AFTER", "CREATE_WINDOW", "ChildPlan", "ChildSet", "IndexedChildSet", "IndexedSlots", "Slot"]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
Obj = dict[str, Any]

CREATE_WINDOW = 1000
"""Children a child set creates at most per sync; a 500-replica PodCliqueSet still needs a single pass."""

CONTINUE_AFTER = 0.1
"""Seconds before the owner is reconciled again when a window was not enough."""

MAX_REMEMBERED_DELETIONS = 200_000
"""Bound on the uids of deleted children remembered (forgotten all at once, like the memos)."""


@dataclass
class ChildPlan(Generic[K]):
    """One sync's work: children to delete, (slot, name, cached object or None) to converge, whether more remain."""

    stale: list[Obj] = field(default_factory=list)
    targets: list[tuple[K, str, Obj | None]] = field(default_factory=list)
    more: bool = False


class ChildSet(ABC, Generic[T, K, V]):
    """Create missing children, patch drifted ones, delete the ones whose slot is gone.

    Subclasses say which children exist, which slot each fills, which slots are wanted and in what order, and how
    a child is built; `view` computes once per sync what those answers need (V). `noun` names the kind in Events
    (`<noun>Created` / `<noun>Deleted`); None records none. With a `fingerprint`, a child found in sync is not
    built again while it and the fingerprint are unchanged.
    """

    name: str
    rt: ResourceType
    noun: str | None = None
    patch_fields: tuple[str, ...] = ("spec",)
    window: int = CREATE_WINDOW

    def __init__(self) -> None:
        self.memo = SyncMemo()
        self._deleted: set[str] = set()

    @abstractmethod
    def view(self, ctx: SyncContext[T]) -> V:
        """What the slot questions below need, computed once per sync."""

    @abstractmethod
    def existing(self, ctx: SyncContext[T]) -> Iterable[Obj]:
        """The cached children of the owner."""

    @abstractmethod
    def key_of(self, view: V, child: Obj) -> K | None:
        """The slot an existing child fills (None: it fills none and is stale)."""

    @abstractmethod
    def wanted(self, view: V, key: K) -> bool:
        """Whether the spec still has slot `key` (constant time: never by listing the slots)."""

    @abstractmethod
    def candidates(self, view: V) -> Iterable[K]:
        """Every wanted slot, lazily, in the order children are created."""

    @abstractmethod
    def child_name(self, view: V, key: K) -> str:
        """The name of the child of slot `key`."""

    @abstractmethod
    def build(self, ctx: SyncContext[T], view: V, key: K, existing: Obj | None) -> Obj:
        """The desired child of slot `key` (`existing`: the cached one, whose live fields it may keep)."""

    def slot_count(self, view: V) -> int | None:
        """How many slots are wanted, when that is cheap to count (then a full set skips `candidates`)."""
        return None

    def fingerprint(self, ctx: SyncContext[T]) -> Hashable | None:
        """What the desired children depend on besides their own cached object; None disables the memo."""
        return None

    def leave_as_is(self, ctx: SyncContext[T], existing: Obj) -> bool:
        """Whether an existing child is not to be patched now (someone else replaces it whole)."""
        return False

    def existing_names(self, ctx: SyncContext[T]) -> list[str]:
        """Names of the cached children."""
        return [str(o["metadata"]["name"]) for o in self.existing(ctx)]

    def plan(self, ctx: SyncContext[T], view: V) -> ChildPlan[K]:
        """Sort the cached children into kept and stale, then find the next `window` missing slots."""
        plan: ChildPlan[K] = ChildPlan()
        names: set[str] = set()
        for child in self.existing(ctx):
            name = str(child["metadata"]["name"])
            names.add(name)
            key = self.key_of(view, child)
            if key is not None and self.wanted(view, key):
                plan.targets.append((key, name, child))
            elif not is_terminating(child) and str(child["metadata"].get("uid")) not in self._deleted:
                plan.stale.append(child)
        plan.stale.sort(key=lambda c: str(c["metadata"]["name"]), reverse=True)
        count = self.slot_count(view)
        if count is not None and len(plan.targets) >= count:
            return plan
        missing = 0
        for key in self.candidates(view):
            name = self.child_name(view, key)
            if name in names:
                continue
            if missing == self.window:
                plan.more = True
                break
            missing += 1
            plan.targets.append((key, name, cached(ctx, self.rt, name)))
        return plan

    async def sync(self, ctx: SyncContext[T]) -> Result | None:
        """Delete the stale children, then create or patch the others (bounded concurrency)."""
        view = self.view(ctx)
        plan = self.plan(ctx, view)
        await self.delete_stale(ctx, plan)
        fingerprint = self.fingerprint(ctx)
        writes: list[Callable[[], Awaitable[None]]] = []
        for key, name, existing in plan.targets:
            if existing is not None and self.leave_as_is(ctx, existing):
                continue
            memo_key = (ctx.namespace, name)
            if (
                existing is not None
                and fingerprint is not None
                and self.memo.unchanged(memo_key, existing, fingerprint)
            ):
                continue
            desired = self.build(ctx, view, key, existing)
            if in_sync(desired, existing, component=self.name, patch_fields=self.patch_fields):
                if fingerprint is not None:
                    self.memo.in_sync(memo_key, existing, fingerprint)
                continue
            self.memo.forget(memo_key)
            writes.append(partial(self.write, ctx, desired, existing))
        await bounded(writes)
        self.sweep_memo(ctx)
        if plan.more:
            ctx.requeue_after(CONTINUE_AFTER)
        return None

    def sweep_memo(self, ctx: SyncContext[T]) -> None:
        """Drop memo entries of children no longer cached as they were (deleted ones above all; amortised)."""
        self.memo.sweep(lambda key: ctx.cache.get(self.rt, ObjectKey(*key)))  # type: ignore[misc]  # keys: (ns, name)

    async def write(self, ctx: SyncContext[T], desired: Obj, existing: Obj | None) -> None:
        """Create or patch one child; a creation is told in an Event on the owner."""
        outcome, _ = await create_or_patch(
            ctx, self.rt, desired, existing, component=self.name, patch_fields=self.patch_fields
        )
        if outcome == "created" and self.noun is not None:
            name = desired["metadata"]["name"]
            await ctx.recorder.normal(ctx.raw, f"{self.noun}Created", f"Created {self.noun} {name}")

    async def delete_stale(self, ctx: SyncContext[T], plan: ChildPlan[K]) -> None:
        """Delete the children whose slot is gone. A child this set already deleted (by uid) is not deleted again
        while the cache still shows it, nor is one already terminating (its finalizer still held)."""
        if len(self._deleted) > MAX_REMEMBERED_DELETIONS:
            self._deleted.clear()
        await bounded(partial(self._delete_one, ctx, child) for child in plan.stale)

    async def _delete_one(self, ctx: SyncContext[T], child: Obj) -> None:
        name = str(child["metadata"]["name"])
        deleted = await delete_if_exists(ctx.client, self.rt, name, ctx.namespace)
        self._deleted.add(str(child["metadata"].get("uid")))
        if deleted and self.noun is not None:
            await ctx.recorder.normal(ctx.raw, f"{self.noun}Deleted", f"Deleted {self.noun} {name}")

    async def delete(self, ctx: SyncContext[T]) -> None:
        """Delete every child (explicit cleanup; normally garbage collection does it)."""
        await bounded(partial(self._delete_one, ctx, child) for child in self.existing(ctx))


Slot = tuple[int, str]
"""(replica index, entry name) of an `IndexedChildSet`."""


@dataclass(frozen=True, slots=True)
class IndexedSlots:
    """The slots `<parent>-<i>-<entry>` for every `i < replicas` and every entry (in order)."""

    parent: str
    replicas: int
    entries: tuple[str, ...]


class IndexedChildSet(ChildSet[T, Slot, IndexedSlots]):
    """A child set with one child per replica index and entry, named `naming(parent, i, entry)`: standalone
    PodCliques and scaling groups per PodCliqueSet replica, scaling-group members per PCSG replica, Services."""

    naming: ClassVar[staticmethod[[str, int, str], str]]

    def key_of(self, view: IndexedSlots, child: Obj) -> Slot | None:
        """Replica and entry parsed from the name (an entry the spec lacks fills no slot)."""
        split = split_indexed_name(view.parent, str(child["metadata"]["name"]))
        return split if split is not None and split[1] in view.entries else None

    def wanted(self, view: IndexedSlots, key: Slot) -> bool:
        """The replica exists and the spec has the entry."""
        return 0 <= key[0] < view.replicas and key[1] in view.entries

    def candidates(self, view: IndexedSlots) -> Iterable[Slot]:
        """Replica-major, entries in order."""
        return ((i, entry) for i in range(view.replicas) for entry in view.entries)

    def slot_count(self, view: IndexedSlots) -> int:
        """Replicas times entries."""
        return view.replicas * len(view.entries)

    def child_name(self, view: IndexedSlots, key: Slot) -> str:
        """`naming(parent, i, entry)`."""
        return self.naming(view.parent, *key)
