"""Gang assembly from PodGang and pod dicts: membership, readiness, requests, malformed gangs, pins."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_sched.gangs import AssemblyContext, GangKey, Malformed, ReadyGang, Waiting, assemble, gang_key_of_pod

from .kit import SCHED, pod, podgang

RACK = "topology.kubernetes.io/rack"
LABELS = {"n1": {RACK: "r1"}, "n2": {RACK: "r2"}}


def ctx(keys: tuple[str, ...] = (RACK,), priorities: dict[str, int] | None = None) -> AssemblyContext:
    return AssemblyContext(SCHED, frozenset(keys), LABELS.get, lambda name: (priorities or {}).get(name))


def by_name(*pods: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in pods}


def test_ready_gang_places_every_group_minimum() -> None:
    """Every PodGroup with at least minReplicas ungated, unbound pods makes a ready gang with extras included."""
    pg = podgang("g", {"prefill": (["a", "b", "c"], 2), "decode": (["d"], 1)}, required=RACK)
    pods = by_name(*(pod(n, gang="g") for n in "abcd"))
    result = assemble(GangKey("default", "g"), pg, pods, ctx())
    assert isinstance(result, ReadyGang)
    groups = {g.name: g for g in result.request.groups}
    assert groups["prefill"].min_replicas == 2
    assert [r.name for r in groups["prefill"].pods] == ["a", "b", "c"]
    assert result.request.topology.required_key == RACK
    assert result.required_pods == 3


def test_gated_or_foreign_pods_do_not_count() -> None:
    """Gated pods and pods of another scheduler leave the gang waiting."""
    pg = podgang("g", {"x": (["a", "b"], 2)})
    pods = by_name(pod("a", gang="g"), pod("b", gang="g", gated=True))
    assert isinstance(assemble(GangKey("default", "g"), pg, pods, ctx()), Waiting)
    pods = by_name(pod("a", gang="g"), pod("b", gang="g", scheduler="default-scheduler"))
    assert isinstance(assemble(GangKey("default", "g"), pg, pods, ctx()), Waiting)


@pytest.mark.parametrize(
    ("groups", "pods", "keys", "needle"),
    [
        pytest.param({"x": (["a", "zz"], 1)}, ["a"], (RACK,), "do not exist: zz", id="missing-pod"),
        pytest.param({"x": (["a"], 2)}, ["a"], (RACK,), "minReplicas=2 but references only 1", id="min-above-refs"),
        pytest.param({"x": (["a"], 1)}, ["a"], (), f"topology key {RACK} is carried by no node", id="unknown-key"),
    ],
)
def test_malformed_podgangs_are_reported(
    groups: dict[str, tuple[list[str], int]], pods: list[str], keys: tuple[str, ...], needle: str
) -> None:
    """References to missing pods, minReplicas above the references and unknown topology keys are malformed."""
    pg = podgang("g", groups, required=RACK)
    result = assemble(GangKey("default", "g"), pg, by_name(*(pod(n, gang="g") for n in pods)), ctx(keys))
    assert isinstance(result, Malformed)
    assert any(needle in r for r in result.reasons)


def test_unlabelled_pod_is_a_gang_of_one() -> None:
    """A pod without the podgang label is its own gang with one group of minimum 1."""
    p = pod("solo")
    key = gang_key_of_pod(p)
    assert key == GangKey("default", "solo", single=True)
    result = assemble(key, None, {"solo": p}, ctx())
    assert isinstance(result, ReadyGang)
    assert [(g.name, g.min_replicas, len(g.pods)) for g in result.request.groups] == [("solo", 1, 1)]


def test_bound_pods_count_and_pin_required_domain() -> None:
    """Bound members reduce the minimum and pin the rest to the rack the bound pods occupy."""
    pg = podgang("g", {"x": (["a", "b", "c"], 3)}, required=RACK)
    pods = by_name(pod("a", gang="g", node_name="n2"), pod("b", gang="g"), pod("c", gang="g"))
    result = assemble(GangKey("default", "g"), pg, pods, ctx())
    assert isinstance(result, ReadyGang)
    (group,) = result.request.groups
    assert group.min_replicas == 2
    assert dict(group.node_selector) == {RACK: "r2"}
    assert set(result.bound) == {"a"}


def test_everything_bound_is_waiting() -> None:
    """A gang whose pods are all bound has nothing to place."""
    pg = podgang("g", {"x": (["a"], 1)})
    result = assemble(GangKey("default", "g"), pg, by_name(pod("a", gang="g", node_name="n1")), ctx())
    assert isinstance(result, Waiting)


def test_priority_comes_from_priority_class() -> None:
    """The PodGang's priorityClassName resolves through the PriorityClass lookup."""
    pg = podgang("g", {"x": (["a"], 1)})
    pg["spec"]["priorityClassName"] = "high"
    result = assemble(GangKey("default", "g"), pg, by_name(pod("a", gang="g")), ctx(priorities={"high": 1000}))
    assert isinstance(result, ReadyGang)
    assert result.request.priority == 1000


def test_heterogeneous_requests_become_overrides() -> None:
    """Pods whose requests differ from the group's first pod carry their own requests."""
    pg = podgang("g", {"x": (["a", "b"], 2)})
    result = assemble(GangKey("default", "g"), pg, by_name(pod("a", gang="g"), pod("b", gang="g", gpus=4)), ctx())
    assert isinstance(result, ReadyGang)
    (group,) = result.request.groups
    assert group.requests["nvidia.com/gpu"] == 1
    assert group.pods[0].requests is None
    assert group.pods[1].requests is not None
    assert group.pods[1].requests["nvidia.com/gpu"] == 4


def test_podgang_of_another_scheduler_is_ignored() -> None:
    """A PodGang labelled for another scheduler (or whose pods are all foreign) is never assembled."""
    pg = podgang("g", {"x": (["a"], 1)})
    pg["metadata"]["labels"] = {"grove.io/scheduler-name": "kai-scheduler"}
    result = assemble(GangKey("default", "g"), pg, by_name(pod("a", gang="g")), ctx())
    assert isinstance(result, Waiting)
    pg = podgang("g", {"x": (["a"], 1)}, required="example.com/unknown")
    foreign = by_name(pod("a", gang="g", scheduler="kai-scheduler"))
    assert isinstance(assemble(GangKey("default", "g"), pg, foreign, ctx()), Waiting)


@pytest.mark.slow
def test_extras_of_a_placed_gang_are_placeable() -> None:
    """Once the minimum is bound, remaining pods form a gang with minimum 0 that placement accepts."""
    from grove_sched.cache import SchedulerCache
    from grove_sched.model import Placement
    from grove_sched.placement import place

    from .kit import node

    cache = SchedulerCache()
    cache.node_upserted(node("n1", labels={RACK: "r1"}))
    pg = podgang("g", {"x": (["a", "b"], 1)}, required=RACK)
    pods = by_name(pod("a", gang="g", node_name="n1"), pod("b", gang="g"))
    cache.pod_upserted(pods["a"])
    result = assemble(
        GangKey("default", "g"), pg, pods, AssemblyContext(SCHED, cache.node_label_keys, cache.node_labels)
    )
    assert isinstance(result, ReadyGang)
    assert result.request.groups[0].min_replicas == 0
    placed = place(cache.snapshot(), result.request)
    assert isinstance(placed, Placement)
    assert dict(placed.assignments) == {"b": "n1"}


group_states = st.lists(
    st.tuples(
        st.integers(0, 4),  # minReplicas
        st.lists(st.sampled_from(["pending", "gated", "bound", "foreign"]), min_size=1, max_size=5),
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=80, deadline=None)
@given(group_states)
def test_readiness_rule(groups: list[tuple[int, list[str]]]) -> None:
    """Ready iff every group has pending pods >= minReplicas - bound; the request's minimums are exactly that gap."""
    pods: dict[str, dict[str, Any]] = {}
    spec: dict[str, tuple[list[str], int]] = {}
    for g, (minimum, states) in enumerate(groups):
        names = []
        for i, state in enumerate(states):
            name = f"g{g}-{i}"
            names.append(name)
            pods[name] = pod(
                name,
                gang="pg",
                gated=state == "gated",
                node_name="n1" if state == "bound" else None,
                scheduler="other" if state == "foreign" else SCHED,
            )
        spec[f"g{g}"] = (names, min(minimum, len(names)))
    result = assemble(GangKey("default", "pg"), podgang("pg", spec), pods, ctx())
    gaps = {}
    pending = {}
    for g, (minimum, states) in enumerate(groups):
        gaps[f"g{g}"] = max(0, min(minimum, len(states)) - states.count("bound"))
        pending[f"g{g}"] = states.count("pending")
    ready = all(pending[n] >= gaps[n] for n in gaps) and any(pending.values())
    assert isinstance(result, ReadyGang) == ready
    if isinstance(result, ReadyGang):
        assert {g.name: g.min_replicas for g in result.request.groups} == {n: gaps[n] for n in gaps if pending[n]}
        assert result.required_pods == sum(gaps.values())
        assert all(len(g.pods) == pending[g.name] for g in result.request.groups)
    else:
        assert isinstance(result, Waiting)


def test_gang_being_created_is_waiting_not_malformed() -> None:
    """While the operator reports Initialized=False, missing references only mean the gang is not ready yet."""
    status = {
        "phase": "Pending",
        "conditions": [{"type": "Initialized", "status": "False", "reason": "PodGangPodsCreationPending"}],
    }
    pg = podgang("g", {"x": (["a", "b"], 3)}, status=status)
    result = assemble(GangKey("default", "g"), pg, by_name(pod("a", gang="g")), ctx())
    assert isinstance(result, Waiting)
    assert "still creating" in result.reason


def test_operator_gang_without_initialized_yet_is_waiting_but_hand_made_is_malformed() -> None:
    """The operator creates a PodGang and writes Initialized in a second request; in between its short references
    mean "being created". A hand-made PodGang with the same references is reported as malformed at once."""
    refs = {"x": (["a", "b"], 3)}
    pods = by_name(pod("a", gang="g"))
    managed = podgang("g", refs)
    managed["metadata"].setdefault("labels", {})["app.kubernetes.io/managed-by"] = "grove-operator"
    waiting = assemble(GangKey("default", "g"), managed, pods, ctx())
    assert isinstance(waiting, Waiting)
    assert "still creating" in waiting.reason
    hand_made = assemble(GangKey("default", "g"), podgang("g", refs), pods, ctx())
    assert isinstance(hand_made, Malformed)
    assert any("minReplicas=3" in r for r in hand_made.reasons)
    managed["status"] = {"conditions": [{"type": "Initialized", "status": "True"}]}
    assert isinstance(assemble(GangKey("default", "g"), managed, pods, ctx()), Malformed)


def test_unreadable_pod_spec_is_malformed() -> None:
    """An invalid resource quantity makes the gang malformed with a reason instead of raising."""
    bad = pod("a", gang="g")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    result = assemble(GangKey("default", "g"), podgang("g", {"x": (["a"], 1)}), {"a": bad}, ctx())
    assert isinstance(result, Malformed)
    assert "invalid quantity" in result.reasons[0]
