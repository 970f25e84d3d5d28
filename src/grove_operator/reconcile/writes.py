"""The write rules every component follows, so no two writers of the operator fight over an object.

Reads come from the cache; creates tolerate AlreadyExists; updates are JSON merge patches without a
resourceVersion (so they never fight a concurrent writer over unrelated fields); deletes tolerate NotFound; status
goes through the status subresource only, and only when it changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel

from grove_operator.reconcile.compare import merge_patch_for
from grove_operator.reconcile.concurrency import bounded_settled
from grove_operator.reconcile.context import SyncContext
from grove_runtime import errors
from grove_runtime.client import Client, PatchType
from grove_runtime.resources import ResourceType

__all__ = [
    "create_or_patch",
    "delete_expecting",
    "delete_if_exists",
    "ensure_finalizer",
    "record_status",
    "remove_finalizer",
    "status_patch",
    "write_status",
]

Obj = dict[str, Any]
M = TypeVar("M", bound=BaseModel)


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


async def delete_expecting(
    client: Client, rt: ResourceType, names: Iterable[str], namespace: str, give_back: Callable[[int], None]
) -> list[Exception]:
    """Delete `names` whose deletions the caller expects to observe; returns the failures, after handing
    `give_back` the number of deletions that will never be observed (already gone, or refused).

    Every delete runs to its end, so each failure is accounted for: an expectation left unmet holds its owner's
    decisions until the expectations time out (5 minutes)."""
    results = await bounded_settled(partial(delete_if_exists, client, rt, name, namespace) for name in names)
    failures = [r for r in results if isinstance(r, Exception)]
    unobservable = sum(1 for r in results if r is False) + len(failures)
    if unobservable:
        give_back(unobservable)
    return failures


async def remove_finalizer(client: Client, rt: ResourceType, obj: Mapping[str, Any], finalizer: str) -> bool:
    """Drop `finalizer` from the object; False when it was not there (or the object is gone)."""
    finalizers = list((obj.get("metadata") or {}).get("finalizers") or ())
    if finalizer not in finalizers:
        return False
    try:
        await _set_finalizers(client, rt, obj, [f for f in finalizers if f != finalizer])
    except errors.NotFound:
        return False
    return True


async def ensure_finalizer(client: Client, rt: ResourceType, obj: Mapping[str, Any], finalizer: str) -> bool:
    """Add `finalizer` if missing; True when a patch was sent."""
    finalizers = list((obj.get("metadata") or {}).get("finalizers") or ())
    if finalizer in finalizers:
        return False
    await _set_finalizers(client, rt, obj, [*finalizers, finalizer])
    return True


async def _set_finalizers(client: Client, rt: ResourceType, obj: Mapping[str, Any], finalizers: list[str]) -> None:
    """Merge-patch the whole finalizer list (an empty one removes the field)."""
    meta = obj.get("metadata") or {}
    body = {"metadata": {"finalizers": finalizers or None}}
    await client.patch(rt, str(meta["name"]), body, str(meta.get("namespace") or ""))


def _merge_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> Obj:
    patch: Obj = {}
    for key, value in new.items():
        before = old.get(key)
        if key in old and before == value:
            continue
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            patch[key] = _merge_diff(before, value)
        else:
            patch[key] = value
    for key in old:
        if key not in new:
            patch[key] = None
    return patch


def status_patch(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> Obj | None:
    """The JSON merge patch (RFC 7386) turning status `old` into `new`, or None when equal.

    The server merges nested objects, so a field removed deep inside (`updateProgress.currentlyUpdating` when an
    update ends) must be sent as null at its own depth; only what changed is sent. Statuses hold no nulls (merge
    patch cannot write one).
    """
    old = old or {}
    if dict(old) == dict(new):
        return None
    return _merge_diff(old, new)


async def write_status(
    client: Client,
    rt: ResourceType,
    obj: Mapping[str, Any],
    new_status: Mapping[str, Any],
    *,
    precondition: bool = False,
) -> bool:
    """Write `new_status` through the status subresource if it differs from the object's; True when written.

    `precondition`: only if the object is still at the cached resourceVersion (else `errors.Conflict`), for a
    status another controller also writes into, which a write from a stale cache would undo.
    """
    patch = status_patch(obj.get("status"), new_status)
    if patch is None:
        return False
    meta = obj.get("metadata") or {}
    body: Obj = {"status": patch}
    if precondition and meta.get("resourceVersion"):
        body["metadata"] = {"resourceVersion": meta["resourceVersion"]}
    try:
        await client.patch(rt, str(meta["name"]), body, str(meta.get("namespace") or ""), subresource="status")
    except errors.NotFound:
        return False
    return True


async def record_status(ctx: SyncContext[M], rt: ResourceType, fields: Mapping[str, Any]) -> bool:
    """Merge-patch `fields` into the owner's status *now* and make the context see the result.

    For bookkeeping that must reach the API before the action it describes (a rolling update records the pod it
    is about to delete), so a restart between the two resumes from it; the status written at the end of the
    reconcile starts from the refreshed owner and keeps it. False when the owner is gone.

    Each field is replaced whole (a JSON patch `add`), whatever the cache last showed of it: a merge patch would keep
    what the new value omits (a new `updateProgress` would keep the last one's `updateEndedAt`), and a diff against
    a stale cached status would omit a value the API no longer holds.
    """
    body: Any = [{"op": "add", "path": f"/status/{key}", "value": value} for key, value in fields.items()]
    patch_type = PatchType.JSON
    if not ctx.raw.get("status"):  # no status to add into yet
        body, patch_type = {"status": dict(fields)}, PatchType.MERGE
    try:
        raw = await ctx.client.patch(rt, ctx.key.name, body, ctx.namespace, patch_type=patch_type, subresource="status")
    except errors.NotFound:
        return False
    ctx.raw = raw
    ctx.owner = ctx.parsed.parse(type(ctx.owner), raw)
    return True
