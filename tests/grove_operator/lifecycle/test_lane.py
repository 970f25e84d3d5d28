"""The replica lane's view of units the cache has not caught up with, and when a unit's update is over."""

from __future__ import annotations

from typing import Any

from grove_api import PodClique, PodCliqueScalingGroup
from grove_operator import hashing
from grove_operator.lifecycle.lane import Sources, lane_allows, member_deletions, replica_lane
from grove_operator.lifecycle.podrollout import plan_pods
from grove_operator.lifecycle.progress import podclique_progress
from grove_operator.parsed import defaulted_podcliqueset
from grove_operator.scalinggroup.members import MemberDeletionObserver
from grove_runtime.clock import FakeClock
from grove_runtime.expectations import Expectations
from grove_runtime.keys import ObjectKey

from ._objects import pod

Obj = dict[str, Any]


def _clique(name: str) -> Obj:
    pod_spec = {"containers": [{"name": "c", "image": "registry.example.com/llm:2"}]}
    return {"name": name, "spec": {"roleName": name, "replicas": 2, "minAvailable": 2, "podSpec": pod_spec}}


PCS = defaulted_podcliqueset(
    {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"replicas": 1, "template": {"cliques": [_clique("a"), _clique("b")]}},
    }
)
HASHES = hashing.clique_hashes(PCS.spec.template)
NEW = HASHES["a"]


def _pclq(name: str, clique: str, hashes: dict[str, str] = HASHES) -> PodClique:
    labels = {"grove.io/pod-template-hash": hashes[clique]}
    return PodClique.model_validate({"metadata": {"name": name, "labels": labels}, "spec": _clique(clique)["spec"]})


def _sources(pods: dict[str, list[Obj]], pending: set[str]) -> Sources:
    pclqs = {"p-0-a": _pclq("p-0-a", "a"), "p-0-b": _pclq("p-0-b", "b")}
    return Sources(pclqs.get, lambda _name: None, lambda name: pods.get(name, []), lambda name: name in pending)


def test_a_unit_with_pod_writes_the_cache_does_not_show_yet_holds_the_earlier_units_back() -> None:
    """Clique `b` just deleted a pod (its expectation is pending) and the cache still shows both Ready: `a`, still
    on the old template, must not take a pod down too; once the deletion is observed it may."""
    pods = {
        "p-0-a": [pod("a1", "old", pclq="p-0-a"), pod("a2", "old", pclq="p-0-a")],
        "p-0-b": [pod("b1", NEW, pclq="p-0-b"), pod("b2", NEW, pclq="p-0-b")],
    }
    lane = replica_lane(PCS, 0, _sources(pods, pending={"p-0-b"}), HASHES)
    assert [(u.name, u.quiet) for u in lane] == [("p-0-a", True), ("p-0-b", False)]
    assert not lane_allows(lane, "p-0-a")
    assert lane_allows(replica_lane(PCS, 0, _sources(pods, pending=set()), HASHES), "p-0-a")


def test_an_update_is_not_over_while_its_last_old_pod_is_still_terminating() -> None:
    """The last old pod deleted: the PodClique's update stays open until it is gone, then ends."""
    now = FakeClock().now()
    opened = podclique_progress(None, "gen", NEW, plan_pods([pod("o", "old"), pod("n", NEW)], NEW, 2, turn=True), now)
    assert opened is not None
    assert opened.update_ended_at is None
    going = plan_pods([pod("o", "old", terminating=True), pod("n", NEW)], NEW, 2, turn=True)
    assert (going.old, going.going) == (0, 1)
    still = podclique_progress(opened, "gen", NEW, going, now)
    assert still is not None
    assert still.update_ended_at is None
    done = podclique_progress(still, "gen", NEW, plan_pods([pod("m", NEW), pod("n", NEW)], NEW, 2, turn=True), now)
    assert done is not None
    assert done.update_ended_at == now


def test_a_scaling_group_recreating_a_replica_the_cache_does_not_show_yet_holds_the_earlier_units_back() -> None:
    """A scaling group just deleted the member PodCliques of a replica; until the cache shows them going, the
    group is not quiet, so a standalone clique before it waits; the informer handler counts the deletions seen."""
    pcs = defaulted_podcliqueset(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "replicas": 1,
                "template": {
                    "cliques": [_clique("a"), _clique("m")],
                    "podCliqueScalingGroups": [{"name": "g", "cliqueNames": ["m"], "replicas": 1}],
                },
            },
        }
    )
    hashes = hashing.clique_hashes(pcs.spec.template)
    pclqs = {"p-0-a": _pclq("p-0-a", "a", hashes), "p-0-g-0-m": _pclq("p-0-g-0-m", "m", hashes)}
    pods = {
        "p-0-a": [pod("a1", "old", pclq="p-0-a"), pod("a2", "old", pclq="p-0-a")],
        "p-0-g-0-m": [pod("m1", hashes["m"], pclq="p-0-g-0-m"), pod("m2", hashes["m"], pclq="p-0-g-0-m")],
    }
    group = PodCliqueScalingGroup.model_validate(
        {"metadata": {"name": "p-0-g"}, "spec": {"replicas": 1, "minAvailable": 1, "cliqueNames": ["m"]}}
    )
    expectations: Expectations[ObjectKey] = Expectations(timeout=300, clock=FakeClock())
    key = ObjectKey("ns", member_deletions("p-0-g"))

    def pending(name: str) -> bool:
        return not expectations.satisfied(ObjectKey("ns", name))

    def sources() -> Sources:
        return Sources(pclqs.get, {"p-0-g": group}.get, lambda name: pods.get(name, []), pending)

    assert lane_allows(replica_lane(pcs, 0, sources(), hashes), "p-0-a")
    expectations.expect(key, deletions=1)
    assert not lane_allows(replica_lane(pcs, 0, sources(), hashes), "p-0-a")
    labels = {"grove.io/podcliquescalinggroup": "p-0-g"}
    member: Obj = {"metadata": {"name": "p-0-g-0-m", "namespace": "ns", "labels": labels}}
    going: Obj = {"metadata": {**member["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    MemberDeletionObserver(expectations).on_update(member, going)
    assert expectations.satisfied(key)
    assert lane_allows(replica_lane(pcs, 0, sources(), hashes), "p-0-a")
