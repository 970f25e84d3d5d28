"""The component contract shared by every reconciler: `Component`, `SyncContext`, and the thin write helpers.

Why: upstream Grove gives each owned kind a component with three verbs (existing names, sync, delete) so a
reconciler reads as an ordered list of them. Here a component takes one `SyncContext` (client, cache, recorder,
expectations, config and the owner) and does its I/O through the helpers below, which encode the conflict rules
every write follows: reads come from the cache; creates tolerate AlreadyExists; updates are JSON merge patches
without a resourceVersion (so they never fight a concurrent writer over unrelated fields); deletes tolerate
NotFound; status goes through the status subresource only.

Errors::

    ComponentError        a component could not sync; `code` (ERR_SYNC_<COMPONENT>) and `operation` end up in
                          the owner's `status.lastErrors` and in a Warning Event
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from grove_api import labels as glabels
from grove_operator.config import OperatorConfig
from grove_runtime import errors
from grove_runtime.cache import Cache
from grove_runtime.client import Client, PatchType
from grove_runtime.events import EventRecorder
from grove_runtime.expectations import Expectations
from grove_runtime.keys import ObjectKey, Result
from grove_runtime.resources import ResourceType

__all__ = [
    "CLUSTERTOPOLOGYBINDINGS",
    "INDEX_BASE_PODGANG",
    "INDEX_PART_OF",
    "INDEX_PCSG",
    "INDEX_PODCLIQUE",
    "PODCLIQUES",
    "PODCLIQUESCALINGGROUPS",
    "PODCLIQUESETS",
    "PODGANGS",
    "Component",
    "ComponentError",
    "Step",
    "SyncContext",
    "controlled_children",
    "controller_owner",
    "create_or_patch",
    "delete_if_exists",
    "ensure_finalizer",
    "error_code",
    "in_sync",
    "is_subset",
    "last_errors",
    "managed",
    "merge_patch_for",
    "namespaced_label_index",
    "remove_finalizer",
    "run_steps",
    "status_patch",
    "write_status",
]

Obj = dict[str, Any]
T = TypeVar("T")

PODCLIQUESETS = ResourceType("grove.io", "v1alpha1", "podcliquesets", "PodCliqueSet")
PODCLIQUES = ResourceType("grove.io", "v1alpha1", "podcliques", "PodClique")
PODCLIQUESCALINGGROUPS = ResourceType("grove.io", "v1alpha1", "podcliquescalinggroups", "PodCliqueScalingGroup")
PODGANGS = ResourceType("scheduler.grove.io", "v1alpha1", "podgangs", "PodGang")
CLUSTERTOPOLOGYBINDINGS = ResourceType(
    "grove.io", "v1alpha1", "clustertopologybindings", "ClusterTopologyBinding", namespaced=False
)

INDEX_PART_OF = "grove-part-of"
INDEX_PODCLIQUE = "grove-podclique"
INDEX_PCSG = "grove-pcsg"
INDEX_BASE_PODGANG = "grove-base-podgang"


def namespaced_label_index(label: str) -> Callable[[Obj], Iterable[str]]:
    """Index function `<namespace>/<label value>`, so equal names in different namespaces never mix."""

    def values(obj: Obj) -> Iterable[str]:
        meta = obj.get("metadata") or {}
        value = (meta.get("labels") or {}).get(label)
        return (f"{meta.get('namespace') or ''}/{value}",) if value else ()

    return values


class ComponentError(Exception):
    """A component failed to sync; carries the Grove-style error code and the failed operation."""

    def __init__(self, code: str, operation: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.operation = operation
        self.message = message


def error_code(component: str) -> str:
    """`ERR_SYNC_<COMPONENT>` derived from the component name (no per-component constants)."""
    return "ERR_SYNC_" + component.upper().replace("-", "_")


@dataclass
class SyncContext(Generic[T]):
    """Everything one reconcile of one owner needs; built once per reconcile and handed to every component."""

    client: Client
    cache: Cache
    recorder: EventRecorder
    expectations: Expectations[ObjectKey]
    config: OperatorConfig
    key: ObjectKey
    raw: Obj
    owner: T
    now: datetime
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        """Namespace of the owner."""
        return self.key.namespace


Step = Callable[[SyncContext[T]], Awaitable[Result | None]]
"""One spec step of a reconciler: `None` to go on, a `Result` to stop the later steps and requeue."""


async def run_steps(ctx: SyncContext[T], steps: Sequence[Step[T]]) -> tuple[Result | None, ComponentError | None]:
    """Run ``steps`` in order until one returns a `Result` or raises `ComponentError`.

    Why one function: every reconciler must write its status after a failed step (so `lastErrors` shows it) and
    tell the user with a Warning Event, so the failure is returned rather than raised.
    """
    try:
        for step in steps:
            result = await step(ctx)
            if result is not None:
                return result, None
    except ComponentError as exc:
        await ctx.recorder.warning(ctx.raw, "ReconcileError", f"{exc.code}: {exc.message}")
        return None, exc
    return None, None


class Component(Protocol[T]):
    """One kind of child object an owner manages: what exists, make it right, remove it."""

    name: str

    def existing_names(self, ctx: SyncContext[T]) -> list[str]:
        """Names of the children of this kind that currently exist (from the cache)."""
        ...

    async def sync(self, ctx: SyncContext[T]) -> Result | None:
        """Create, patch or delete children; a `Result` asks the reconciler to stop later groups and requeue."""
        ...

    async def delete(self, ctx: SyncContext[T]) -> None:
        """Delete every child of this kind (explicit cleanup; normally garbage collection does it)."""
        ...


def is_subset(want: Any, have: Any) -> bool:
    """True when every field of `want` is present and equal in `have` (dicts recursively, lists exactly).

    Equal values are a subset of each other, so each level first tries the (C-speed) equality and only walks into
    values that differ: every reconcile compares hundreds of desired children with their cached state.
    """
    if want == have:
        return True
    if isinstance(want, Mapping):
        if not isinstance(have, Mapping):
            return False
        for k, v in want.items():
            if k not in have:
                return False
            h = have[k]
            if v != h and not is_subset(v, h):
                return False
        return True
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return False
        return all(w == h or is_subset(w, h) for w, h in zip(want, have, strict=True))
    return False


def controller_owner(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with `controller: true`, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return ref
    return None


def controlled_children(ctx: SyncContext[Any], resource: ResourceType, index: str) -> list[Obj]:
    """Cached ``resource`` objects that ``index`` files under this owner and that this owner controls (by uid).

    Why both: the label index finds candidates cheaply, the controller uid rules out a same-named owner's
    leftovers (deleted and recreated) and objects someone else labelled alike.
    """
    uid = (ctx.raw.get("metadata") or {}).get("uid")
    out: list[Obj] = []
    for obj in ctx.cache.by_index(resource, index, f"{ctx.namespace}/{ctx.key.name}"):
        owner = controller_owner(obj)
        if owner is not None and owner.get("uid") == uid:
            out.append(obj)
    return out


def _check_owned(existing: Mapping[str, Any], desired: Mapping[str, Any], component: str) -> None:
    """Raise unless `existing` is controlled by the owner `desired` names (objects of others are never touched)."""
    want = next(iter((desired.get("metadata") or {}).get("ownerReferences") or ()), None)
    if want is None:
        return
    have = controller_owner(existing)
    if have is not None and have.get("uid") == want.get("uid"):
        return
    name = (existing.get("metadata") or {}).get("name")
    owner = f"controlled by {have.get('kind')} {have.get('name')!r}" if have is not None else "not controlled by us"
    raise ComponentError(error_code(component), "sync", f"{existing.get('kind', 'object')} {name!r} is {owner}")


def merge_patch_for(
    desired: Mapping[str, Any],
    existing: Mapping[str, Any],
    *,
    component: str,
    patch_fields: tuple[str, ...] = ("spec",),
) -> Obj | None:
    """The merge patch of labels, annotations and `patch_fields` that brings `existing` in line with `desired`.

    None when nothing differs. Pure and synchronous, so a component can sort hundreds of children into "in sync"
    and "needs a write" without a coroutine per child. Raises `ComponentError` for an object we do not control.
    """
    _check_owned(existing, desired, component)
    meta = desired["metadata"]
    patch: Obj = {}
    meta_patch = {k: meta[k] for k in ("labels", "annotations") if meta.get(k)}
    if meta_patch and not is_subset(meta_patch, existing.get("metadata") or {}):
        patch["metadata"] = meta_patch
    for key in patch_fields:
        if key in desired and not is_subset(desired[key], existing.get(key)):
            patch[key] = desired[key]
    return patch or None


def in_sync(
    desired: Mapping[str, Any],
    existing: Mapping[str, Any] | None,
    *,
    component: str,
    patch_fields: tuple[str, ...] = ("spec",),
    create_only: bool = False,
) -> bool:
    """Whether `create_or_patch` would leave `existing` alone (it exists and nothing needs patching)."""
    if existing is None:
        return False
    if create_only:
        return True
    return merge_patch_for(desired, existing, component=component, patch_fields=patch_fields) is None


async def create_or_patch(
    ctx: SyncContext[Any],
    rt: ResourceType,
    desired: Obj,
    existing: Mapping[str, Any] | None,
    *,
    component: str,
    patch_fields: tuple[str, ...] = ("spec",),
    create_only: bool = False,
) -> tuple[str, Mapping[str, Any]]:
    """Create `desired` or merge-patch its labels, annotations and `patch_fields`.

    Returns the outcome (``created``/``patched``/``unchanged``) and the freshest object known (the server's answer,
    else `existing`). An existing object controlled by someone else is never touched: that raises `ComponentError`.
    """
    name = str(desired["metadata"]["name"])
    if existing is None:
        try:
            return "created", await ctx.client.create(rt, desired, ctx.namespace)
        except errors.AlreadyExists:
            existing = await ctx.client.get(rt, name, ctx.namespace)
    if create_only:
        return "unchanged", existing
    patch = merge_patch_for(desired, existing, component=component, patch_fields=patch_fields)
    if patch is None:
        return "unchanged", existing
    try:
        return "patched", await ctx.client.patch(rt, name, patch, ctx.namespace, patch_type=PatchType.MERGE)
    except errors.NotFound:
        return "created", await ctx.client.create(rt, desired, ctx.namespace)


async def delete_if_exists(client: Client, rt: ResourceType, name: str, namespace: str) -> bool:
    """Delete one object; False when it was already gone."""
    try:
        await client.delete(rt, name, namespace, propagation_policy="Background")
    except errors.NotFound:
        return False
    return True


async def remove_finalizer(client: Client, rt: ResourceType, obj: Mapping[str, Any], finalizer: str) -> bool:
    """Drop `finalizer` from the object (merge patch of the whole list); False when it was not there."""
    meta = obj.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or ())
    if finalizer not in finalizers:
        return False
    remaining = [f for f in finalizers if f != finalizer]
    try:
        await client.patch(
            rt, str(meta["name"]), {"metadata": {"finalizers": remaining or None}}, str(meta.get("namespace") or "")
        )
    except errors.NotFound:
        return False
    return True


async def ensure_finalizer(client: Client, rt: ResourceType, obj: Mapping[str, Any], finalizer: str) -> bool:
    """Add `finalizer` if missing; True when a patch was sent."""
    meta = obj.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or ())
    if finalizer in finalizers:
        return False
    await client.patch(
        rt, str(meta["name"]), {"metadata": {"finalizers": [*finalizers, finalizer]}}, str(meta.get("namespace") or "")
    )
    return True


def status_patch(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> Obj | None:
    """The merge patch turning status `old` into `new` (removed keys become null), or None when equal."""
    old = old or {}
    if dict(old) == dict(new):
        return None
    patch: Obj = dict(new)
    for key in old:
        if key not in new:
            patch[key] = None
    return patch


async def write_status(client: Client, rt: ResourceType, obj: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """Write `new_status` through the status subresource if it differs from the object's; True when written."""
    patch = status_patch(obj.get("status"), new_status)
    if patch is None:
        return False
    meta = obj.get("metadata") or {}
    try:
        await client.patch(
            rt, str(meta["name"]), {"status": patch}, str(meta.get("namespace") or ""), subresource="status"
        )
    except errors.NotFound:
        return False
    return True


def last_errors(failure: ComponentError | None, now: datetime, previous: Any = None) -> list[Obj] | None:
    """`status.lastErrors` for the failure of this reconcile (None when it succeeded).

    A repeat of the previous error keeps its `observedAt`, so a persisting failure does not rewrite the status.
    """
    if failure is None:
        return None
    entry = {"code": failure.code, "description": f"{failure.operation}: {failure.message}", "observedAt": _ts(now)}
    for old in previous or ():
        if (
            isinstance(old, Mapping)
            and old.get("code") == entry["code"]
            and old.get("description") == entry["description"]
        ):
            entry["observedAt"] = str(old.get("observedAt") or entry["observedAt"])
    return [entry]


def _ts(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def managed(obj: Mapping[str, Any]) -> bool:
    """True when the object carries `app.kubernetes.io/managed-by=grove-operator`."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(glabels.LABEL_MANAGED_BY) == glabels.MANAGED_BY_VALUE)
