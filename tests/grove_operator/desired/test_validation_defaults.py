"""Webhook defaulting and validation with field paths (§3.12)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_api import ClusterTopologyBinding
from grove_operator import defaults, validation

from ...fixtures.samples import load_sample, sample_files

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _raw(rel: str) -> dict[str, Any]:
    return defaults.default_podcliqueset(load_sample(rel))


def _errors(pcs: dict[str, Any], **kw: Any) -> set[tuple[str, str]]:
    return {(e.field, e.type) for e in validation.validate_podcliqueset(pcs, **kw)}


def test_defaults() -> None:
    """Webhook and CRD defaults fill namespace, clique, PCSG and template fields, and are idempotent."""
    pcs = _raw("simple/simple1.yaml")
    assert pcs["metadata"]["namespace"] == "default"
    pca = pcs["spec"]["template"]["cliques"][0]["spec"]
    assert pca["minAvailable"] == 3
    assert pca["autoScalingConfig"]["minReplicas"] == 3
    assert pca["podSpec"]["restartPolicy"] == "Always"
    assert pca["podSpec"]["terminationGracePeriodSeconds"] == 30
    group = pcs["spec"]["template"]["podCliqueScalingGroups"][0]
    assert (group["replicas"], group["minAvailable"], group["scaleConfig"]["minReplicas"]) == (1, 1, 1)
    template = pcs["spec"]["template"]
    assert template["terminationDelay"] == "4h"
    assert template["headlessServiceConfig"] == {"publishNotReadyAddresses": True}
    assert template["cliqueStartupType"] == "CliqueStartupTypeAnyOrder"
    assert defaults.default_podcliqueset(pcs) == pcs
    frontend = _raw("user-guide/02_pod-and-resource-naming-conventions/multinode-disaggregated-with-frontend.yaml")
    assert frontend["spec"]["template"]["cliques"][0]["spec"]["roleName"] == ""


@pytest.mark.parametrize("rel", sample_files())
def test_samples_are_valid(rel: str) -> None:
    """Every upstream sample passes validation after defaulting."""
    assert validation.validate_podcliqueset(_raw(rel)) == []


def test_negative_replicas() -> None:
    """Negative PCS replicas are rejected at spec.replicas."""
    pcs = _raw("simple/simple1.yaml")
    pcs["spec"]["replicas"] = -1
    assert _errors(pcs) == {("spec.replicas", "Invalid")}


def test_min_available_above_replicas() -> None:
    """Clique and PCSG minAvailable > replicas are rejected at their own paths."""
    pcs = _raw("simple/simple3-explicit-startup-order.yaml")
    pcs["spec"]["template"]["cliques"][1]["spec"]["minAvailable"] = 5
    pcs["spec"]["template"]["podCliqueScalingGroups"][0]["minAvailable"] = 4
    assert _errors(pcs) == {
        ("spec.template.cliques[1].spec.minAvailable", "Invalid"),
        ("spec.template.podCliqueScalingGroups[0].minAvailable", "Invalid"),
        ("spec.template.podCliqueScalingGroups[0].scaleConfig.minReplicas", "Invalid"),
    }


def test_starts_after_cycle_and_unknown() -> None:
    """A startsAfter cycle and an unknown parent are reported."""
    pcs = _raw("simple/simple2-explicit-startup-order.yaml")
    pcs["spec"]["template"]["cliques"][0]["spec"]["startsAfter"] = ["pcd"]
    pcs["spec"]["template"]["cliques"][1]["spec"]["startsAfter"] = ["pca", "nope"]
    errors = validation.validate_podcliqueset(pcs)
    assert {(e.field, e.type) for e in errors} == {
        ("spec.template.cliques", "Invalid"),
        ("spec.template.cliques[1].spec.startsAfter[1]", "NotFound"),
    }
    cycle = next(e for e in errors if e.field == "spec.template.cliques")
    assert "pca" in cycle.detail
    assert "pcd" in cycle.detail


def test_unknown_clique_in_scaling_group() -> None:
    """A PCSG naming a clique that does not exist is rejected at that cliqueNames entry."""
    pcs = _raw("simple/simple1.yaml")
    pcs["spec"]["template"]["podCliqueScalingGroups"][0]["cliqueNames"].append("ghost")
    assert _errors(pcs) == {("spec.template.podCliqueScalingGroups[0].cliqueNames[2]", "NotFound")}


def test_name_length_rule() -> None:
    """pcs + pcsg + clique names above 45 characters are rejected; exactly 45 is accepted."""
    pcs = _raw("simple/simple1.yaml")
    pcs["metadata"]["name"] = "p" * 40
    assert _errors(pcs) == {
        ("spec.template.cliques[1].name", "Invalid"),
        ("spec.template.cliques[2].name", "Invalid"),
    }
    pcs["metadata"]["name"] = "p" * 43
    assert ("spec.template.cliques[0].name", "Invalid") in _errors(pcs)
    pcs["metadata"]["name"] = "p" * 39
    assert _errors(pcs) == set()


def test_other_rules() -> None:
    """Duplicate roles, autoscaling on members, mismatched schedulers and nodeName are rejected."""
    pcs = _raw("simple/simple1.yaml")
    cliques = pcs["spec"]["template"]["cliques"]
    cliques[3]["spec"]["roleName"] = "rolea"
    cliques[1]["spec"]["autoScalingConfig"] = {"maxReplicas": 4}
    cliques[2]["spec"]["podSpec"]["schedulerName"] = "grove-scheduler"
    cliques[0]["spec"]["podSpec"]["nodeName"] = "n1"
    pcs["spec"]["template"]["terminationDelay"] = "0s"
    assert _errors(pcs) == {
        ("spec.template.cliques[3].spec.roleName", "Duplicate"),
        ("spec.template.cliques[1].spec.autoScalingConfig", "Forbidden"),
        ("spec.template.cliques", "Invalid"),
        ("spec.template.cliques[0].spec.podSpec.nodeName", "Forbidden"),
        ("spec.template.terminationDelay", "Invalid"),
    }


def test_topology_rules_on_create() -> None:
    """Unknown topology and unknown domains are rejected; the example passes against its binding."""
    raw = defaults.default_podcliqueset(yaml.safe_load((EXAMPLES / "disaggregated-inference.yaml").read_text()))
    ct = ClusterTopologyBinding.model_validate(yaml.safe_load((EXAMPLES / "cluster-topology.yaml").read_text()))
    assert validation.validate_podcliqueset(raw, topologies={"gpu-cluster": ct}) == []
    assert _errors(raw) == {("spec.template.topologyConstraint.topologyName", "NotFound")}
    raw["spec"]["template"]["cliques"][1]["topologyConstraint"]["pack"]["required"] = "numa"
    assert _errors(raw, topologies={"gpu-cluster": ct}) == {
        ("spec.template.cliques[1].topologyConstraint.pack.required", "NotFound")
    }


def test_update_immutability() -> None:
    """minAvailable, startup type and clique set are immutable; replicas and images are not."""
    old = _raw("simple/simple2-explicit-startup-order.yaml")
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    new["spec"]["template"]["cliques"][0]["spec"]["replicas"] = 4
    new["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["containers"][0]["image"] = "nginx:1"
    assert validation.validate_podcliqueset_update(new, old) == []
    new["spec"]["template"]["cliques"][1]["spec"]["minAvailable"] = 1
    new["spec"]["template"]["cliqueStartupType"] = "CliqueStartupTypeAnyOrder"
    del new["spec"]["template"]["cliques"][3]
    fields = {(e.field, e.type) for e in validation.validate_podcliqueset_update(new, old)}
    assert fields == {
        ("spec.template.cliques[1].spec.minAvailable", "Forbidden"),
        ("spec.template.cliqueStartupType", "Forbidden"),
        ("spec.template.cliques", "Forbidden"),
    }


def test_topology_nesting_rule() -> None:
    """A clique may not require a broader domain than its scaling group or PCS requires."""
    raw = defaults.default_podcliqueset(yaml.safe_load((EXAMPLES / "disaggregated-inference.yaml").read_text()))
    ct = ClusterTopologyBinding.model_validate(yaml.safe_load((EXAMPLES / "cluster-topology.yaml").read_text()))
    raw["spec"]["template"]["cliques"][3]["topologyConstraint"] = {"pack": {"required": "zone"}}
    assert _errors(raw, topologies={"gpu-cluster": ct}) == {
        ("spec.template.cliques[3].topologyConstraint.pack.required", "Invalid")
    }
    raw["spec"]["template"]["cliques"][3]["topologyConstraint"] = {"pack": {"required": "host"}}
    assert _errors(raw, topologies={"gpu-cluster": ct}) == set()


def test_resource_sharing_rules() -> None:
    """resourceSharing must name known templates, valid scopes and known filter targets."""
    pcs = _raw("simple/simple1.yaml")
    template = pcs["spec"]["template"]
    template["resourceClaimTemplates"] = [{"name": "gpu", "templateSpec": {}}]
    template["resourceSharing"] = [
        {"name": "gpu", "scope": "AllReplicas", "filter": {"childCliqueNames": ["pca", "ghost"]}},
        {"name": "nope", "scope": "PerReplica"},
        {"name": "ext", "namespace": "other", "scope": "Sometimes"},
    ]
    template["podCliqueScalingGroups"][0]["resourceSharing"] = [
        {"name": "gpu", "scope": "PerReplica", "filter": {"childCliqueNames": ["pca"]}}
    ]
    assert _errors(pcs) == {
        ("spec.template.resourceSharing[0].filter.childCliqueNames[1]", "NotFound"),
        ("spec.template.resourceSharing[1].name", "NotFound"),
        ("spec.template.resourceSharing[2].scope", "Invalid"),
        ("spec.template.podCliqueScalingGroups[0].resourceSharing[0].filter.childCliqueNames[0]", "NotFound"),
    }


def test_field_error_renders_path() -> None:
    """A FieldError renders as `path: Type: detail`, the form admission denials use."""
    pcs = _raw("simple/simple1.yaml")
    pcs["spec"]["replicas"] = -1
    assert [str(e) for e in validation.validate_podcliqueset(pcs)] == [
        "spec.replicas: Invalid: must be greater than or equal to 0"
    ]
