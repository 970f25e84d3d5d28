"""PodClique status math and conditions (§3.6)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as hst

from grove_api import PodClique
from grove_operator.status import podclique as st

NOW = datetime(2026, 11, 22, 8, 0, tzinfo=UTC)


def _pclq(
    min_available: int = 2, replicas: int = 3, status: dict[str, Any] | None = None, member: bool = False
) -> PodClique:
    labels = {
        "app.kubernetes.io/managed-by": "grove-operator",
        "app.kubernetes.io/part-of": "pcs",
        "grove.io/pod-template-hash": "h1",
        "grove.io/podcliqueset-replica-index": "0",
    }
    if member:
        labels["grove.io/podcliquescalinggroup"] = "pcs-0-sg"
    return PodClique.model_validate(
        {
            "metadata": {"name": "pcs-0-a", "labels": labels, "generation": 1},
            "spec": {"podSpec": {}, "replicas": replicas, "minAvailable": min_available},
            "status": {"observedGeneration": 1} if status is None else status,
        }
    )


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions", [])}


@pytest.mark.parametrize(
    ("states", "counts", "scheduled_cond", "breach"),
    [
        pytest.param(
            ["gated"] * 3,
            (3, 0, 0, 3),
            ("False", "InsufficientScheduledPods"),
            ("True", "ScheduledReplicasBelowMinAvailable"),
            id="all-gated",
        ),
        pytest.param(
            ["ready", "pending", "gated"],
            (3, 1, 2, 1),
            ("True", "SufficientScheduledPods"),
            ("False", "SufficientReadyPods"),
            id="starting-counts-as-available",
        ),
        pytest.param(
            ["ready", "crashloop", "gated"],
            (3, 1, 2, 1),
            ("True", "SufficientScheduledPods"),
            ("True", "InsufficientReadyPods"),
            id="crashloop",
        ),
        pytest.param(
            ["ready", "started-not-ready", "ready"],
            (3, 2, 3, 0),
            ("True", "SufficientScheduledPods"),
            ("False", "SufficientReadyPods"),
            id="one-unready-of-three",
        ),
        pytest.param(
            ["started-not-ready", "started-not-ready", "ready"],
            (3, 1, 3, 0),
            ("True", "SufficientScheduledPods"),
            ("True", "InsufficientReadyPods"),
            id="two-unready",
        ),
        pytest.param(
            ["ready", "ready", "terminating"],
            (2, 2, 2, 0),
            ("True", "SufficientScheduledPods"),
            ("False", "SufficientReadyPods"),
            id="terminating-ignored",
        ),
        pytest.param(
            ["ready", "terminating", "gated"],
            (2, 1, 1, 1),
            ("False", "InsufficientScheduledPods"),
            ("True", "ScheduledReplicasBelowMinAvailable"),
            id="below-min-scheduled",
        ),
    ],
)
def test_counts_and_conditions(
    states: list[str],
    counts: tuple[int, int, int, int],
    scheduled_cond: tuple[str, str],
    breach: tuple[str, str],
    pod: Callable[..., dict[str, Any]],
) -> None:
    """replicas/ready/scheduled/gated and both conditions follow the §3.6 table (minAvailable 2)."""
    pods = [pod(f"p{i}", s) for i, s in enumerate(states)]
    status = st.compute_podclique_status(_pclq(), pods, NOW)
    assert (
        status["replicas"],
        status["readyReplicas"],
        status["scheduledReplicas"],
        status["scheduleGatedReplicas"],
    ) == counts
    conditions = _conditions(status)
    assert conditions["PodCliqueScheduled"] == scheduled_cond
    assert conditions["MinAvailableBreached"] == breach


def test_updated_replicas_and_current_hashes(pod: Callable[..., dict[str, Any]]) -> None:
    """updatedReplicas counts pods on the label hash; current hashes are set only when all pods are updated."""
    mixed = [pod("a", "ready"), pod("b", "ready", template_hash="old")]
    status = st.compute_podclique_status(_pclq(), mixed, NOW, pcs_generation_hash="g1")
    assert status["updatedReplicas"] == 1
    assert "currentPodTemplateHash" not in status
    status = st.compute_podclique_status(_pclq(), [pod("a", "ready"), pod("b", "ready")], NOW, pcs_generation_hash="g1")
    assert (
        status["updatedReplicas"],
        status["currentPodTemplateHash"],
        status["currentPodCliqueSetGenerationHash"],
    ) == (2, "h1", "g1")


def test_no_conditions_before_observed_generation(pod: Callable[..., dict[str, Any]]) -> None:
    """Conditions are only written once observedGeneration is set."""
    status = st.compute_podclique_status(_pclq(status={}), [pod("a", "ready")], NOW)
    assert "conditions" not in status
    assert status["replicas"] == 1


def test_update_in_progress_makes_breach_unknown(pod: Callable[..., dict[str, Any]]) -> None:
    """While a rolling update runs, MinAvailableBreached is Unknown/UpdateInProgress and hashes are not advanced."""
    progress = {"updateStartedAt": "2026-11-22T07:00:00Z", "podCliqueSetGenerationHash": "g2", "podTemplateHash": "h2"}
    pclq = _pclq(status={"observedGeneration": 1, "updateProgress": progress})
    status = st.compute_podclique_status(pclq, [pod("a", "gated"), pod("b", "gated", template_hash="h2")], NOW)
    assert _conditions(status)["MinAvailableBreached"] == ("Unknown", "UpdateInProgress")
    assert status["updatedReplicas"] == 1
    assert "currentPodTemplateHash" not in status


def test_last_transition_time_preserved(pod: Callable[..., dict[str, Any]]) -> None:
    """An unchanged condition keeps its lastTransitionTime; a flipped one takes `now`."""
    pods = [pod("a", "ready"), pod("b", "ready")]
    first = st.compute_podclique_status(_pclq(), pods, NOW)
    later = NOW + timedelta(minutes=5)
    second = st.compute_podclique_status(_pclq(status=first), pods, later)
    assert second["conditions"] == first["conditions"]
    third = st.compute_podclique_status(_pclq(status=second), [pod("a", "gated"), pod("b", "ready")], later)
    times = {c["type"]: c["lastTransitionTime"] for c in third["conditions"]}
    assert times == {
        "PodCliqueScheduled": "2026-11-22T08:05:00Z",
        "MinAvailableBreached": "2026-11-22T08:05:00Z",
        "PodCliqueAvailable": "2026-11-22T08:05:00Z",
    }


def test_hpa_selector_only_for_standalone(pod: Callable[..., dict[str, Any]]) -> None:
    """Standalone PodCliques publish hpaPodSelector; scaling-group members publish none."""
    standalone = st.compute_podclique_status(_pclq(), [], NOW)
    assert standalone["hpaPodSelector"] == (
        "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=pcs,grove.io/podclique=pcs-0-a"
    )
    assert "hpaPodSelector" not in st.compute_podclique_status(_pclq(member=True), [], NOW)


STATES = ["gated", "pending", "starting", "ready", "crashloop", "started-not-ready", "terminating"]


@given(states=hst.lists(hst.sampled_from(STATES), max_size=10), min_available=hst.integers(1, 4))
def test_count_invariants(states: list[str], min_available: int, pod: Callable[..., dict[str, Any]]) -> None:
    """ready, scheduled and gated never exceed replicas; scheduled + gated == replicas; breach implies a reason."""
    pods = [pod(f"p{i}", s) for i, s in enumerate(states)]
    status = st.compute_podclique_status(_pclq(min_available=min_available, replicas=4), pods, NOW)
    replicas = status["replicas"]
    assert replicas == sum(1 for s in states if s != "terminating")
    assert status["readyReplicas"] <= status["scheduledReplicas"] <= replicas
    assert status["scheduledReplicas"] + status["scheduleGatedReplicas"] == replicas
    conditions = _conditions(status)
    assert (conditions["PodCliqueScheduled"][0] == "True") == (status["scheduledReplicas"] >= min_available)
    if conditions["PodCliqueScheduled"][0] == "False":
        assert conditions["MinAvailableBreached"] == ("True", "ScheduledReplicasBelowMinAvailable")
