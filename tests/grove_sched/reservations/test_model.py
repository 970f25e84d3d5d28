"""The Reservation rules: reading one, who owns it, and what it still holds; with a property test that a gang not
owning a reservation is never placed on its capacity and no node is promised twice."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_sched.model import GPU, Placement
from grove_sched.placement import Snapshot, place
from grove_sched.reservations.model import (
    PHASE_AVAILABLE,
    PHASE_PENDING,
    ReservationView,
    holds,
    is_owner,
    owner_usage,
    parse_reservation,
    remaining,
)

from ..placement.placement_kit import bound, gang, group, node

Obj = dict[str, Any]


def _reservation(**spec: Any) -> Obj:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}
    return {
        "metadata": {"name": "r", "creationTimestamp": "2026-01-01T00:00:00Z", "annotations": spec.pop("ann", {})},
        "spec": {"template": template, "owners": [{"labelSelector": {"matchLabels": {"team": "a"}}}], **spec},
        "status": spec.pop("status", {}),
    }


def _pod(name: str, labels: dict[str, str] | None = None, **meta: Any) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels or {}, **meta}}


def test_reading_a_reservation() -> None:
    view = parse_reservation(_reservation(ttl="1h", ann={"grove.io/reservation-replicas": "2"}))
    assert (view.name, view.replicas, view.requests[GPU], view.phase) == ("r", 2, 8, PHASE_PENDING)
    assert view.expires_at is not None
    assert not view.expired(view.expires_at - 1)
    assert view.expired(view.expires_at)
    assert view.allocate_once
    assert parse_reservation(_reservation(expires="2026-01-01T00:00:10Z")).expires_at == view.expires_at - 3590
    bad = parse_reservation(_reservation(ttl="soon", ann={"grove.io/reservation-replicas": "zero"}))
    assert len(bad.problems) == 2


def test_owners_by_labels_object_controller_or_reference() -> None:
    view = parse_reservation(_reservation())
    assert is_owner(view, [_pod("a", {"team": "a"}), _pod("b", {"team": "a"})])
    assert not is_owner(view, [_pod("a", {"team": "a"}), _pod("b", {"team": "b"})])  # every pod must match
    assert not is_owner(view, [])
    assert is_owner(view, [_pod("x")], ref="r")
    by_object = parse_reservation(_reservation(owners=[{"object": {"name": "p", "namespace": "ns"}}]))
    assert is_owner(by_object, [_pod("p")])
    assert not is_owner(by_object, [_pod("q")])
    controller = {"controller": {"kind": "PodClique", "name": "pc", "namespace": "ns"}}
    by_controller = parse_reservation(_reservation(owners=[controller]))
    refs = [{"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "name": "pc", "uid": "u", "controller": True}]
    assert is_owner(by_controller, [_pod("p", ownerReferences=refs)])
    assert not is_owner(by_controller, [_pod("p")])
    by_expression = parse_reservation(
        _reservation(
            owners=[{"labelSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]}}]
        )
    )
    assert is_owner(by_expression, [_pod("p", {"team": "a"})])
    assert not is_owner(by_expression, [_pod("p", {"team": "c"})])


def test_what_owners_use_is_no_longer_held() -> None:
    view = ReservationView("r", 2, {GPU: 8}, {}, (), PHASE_AVAILABLE, ("n1", "n2"), current_owners=frozenset({"uid-p"}))
    owner = {
        **_pod("p"),
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {GPU: "8"}}}]},
    }
    used = owner_usage(view, [owner, {**_pod("q"), "spec": {"nodeName": "n2"}}])
    assert used == {"n1": {GPU: 8}}
    assert remaining(view, used) == {"n2": {GPU: 8}}
    assert [p.node for p in holds(view, used)] == ["n2"]
    assert holds(ReservationView("r", 1, {GPU: 8}, {}, (), PHASE_PENDING, ("n1",)), {}) == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 8), min_size=2, max_size=6),
    st.data(),
    st.integers(1, 8),
    st.integers(1, 6),
)
def test_a_non_owner_never_gets_reserved_capacity(
    background: list[int], data: st.DataObject, gpus: int, pods: int
) -> None:
    """Nodes with some GPUs busy, a reservation on some of them (copies within what is free), and a gang that
    does not own it: wherever the gang is placed, its pods plus the busy GPUs plus what the reservation holds fit
    every node's 8 GPUs."""
    nodes = [node(f"n{i}", "r0") for i in range(len(background))]
    busy = [bound(f"bg{i}", f"n{i}", gpu=g) for i, g in enumerate(background) if g]
    free = {f"n{i}": 8 - g for i, g in enumerate(background)}
    per_copy = data.draw(st.integers(1, 8))
    fits = [name for name, left in free.items() if left >= per_copy]
    reserved = tuple(data.draw(st.lists(st.sampled_from(fits), max_size=3, unique=True))) if fits else ()
    view = ReservationView("r", len(reserved), {GPU: per_copy}, {}, (), PHASE_AVAILABLE, reserved)
    held = holds(view, {})
    snapshot = Snapshot.build(nodes, busy).with_assumed(held)
    request = gang(group("w", pods, gpu=gpus))
    result = place(snapshot, request)
    use = {name: 8 - left for name, left in free.items()}
    for pod in held:
        use[pod.node] += pod.requests[GPU]
    if isinstance(result, Placement):
        for assigned in result.assignments.values():
            use[assigned] += gpus
    assert all(v <= 8 for v in use.values()), use
