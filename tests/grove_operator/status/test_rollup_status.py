"""Scaling-group and PodCliqueSet status rollups and the TopologyLevelsUnavailable condition (§3.6)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_api import ClusterTopologyBinding, PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_operator import defaults, hashing
from grove_operator.desired import podclique, scalinggroup
from grove_operator.status import podcliqueset as pcs_status
from grove_operator.status import scalinggroup as pcsg_status

NOW = datetime(2026, 11, 22, 8, 0, tzinfo=UTC)
SIMPLE1 = "simple/simple1.yaml"
MULTI = "user-guide/01_core-concepts/multi-node-aggregated.yaml"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

Health = tuple[bool, int, bool]
"""(PodCliqueScheduled, readyReplicas, MinAvailableBreached) of a member PodClique."""


def _with_status(obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "status": status}


def _pclq_status(pclq: dict[str, Any], health: Health, generation_hash: str | None = "gen") -> dict[str, Any]:
    scheduled, ready, breached = health
    label_hash = pclq["metadata"]["labels"]["grove.io/pod-template-hash"]
    return {
        "observedGeneration": 1,
        "readyReplicas": ready,
        "scheduledReplicas": pclq["spec"]["replicas"] if scheduled else 0,
        "currentPodTemplateHash": label_hash,
        "currentPodCliqueSetGenerationHash": generation_hash,
        "conditions": [
            {
                "type": "PodCliqueScheduled",
                "status": str(scheduled),
                "reason": "R",
                "lastTransitionTime": "2026-11-22T07:00:00Z",
            },
            {
                "type": "MinAvailableBreached",
                "status": str(breached),
                "reason": "R",
                "lastTransitionTime": "2026-11-22T07:00:00Z",
            },
        ],
    }


def _with_hash(pcs: PodCliqueSet, value: str = "gen") -> PodCliqueSet:
    return PodCliqueSet.model_validate(
        {**pcs.model_dump(by_alias=True, exclude_none=True), "status": {"currentGenerationHash": value}}
    )


def _pcsg_and_members(
    pcs: PodCliqueSet, group: str, health: list[list[Health]]
) -> tuple[PodCliqueScalingGroup, list[PodClique]]:
    raw = scalinggroup.build_scaling_group(pcs, 0, group)
    raw["metadata"]["uid"] = "uid-pcsg"
    raw["spec"]["replicas"] = len(health)
    pcsg = PodCliqueScalingGroup.model_validate(raw)
    members = []
    for j, replica in enumerate(health):
        for clique_name, h in zip(pcsg.spec.clique_names, replica, strict=True):
            built = podclique.build_pcsg_member_podclique(pcs, pcsg, j, clique_name)
            status = _pclq_status(built, h, hashing.generation_hash(pcs.spec.template))
            members.append(PodClique.model_validate(_with_status(built, status)))
    return pcsg, members


OK: Health = (True, 3, False)
LEADER_OK: Health = (True, 1, False)


@pytest.mark.parametrize(
    ("health", "expected", "breach"),
    [
        pytest.param([[LEADER_OK, OK], [LEADER_OK, OK]], (2, 2, 2, 2), "False", id="all-healthy"),
        pytest.param(
            [[LEADER_OK, OK], [(False, 0, True), (False, 0, True)]], (2, 1, 1, 1), "False", id="one-unscheduled"
        ),
        pytest.param([[LEADER_OK, (True, 1, True)], [(False, 0, True), OK]], (2, 1, 0, 0), "True", id="both-breached"),
        pytest.param([[LEADER_OK, (True, 2, False)], [LEADER_OK, OK]], (2, 2, 1, 1), "False", id="ready-below-min"),
    ],
)
def test_scaling_group_status(
    health: list[list[Health]], expected: tuple[int, int, int, int], breach: str, sample: Callable[[str], PodCliqueSet]
) -> None:
    """replicas, scheduledReplicas, availableReplicas, updatedReplicas and MinAvailableBreached per §3.6."""
    pcs = _with_hash(sample(MULTI))
    pcsg, members = _pcsg_and_members(pcs, "model-instance", health)
    status = pcsg_status.compute_scaling_group_status(pcs, pcsg, members, NOW)
    got = (status["replicas"], status["scheduledReplicas"], status["availableReplicas"], status["updatedReplicas"])
    assert got == expected
    assert status["conditions"][0]["type"] == "MinAvailableBreached"
    assert status["conditions"][0]["status"] == breach
    assert status["selector"] == (
        "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=multinode-aggregated,"
        "grove.io/podcliquescalinggroup=multinode-aggregated-0-model-instance"
    )


def test_scaling_group_missing_member_counts_as_breach(sample: Callable[[str], PodCliqueSet]) -> None:
    """A replica with a missing member PodClique is neither scheduled nor 'not in breach'."""
    pcs = _with_hash(sample(MULTI))
    pcsg, members = _pcsg_and_members(pcs, "model-instance", [[LEADER_OK, OK]])
    status = pcsg_status.compute_scaling_group_status(pcs, pcsg, members[1:], NOW)
    assert (status["scheduledReplicas"], status["availableReplicas"]) == (0, 0)
    assert status["conditions"][0]["status"] == "True"
    assert "currentPodCliqueSetGenerationHash" not in status
    full = pcsg_status.compute_scaling_group_status(pcs, pcsg, members, NOW)
    assert full["currentPodCliqueSetGenerationHash"] == hashing.generation_hash(pcs.spec.template)


def test_gang_termination_condition_cleared_on_recovery(sample: Callable[[str], PodCliqueSet]) -> None:
    """GangTerminationInProgress is dropped when MinAvailableBreached turns False."""
    pcs = _with_hash(sample(MULTI))
    pcsg, members = _pcsg_and_members(pcs, "model-instance", [[LEADER_OK, OK]])
    gt = {
        "type": "GangTerminationInProgress",
        "status": "True",
        "reason": "GangTerminationActive",
        "lastTransitionTime": "2026-11-22T07:00:00Z",
    }
    pcsg = PodCliqueScalingGroup.model_validate(
        _with_status(pcsg.model_dump(by_alias=True, exclude_none=True), {"conditions": [gt]})
    )
    status = pcsg_status.compute_scaling_group_status(pcs, pcsg, members, NOW)
    assert [c["type"] for c in status["conditions"]] == ["MinAvailableBreached"]


def _pcs_children(
    pcs: PodCliqueSet, ready: dict[str, int], pcsg_available: int, pcsg_hash: str = "gen"
) -> tuple[list[PodClique], list[PodCliqueScalingGroup]]:
    pclqs = []
    for clique, count in ready.items():
        built = podclique.build_standalone_podclique(pcs, 0, clique)
        pclqs.append(PodClique.model_validate(_with_status(built, _pclq_status(built, (True, count, False)))))
    group = scalinggroup.build_scaling_group(pcs, 0, "sga")
    group["status"] = {"availableReplicas": pcsg_available, "currentPodCliqueSetGenerationHash": pcsg_hash}
    return pclqs, [PodCliqueScalingGroup.model_validate(group)]


@pytest.mark.parametrize(
    ("ready", "pcsg_available", "pcsg_hash", "expected"),
    [
        pytest.param({"pca": 3, "pcd": 2}, 1, "gen", (1, 1), id="available-and-updated"),
        pytest.param({"pca": 3, "pcd": 2}, 1, "old", (1, 0), id="pcsg-not-updated"),
        pytest.param({"pca": 2, "pcd": 2}, 1, "gen", (0, 0), id="pclq-below-min"),
        pytest.param({"pca": 3}, 1, "gen", (0, 0), id="pclq-missing"),
        pytest.param({"pca": 3, "pcd": 2}, 0, "gen", (0, 0), id="pcsg-unavailable"),
    ],
)
def test_podcliqueset_status(
    ready: dict[str, int],
    pcsg_available: int,
    pcsg_hash: str,
    expected: tuple[int, int],
    sample: Callable[[str], PodCliqueSet],
) -> None:
    """availableReplicas and updatedReplicas follow the §3.6 definitions; hpaPodSelector is always published."""
    pcs = _with_hash(sample(SIMPLE1))
    pclqs, pcsgs = _pcs_children(pcs, ready, pcsg_available, pcsg_hash)
    status = pcs_status.compute_podcliqueset_status(pcs, pclqs, pcsgs, NOW)
    assert (status["availableReplicas"], status["updatedReplicas"]) == expected
    assert status["replicas"] == 1
    assert status["hpaPodSelector"] == "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=simple1"
    assert "conditions" not in status


def test_generation_hash_matches_hashing(sample: Callable[[str], PodCliqueSet]) -> None:
    """Standalone PodCliques are labelled with the per-clique hash of the hashing module."""
    pcs = sample(SIMPLE1)
    built = podclique.build_standalone_podclique(pcs, 0, "pcd")
    assert built["metadata"]["labels"]["grove.io/pod-template-hash"] == hashing.pod_template_hash(
        pcs.spec.template.cliques[3]
    )


def test_topology_condition() -> None:
    """TopologyLevelsUnavailable: False when all levels exist, True when a domain or binding is missing."""
    raw = defaults.default_podcliqueset(yaml.safe_load((EXAMPLES / "disaggregated-inference.yaml").read_text()))
    pcs = PodCliqueSet.model_validate(raw)
    ct = ClusterTopologyBinding.model_validate(yaml.safe_load((EXAMPLES / "cluster-topology.yaml").read_text()))

    def condition(topologies: dict[str, ClusterTopologyBinding], obj: PodCliqueSet = pcs) -> dict[str, Any]:
        status = pcs_status.compute_podcliqueset_status(obj, [], [], NOW, topologies)
        return next(c for c in status["conditions"] if c["type"] == "TopologyLevelsUnavailable")

    ok = condition({"gpu-cluster": ct})
    assert (ok["status"], ok["reason"]) == ("False", "AllClusterTopologyLevelsAvailable")
    other = ct.model_copy(deep=True)
    other.metadata.name = "other"
    assert (condition({"other": other})["status"], condition({"other": other})["reason"]) == (
        "True",
        "ClusterTopologyNotFound",
    )
    assert condition({})["reason"] == "TopologyAwareSchedulingDisabled"
    narrow = ct.model_copy(deep=True)
    narrow.spec.levels = [lvl for lvl in narrow.spec.levels if lvl.domain != "rack"]
    missing = condition({"gpu-cluster": narrow})
    assert (missing["status"], missing["reason"]) == ("True", "ClusterTopologyLevelsUnavailable")
    assert "rack" in missing["message"]


def test_a_member_not_reporting_yet_keeps_the_group_in_breach(sample: Callable[[str], PodCliqueSet]) -> None:
    """A member PodClique without conditions (just recreated) is not healthy: the breach stays True and
    GangTerminationInProgress is not cleared."""
    pcs = _with_hash(sample(MULTI))
    pcsg, members = _pcsg_and_members(pcs, "model-instance", [[LEADER_OK, OK]])
    fresh = members[0].model_copy(update={"status": None})
    gt = {"type": "GangTerminationInProgress", "status": "True", "reason": "R"}
    gt["lastTransitionTime"] = "2026-11-22T07:00:00Z"
    pcsg = PodCliqueScalingGroup.model_validate(
        _with_status(pcsg.model_dump(by_alias=True, exclude_none=True), {"conditions": [gt]})
    )
    status = pcsg_status.compute_scaling_group_status(pcs, pcsg, [fresh, *members[1:]], NOW)
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("MinAvailableBreached", "True"),
        ("GangTerminationInProgress", "True"),
    ]
