"""What the workload controllers share: owned objects, pod availability, counts given as ``N`` or ``N%``, and
the pod-template hash.

Ownership is read from the store's ownerReference index (``Store.dependents``), so a controller looks only at its
own objects, not at every pod of a namespace.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

from grove_sim.machinery import errors
from grove_sim.registry.core import Core
from grove_sim.storage.store import ResourceKey

__all__ = [
    "PODS",
    "REPLICASETS",
    "active",
    "available",
    "controller_of",
    "controller_ref",
    "owned",
    "scaled_count",
    "template_hash",
    "write_status",
]

PODS: Final[ResourceKey] = ("", "pods")
REPLICASETS: Final[ResourceKey] = ("apps", "replicasets")
_SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193


def owned(core: Core, key: ResourceKey, owner: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects stored under ``key`` whose controller is ``owner``."""
    uid = owner["metadata"].get("uid", "")
    found = []
    for ref in core.store.dependents(uid):
        if ref[0] != key:
            continue
        obj = core.store.get(*ref)
        if obj is not None and controller_of(obj) == uid:
            found.append(obj)
    return found


def controller_of(obj: dict[str, Any]) -> str | None:
    """The uid of the object's controlling owner, if any."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("uid", ""))
    return None


def controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    """The ownerReference a controller puts on what it creates (so garbage collection removes it with the owner)."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def active(pod: dict[str, Any]) -> bool:
    """Counted by its ReplicaSet: not being deleted and not finished (``controller.FilterActivePods``)."""
    if pod["metadata"].get("deletionTimestamp"):
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def available(pod: dict[str, Any]) -> bool:
    """Active and Ready (``minReadySeconds`` is not simulated: a Ready pod is available at once)."""
    if not active(pod):
        return False
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def scaled_count(value: Any, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``N%`` of ``total`` rounded as asked."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    text = str(value or "0")
    if text.endswith("%"):
        try:
            percent = int(text[:-1])
        except ValueError:
            return 0
        scaled = percent * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    try:
        return int(text)
    except ValueError:
        return 0


def template_hash(template: dict[str, Any], collisions: int = 0) -> str:
    """``controller.ComputeHash``: FNV-32a of the template (and collision count), safe-encoded as upstream's
    ``rand.SafeEncodeString`` does, so the ``pod-template-hash`` label looks like a real one."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collisions:
        data += str(collisions).encode()
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in str(value))


def write_status(core: Core, obj: dict[str, Any], status: dict[str, Any]) -> None:
    """Replace the object's status (``/status``); an object deleted or changed meanwhile is left to the next sync
    (level-triggered: its change queued it again)."""
    info = core.registry.by_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    assert info is not None, "controllers write the status of served kinds only"
    try:
        core.replace(info, obj, {**obj, "status": status}, subresource="status")
    except errors.ApiError as exc:
        if exc.code not in (404, 409):
            raise
