"""Which cached objects belong to an owner: the controller owner reference decides, labels only narrow the search.

Why both: a label index finds candidates cheaply, the controller uid rules out a same-named owner's leftovers
(deleted and recreated) and objects someone else labelled alike, so a user object that merely shares our labels is
never adopted or deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grove_api import labels as glabels
from grove_operator.reconcile.context import SyncContext
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import ResourceType

__all__ = ["cached", "controlled_children", "controller_owner", "managed"]

Obj = dict[str, Any]


def controller_owner(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with `controller: true`, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return ref
    return None


def controlled_children(
    ctx: SyncContext[Any], resource: ResourceType, index: str, component: str | None = None
) -> list[Obj]:
    """Cached `resource` objects that `index` files under this owner, that it controls (by uid) and, when
    `component` is given, that carry that `app.kubernetes.io/component` label."""
    uid = (ctx.raw.get("metadata") or {}).get("uid")
    out: list[Obj] = []
    for obj in ctx.cache.by_index(resource, index, f"{ctx.namespace}/{ctx.key.name}"):
        if component is not None:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if labels.get(glabels.LABEL_COMPONENT) != component:
                continue
        owner = controller_owner(obj)
        if owner is not None and owner.get("uid") == uid:
            out.append(obj)
    return out


def cached(ctx: SyncContext[Any], rt: ResourceType, name: str) -> Obj | None:
    """The cached object `name` of `rt` in the owner's namespace, whoever owns it."""
    return ctx.cache.get(rt, ObjectKey(ctx.namespace, name))


def managed(obj: Mapping[str, Any]) -> bool:
    """True when the object carries `app.kubernetes.io/managed-by=grove-operator`."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(glabels.LABEL_MANAGED_BY) == glabels.MANAGED_BY_VALUE)
