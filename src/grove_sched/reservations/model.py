"""Koordinator Reservations as the scheduler sees them: what each holds, for whom, until when (pure).

Why pure: the rules that decide whose gang may use reserved capacity are the invariant the feature rests on
(capacity reserved for owners is never given to anyone else, and no node is promised twice), so they live here
without a cluster, where property tests can hammer them.

* A Reservation reserves `replicas` copies of its pod template's requests (`grove.io/reservation-replicas`,
  default 1, as Koordinator's one-pod reservations), placed as one gang; `grove.io/reservation-pack` names a node
  label key the copies share (one rack).
* It holds its capacity while `Available`: to a gang that does not own it the capacity is used (the `holds`
  phantom pods are layered onto the cycle's snapshot); an owner gang sees it free and is placed into it first.
* Owners: a gang whose every pod matches one of `spec.owners` (`object`: uid/name/namespace of the pod;
  `controller`: the pod's controller reference; `labelSelector`: the pod's labels), or that names the
  Reservation in `scheduling.koordinator.sh/reservation-ref`.
* What owner pods bound on a reserved node use is deducted from what is still held there (`allocated`); with
  `allocateOnce` (Koordinator's default) the reservation is `Succeeded` once an owner pod uses it.
* `spec.expires` (a time) or `spec.ttl` (a duration from creation) end it: `Failed`, reason Expired.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from grove_api.reservation import ANNOTATION_RESERVATION_PACK, ANNOTATION_RESERVATION_REPLICAS
from grove_sched.koordinator import parse_duration
from grove_sched.model import BoundPod
from grove_sched.quantity import bound_demand, pod_demand

__all__ = [
    "PHASE_AVAILABLE",
    "PHASE_FAILED",
    "PHASE_PENDING",
    "PHASE_SUCCEEDED",
    "ReservationView",
    "holds",
    "is_owner",
    "owner_usage",
    "parse_reservation",
    "remaining",
]

Obj = Mapping[str, Any]
PHASE_PENDING = "Pending"
PHASE_AVAILABLE = "Available"
PHASE_SUCCEEDED = "Succeeded"
PHASE_FAILED = "Failed"
_EMPTY: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ReservationView:
    """One Reservation, read: its copies' requests, owners, where it holds capacity and until when."""

    name: str
    replicas: int
    requests: Mapping[str, int]
    template: Obj
    owners: tuple[Obj, ...]
    phase: str = PHASE_PENDING
    nodes: tuple[str, ...] = ()
    pack_key: str | None = None
    allocate_once: bool = True
    expires_at: float | None = None
    """Wall-clock epoch seconds after which it ends (None: never)."""
    unschedulable: bool = False
    current_owners: frozenset[str] = frozenset()
    """UIDs of the owner pods placed into it (`status.currentOwners`)."""
    owner_pods: tuple[tuple[str, str], ...] = ()
    """(namespace, name) of those owners, where `status.currentOwners` names them (it does when we wrote it)."""
    problems: tuple[str, ...] = field(default=())

    def expired(self, now: float) -> bool:
        """Whether its ttl or expiry time has passed at wall time `now`."""
        return self.expires_at is not None and now >= self.expires_at


def _time(raw: object) -> float | None:
    if not raw:
        return None
    with contextlib.suppress(ValueError):
        return dt.datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    return None


def parse_reservation(obj: Obj) -> ReservationView:
    """Read a Reservation object; what cannot be read lands in `problems` (such a reservation is never placed)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    annotations = meta.get("annotations") or {}
    problems: list[str] = []
    template = spec.get("template") or {}
    try:
        requests: Mapping[str, int] = MappingProxyType(pod_demand(template))
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        requests, problems = _EMPTY, [*problems, f"spec.template: {err}"]
    try:
        replicas = int(annotations.get(ANNOTATION_RESERVATION_REPLICAS, 1))
    except ValueError:
        replicas = 0
    if replicas < 1:
        problems.append(f"{ANNOTATION_RESERVATION_REPLICAS} must be a whole number >= 1")
    expires_at = _time(spec.get("expires"))
    if spec.get("ttl") and expires_at is None:
        ttl = parse_duration(str(spec["ttl"]))
        created = _time(meta.get("creationTimestamp"))
        if ttl is None:
            problems.append(f"spec.ttl: {spec['ttl']!r} is not a duration")
        elif created is not None:
            expires_at = created + ttl
    owners = [o for o in status.get("currentOwners") or () if isinstance(o, Mapping)]
    nodes = tuple(str(n) for n in status.get("nodeNames") or ()) or (
        (str(status["nodeName"]),) if status.get("nodeName") else ()
    )
    return ReservationView(
        name=str(meta.get("name", "")),
        replicas=max(replicas, 0),
        requests=requests,
        template=template,
        owners=tuple(o for o in spec.get("owners") or () if isinstance(o, Mapping)),
        phase=str(status.get("phase") or PHASE_PENDING),
        nodes=nodes,
        pack_key=str(annotations.get(ANNOTATION_RESERVATION_PACK) or "") or None,
        allocate_once=spec.get("allocateOnce") is not False,
        expires_at=expires_at,
        unschedulable=spec.get("unschedulable") is True,
        current_owners=frozenset(str(o.get("uid")) for o in owners if o.get("uid")),
        owner_pods=tuple(
            (str(o.get("namespace") or ""), str(o["name"])) for o in owners if o.get("uid") and o.get("name")
        ),
        problems=tuple(problems),
    )


def _selector_matches(selector: Obj, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against labels (an empty selector matches everything, as upstream's)."""
    if any(labels.get(str(k)) != str(v) for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = str(expr.get("key")), expr.get("operator"), {str(v) for v in expr.get("values") or ()}
        present = key in labels
        ok = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(op), False)
        if not ok:
            return False
    return True


def _ref_matches(ref: Obj, target: Obj, namespace: str) -> bool:
    """An ObjectReference-like matcher: every field it sets equals the target's."""
    if ref.get("namespace") and ref.get("namespace") != namespace:
        return False
    return all(not ref.get(k) or ref.get(k) == target.get(k) for k in ("uid", "name", "kind", "apiVersion"))


def _owner_matches(owner: Obj, pod: Obj) -> bool:
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace", ""))
    if isinstance(owner.get("object"), Mapping):
        target = {"uid": meta.get("uid"), "name": meta.get("name"), "kind": "Pod", "apiVersion": "v1"}
        return _ref_matches(owner["object"], target, namespace)
    if isinstance(owner.get("controller"), Mapping):
        controllers = [r for r in meta.get("ownerReferences") or () if r.get("controller")]
        return any(_ref_matches(owner["controller"], ref, namespace) for ref in controllers)
    if isinstance(owner.get("labelSelector"), Mapping):
        return _selector_matches(owner["labelSelector"], meta.get("labels") or {})
    return False


def is_owner(view: ReservationView, pods: Iterable[Obj], ref: str | None = None) -> bool:
    """Whether a gang (its pods, its `reservation-ref`) may use the reservation: it names it, or every pod
    matches one of its owners."""
    if ref is not None and ref == view.name:
        return True
    members = list(pods)
    return bool(members) and all(any(_owner_matches(o, p) for o in view.owners) for p in members)


def remaining(view: ReservationView, used: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """Node → what the reservation still holds there: its copies' requests minus what owner pods bound there
    use (`used`: node → summed requests of its owner pods), never below zero."""
    per_node = Counter(view.nodes)
    out: dict[str, dict[str, int]] = {}
    for node, copies in per_node.items():
        taken = used.get(node, _EMPTY)
        left = {r: max(0, v * copies - taken.get(r, 0)) for r, v in view.requests.items()}
        if any(left.values()):
            out[node] = left
    return out


def holds(view: ReservationView, used: Mapping[str, Mapping[str, int]]) -> list[BoundPod]:
    """Phantom pods that make what the reservation still holds count as used (for a gang that does not own it)."""
    if view.phase != PHASE_AVAILABLE:
        return []
    return [
        BoundPod(f"reservation-{view.name}-{node}", "", node, {}, MappingProxyType(left))
        for node, left in sorted(remaining(view, used).items())
    ]


def owner_usage(view: ReservationView, pods: Iterable[Obj]) -> dict[str, dict[str, int]]:
    """Node → summed requests of the live bound pods placed into the reservation (`current_owners`) on its
    nodes: what its owners have allocated."""
    nodes = set(view.nodes)
    out: dict[str, dict[str, int]] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node not in nodes or str(meta.get("uid", "")) not in view.current_owners or meta.get("deletionTimestamp"):
            continue
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            for r, v in bound_demand(pod).items():
                out.setdefault(node, {})[r] = out.get(node, {}).get(r, 0) + v
    return out
