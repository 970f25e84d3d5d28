"""The pydantic models parse every upstream sample, round-trip it, and keep upstream's wire names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from grove_api import (
    ClusterTopologyBinding,
    Condition,
    ObjectMeta,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueSet,
    PodGang,
    TopologyConstraint,
    format_time,
)

from ..fixtures.samples import load_sample as _load
from ..fixtures.samples import sample_files

SAMPLE_PATHS = sample_files()


def _with_role_names(doc: dict[str, Any]) -> dict[str, Any]:
    """The sample as upstream's defaulting webhook re-serialises it: `roleName: ""` where it was missing."""
    for clique in doc["spec"]["template"]["cliques"]:
        clique["spec"].setdefault("roleName", "")
    return doc


def test_samples_are_present() -> None:
    """The fixture directory holds one PodCliqueSet for each of the eleven upstream sample shapes."""
    assert len(SAMPLE_PATHS) == 11


@pytest.mark.parametrize("path", SAMPLE_PATHS)
def test_sample_parses_and_round_trips(path: str) -> None:
    """Every sample parses and dumps back to the same document (plus the defaulted empty roleName)."""
    doc = _load(path)
    pcs = PodCliqueSet.model_validate(doc)
    dumped = pcs.model_dump(by_alias=True, exclude_none=True)
    assert dumped == _with_role_names(_load(path))
    assert PodCliqueSet.model_validate(dumped) == pcs


def test_missing_role_name_reads_as_empty() -> None:
    """A clique without `roleName` gets the empty role, as upstream's Go defaulting produces."""
    pcs = PodCliqueSet.model_validate(
        _load("user-guide/03_environment-variables-for-pod-discovery/standalone-env-vars.yaml")
    )
    assert pcs.spec.template.cliques[0].spec.role_name == ""


def test_effective_defaults_match_crd_defaults() -> None:
    """Unset optional fields report the CRD/webhook defaults through the `effective_*` helpers."""
    pcs = PodCliqueSet.model_validate(_load("simple/simple1.yaml"))
    template = pcs.spec.template
    assert template.effective_startup_type() == "CliqueStartupTypeAnyOrder"
    assert pcs.spec.effective_update_strategy() == "RollingRecreate"
    group = template.scaling_group_of("pcb")
    assert group is not None
    assert (group.effective_replicas(), group.effective_min_available()) == (1, 1)
    assert template.scaling_group_of("pca") is None
    pca = template.clique("pca")
    assert pca is not None
    assert pca.spec.effective_min_available() == 3


def test_explicit_sample_fields_parse() -> None:
    """simple3's startup type, termination delay and PCSG replica settings come through typed."""
    pcs = PodCliqueSet.model_validate(_load("simple/simple3-explicit-startup-order.yaml"))
    template = pcs.spec.template
    assert template.clique_startup_type == "CliqueStartupTypeExplicit"
    assert template.termination_delay == "1m"
    pcd = template.clique("pcd")
    assert pcd is not None
    assert pcd.spec.starts_after == ["pcb", "pcc"]
    groups = template.pod_clique_scaling_groups or []
    assert [(g.name, g.replicas, g.min_available) for g in groups] == [("sga", 3, 2)]
    assert groups[0].scale_config is not None
    assert groups[0].scale_config.max_replicas == 6


def test_podgang_uses_lowercase_podgroups_key() -> None:
    """PodGang's PodGroups travel under the JSON key `podgroups`, as upstream's CRD spells it."""
    wire = {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "simple1-0", "namespace": "default"},
        "spec": {
            "podgroups": [
                {"name": "simple1-0-pca", "minReplicas": 3, "podReferences": [{"namespace": "default", "name": "p"}]}
            ],
            "topologyConstraint": {"packConstraint": {"required": "topology.kubernetes.io/zone"}},
            "priorityClassName": "high",
        },
        "status": {"phase": "Pending", "placementScore": 0.5},
    }
    gang = PodGang.model_validate(wire)
    assert gang.spec.pod_groups[0].min_replicas == 3
    assert gang.model_dump(by_alias=True, exclude_none=True) == wire
    assert "podgroups" in PodGang.model_validate(gang.model_dump()).model_dump(by_alias=True)["spec"]


def test_podclique_and_scaling_group_round_trip_with_status() -> None:
    """Operator-written PodClique / PCSG objects, status included, survive a dump/parse cycle."""
    pclq_wire = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "metadata": {"name": "simple1-0-pca", "namespace": "default", "labels": {"a": "b"}},
        "spec": {"roleName": "rolea", "podSpec": {"containers": [{"name": "c"}]}, "replicas": 3, "minAvailable": 3},
        "status": {
            "replicas": 3,
            "readyReplicas": 2,
            "updatedReplicas": 3,
            "scheduleGatedReplicas": 0,
            "scheduledReplicas": 3,
            "hpaPodSelector": "x=y",
            "conditions": [
                {
                    "type": "MinAvailableBreached",
                    "status": "True",
                    "lastTransitionTime": "2026-01-02T03:04:05Z",
                    "reason": "InsufficientReadyPods",
                    "message": "",
                }
            ],
            "updateProgress": {
                "updateStartedAt": "2026-01-02T03:04:05Z",
                "podCliqueSetGenerationHash": "g",
                "podTemplateHash": "h",
                "readyPodsSelectedToUpdate": {"current": "p1", "completed": []},
            },
        },
    }
    pclq = PodClique.model_validate(pclq_wire)
    assert pclq.model_dump(by_alias=True, exclude_none=True) == pclq_wire
    pcsg_wire = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueScalingGroup",
        "metadata": {"name": "simple1-0-sga"},
        "spec": {"replicas": 2, "minAvailable": 1, "cliqueNames": ["pcb", "pcc"]},
        "status": {
            "replicas": 2,
            "scheduledReplicas": 1,
            "availableReplicas": 1,
            "updatedReplicas": 0,
            "selector": "s=t",
        },
    }
    pcsg = PodCliqueScalingGroup.model_validate(pcsg_wire)
    assert pcsg.model_dump(by_alias=True, exclude_none=True) == pcsg_wire


def test_cluster_topology_binding_parses_and_validates_domains() -> None:
    """A ClusterTopologyBinding parses; domains must match the lowercase DNS-label-like pattern."""
    wire = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": "default"},
        "spec": {
            "levels": [
                {"domain": "zone", "key": "topology.kubernetes.io/zone"},
                {"domain": "host", "key": "kubernetes.io/hostname"},
            ]
        },
    }
    ct = ClusterTopologyBinding.model_validate(wire)
    assert ct.spec.key_for("host") == "kubernetes.io/hostname"
    assert ct.spec.key_for("rack") is None
    assert ct.model_dump(by_alias=True, exclude_none=True) == wire
    wire["spec"]["levels"][0]["domain"] = "Zone"  # type: ignore[index]
    with pytest.raises(ValidationError):
        ClusterTopologyBinding.model_validate(wire)


def test_topology_constraint_domain_helpers() -> None:
    """`required_domain` prefers pack.required and falls back to the deprecated packDomain."""
    assert TopologyConstraint.model_validate({"pack": {"required": "rack"}}).required_domain() == "rack"
    assert TopologyConstraint.model_validate({"packDomain": "zone"}).required_domain() == "zone"
    tc = TopologyConstraint.model_validate({"topologyName": "t", "pack": {"preferred": "host"}})
    assert (tc.required_domain(), tc.preferred_domain()) == (None, "host")


def test_object_meta_keeps_unknown_fields() -> None:
    """Metadata fields the model does not name (managedFields, …) are kept verbatim."""
    wire = {"name": "x", "managedFields": [{"manager": "kubectl"}], "generation": 2}
    meta = ObjectMeta.model_validate(wire)
    assert meta.generation == 2
    assert meta.model_dump(by_alias=True, exclude_none=True) == wire


def test_time_serialises_as_rfc3339_utc() -> None:
    """Timestamps dump as `YYYY-MM-DDTHH:MM:SSZ` in UTC, whatever zone they were created in."""
    plus_two = timezone(timedelta(hours=2))
    assert format_time(datetime(2026, 1, 1, 2, 0, 0, tzinfo=plus_two)) == "2026-01-01T00:00:00Z"
    assert format_time(datetime(2026, 1, 1, 0, 0, 0)) == "2026-01-01T00:00:00Z"
    cond = Condition(type="Ready", status="True", reason="Ok", last_transition_time=datetime(2026, 5, 1, tzinfo=UTC))
    assert cond.model_dump(by_alias=True)["lastTransitionTime"] == "2026-05-01T00:00:00Z"
    assert cond.model_dump(mode="json", by_alias=True)["lastTransitionTime"] == "2026-05-01T00:00:00Z"


def test_spec_rejects_negative_replicas() -> None:
    """A negative PCS replica count fails model validation, mirroring the CRD minimum."""
    doc = _load("simple/simple1.yaml")
    doc["spec"]["replicas"] = -1
    with pytest.raises(ValidationError):
        PodCliqueSet.model_validate(doc)
