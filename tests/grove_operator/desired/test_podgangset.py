"""Desired pods, PodGang and status of a first-API PodGangSet."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_api import PodGang, PodGangSet
from grove_operator.desired.podgangset import build_pgs_pod, build_pgs_podgang, pgs_pod_index, pgs_pod_name
from grove_operator.status.podgangset import compute_podgangset_status

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _pgs(scheduler: str | None = None) -> PodGangSet:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}], "schedulingGates": [{"name": "other"}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return PodGangSet.model_validate(
        {
            "metadata": {"name": "g", "namespace": "ns", "uid": "u"},
            "spec": {
                "template": {"metadata": {"labels": {"app": "w"}}, "spec": spec},
                "replicas": 4,
                "minAvailable": 3,
            },
        }
    )


@given(st.text(alphabet="ab-0", min_size=1, max_size=6), st.integers(min_value=0, max_value=10**6))
def test_pod_names_round_trip(name: str, index: int) -> None:
    """Every pod name maps back to its index; no other name of the set's prefix does."""
    assert pgs_pod_index(name, pgs_pod_name(name, index)) == index
    assert pgs_pod_index(name, f"{name}-0{index}") is None


def test_pod_is_gated_labelled_and_keeps_its_scheduler_and_foreign_gates() -> None:
    """Grove's gate first, the template's gates kept; schedulerName kept when set, the default otherwise."""
    pod = build_pgs_pod(_pgs("custom"), 2, [], default_scheduler_name="grove-scheduler")
    assert pod["metadata"]["name"] == "g-2"
    assert [g["name"] for g in pod["spec"]["schedulingGates"]] == ["grove.io/podgang-pending-creation", "other"]
    assert pod["spec"]["schedulerName"] == "custom"
    assert pod["metadata"]["labels"] == {
        "app": "w",
        "app.kubernetes.io/managed-by": "grove-operator",
        "grove.dynamo.ai/podgangset": "g",
        "grove.dynamo.ai/pod-index": "2",
        "grove.io/podgang": "g",
    }
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "PodGangSet"
    assert build_pgs_pod(_pgs(), 0, [], default_scheduler_name="grove-scheduler")["spec"]["schedulerName"] == (
        "grove-scheduler"
    )


def test_podgang_has_one_group_with_the_gang_minimum_and_live_pods_in_index_order() -> None:
    """minAvailable is the PodGroup's minimum; terminating pods are not referenced."""
    pods = [{"metadata": {"name": f"g-{i}"}} for i in (10, 2, 1)]
    pods.append({"metadata": {"name": "g-3", "deletionTimestamp": "2026-01-01T00:00:00Z"}})
    gang = build_pgs_podgang(_pgs(), pods, "grove-scheduler")
    (group,) = gang["spec"]["podgroups"]
    assert group["minReplicas"] == 3
    assert [r["name"] for r in group["podReferences"]] == ["g-1", "g-2", "g-10"]
    assert gang["metadata"]["labels"]["grove.io/scheduler-name"] == "grove-scheduler"


def test_status_repeats_the_schedulers_reason_until_the_gang_is_placed() -> None:
    """Scheduled=False carries the PodGang's reason and message; once minAvailable pods are bound it is True."""
    pending = [{"metadata": {"name": f"g-{i}"}, "spec": {}} for i in range(4)]
    gang = PodGang.model_validate(
        {
            "metadata": {"name": "g"},
            "spec": {"podgroups": [{"name": "g", "minReplicas": 3}]},
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "Scheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/2 nodes are available", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                ],
            },
        }
    )  # fmt: skip
    status = compute_podgangset_status(_pgs(), pending, gang, NOW)
    scheduled = next(c for c in status["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False", "Unschedulable", "0/2 nodes are available",
    )  # fmt: skip
    assert (status["replicas"], status["scheduled"], status["selector"]) == (4, False, "grove.dynamo.ai/podgangset=g")
    bound = [{"metadata": {"name": f"g-{i}"}, "spec": {"nodeName": "n"}} for i in range(3)]
    placed = compute_podgangset_status(_pgs(), bound, gang, NOW)
    assert placed["scheduled"] is True
    assert placed["scheduledReplicas"] == 3
