"""Does a child need a write? Desired state compared with the cached object, without a request.

Why pure and synchronous: every reconcile compares hundreds of desired children with their cached state, and a
component sorts them into "in sync" and "needs a write" without a coroutine per child. Only labels, annotations and
the listed top-level fields are ours to compare: anything the server or another controller added is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grove_operator.reconcile.failures import ComponentError, error_code
from grove_operator.reconcile.ownership import controller_owner

__all__ = ["in_sync", "is_subset", "merge_patch_for"]

Obj = dict[str, Any]


def is_subset(want: Any, have: Any) -> bool:
    """True when every field of `want` is present and equal in `have` (dicts recursively, lists exactly).

    Equal values are a subset of each other, so each level first tries the (C-speed) equality and only walks into
    values that differ.
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

    None when nothing differs. Raises `ComponentError` for an object we do not control.
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
