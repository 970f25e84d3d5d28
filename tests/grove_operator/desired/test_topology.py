"""Topology translation into PodGang constraints with a ClusterTopologyBinding (§1.6, §3.3)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_api import ClusterTopologyBinding, PodCliqueSet, TopologyConstraint, TopologyPackConstraint
from grove_api import labels as gl
from grove_operator.desired import podgang
from grove_operator.desired.topology import REASON_LEVELS_UNAVAILABLE, REASON_TOPOLOGY_NOT_FOUND, TopologyTranslator

LoadSample = Callable[[str], PodCliqueSet]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def llm(sample: LoadSample) -> PodCliqueSet:
    """The disaggregated-inference example PodCliqueSet, defaulted."""
    from grove_operator import defaults

    raw = yaml.safe_load((EXAMPLES / "disaggregated-inference.yaml").read_text())
    raw = defaults.default_podcliqueset(raw)
    raw["metadata"]["uid"] = "uid-llm"
    return PodCliqueSet.model_validate(raw)


@pytest.fixture
def topologies() -> dict[str, ClusterTopologyBinding]:
    """The example cluster topology, by name."""
    ct = ClusterTopologyBinding.model_validate(yaml.safe_load((EXAMPLES / "cluster-topology.yaml").read_text()))
    return {ct.metadata.name or "": ct}


def _gangs(pcs: PodCliqueSet, topologies: dict[str, ClusterTopologyBinding]) -> dict[str, dict[str, Any]]:
    plans = podgang.expected_podgangs(pcs, {}, topologies)
    return {p.name: podgang.build_podgang(pcs, p, [], "grove-scheduler") for p in plans}


def test_example_translation(llm: PodCliqueSet, topologies: dict[str, ClusterTopologyBinding]) -> None:
    """prefill → PodGroup rack; decode replica 0 → group config rack; scaled gang → rack; PCS → preferred block."""
    gangs = _gangs(llm, topologies)
    assert list(gangs) == ["llm-0", "llm-0-decode-0"]
    base = gangs["llm-0"]["spec"]
    assert base["topologyConstraint"] == {"packConstraint": {"preferred": "topology.kubernetes.io/block"}}
    groups = {g["name"]: g for g in base["podgroups"]}
    assert list(groups) == ["llm-0-router", "llm-0-prefill", "llm-0-decode-0-dleader", "llm-0-decode-0-dworker"]
    assert groups["llm-0-prefill"]["topologyConstraint"] == {
        "packConstraint": {"required": "topology.kubernetes.io/rack"}
    }
    assert "topologyConstraint" not in groups["llm-0-router"]
    assert base["topologyConstraintGroupConfigs"] == [
        {
            "name": "llm-0-decode-0",
            "podGroupNames": ["llm-0-decode-0-dleader", "llm-0-decode-0-dworker"],
            "topologyConstraint": {"packConstraint": {"required": "topology.kubernetes.io/rack"}},
        }
    ]
    scaled = gangs["llm-0-decode-0"]["spec"]
    assert scaled["topologyConstraint"] == {"packConstraint": {"required": "topology.kubernetes.io/rack"}}
    assert [g["name"] for g in scaled["podgroups"]] == ["llm-0-decode-1-dleader", "llm-0-decode-1-dworker"]
    assert "topologyConstraintGroupConfigs" not in scaled
    for gang in gangs.values():
        assert gang["metadata"]["annotations"][gl.ANNOTATION_TOPOLOGY_NAME] == "gpu-cluster"
        assert gang["metadata"]["labels"]["app"] == "llm"
        assert gang["metadata"]["labels"][gl.LABEL_SCHEDULER_NAME] == "grove-scheduler"
        assert gang["metadata"]["labels"][gl.LABEL_COMPONENT] == "podgang"


def test_without_binding_constraints_are_dropped(llm: PodCliqueSet) -> None:
    """Without the named binding no constraint is emitted and the reason is recorded."""
    gangs = _gangs(llm, {})
    for gang in gangs.values():
        assert "topologyConstraint" not in gang["spec"]
        assert "topologyConstraintGroupConfigs" not in gang["spec"]
        assert all("topologyConstraint" not in g for g in gang["spec"]["podgroups"])
        assert gl.ANNOTATION_TOPOLOGY_NAME not in gang["metadata"].get("annotations", {})
    translator = TopologyTranslator(llm, {})
    translator.translate_all()
    assert list(translator.problems) == [REASON_TOPOLOGY_NOT_FOUND]


def test_missing_domain_drops_only_that_constraint(
    llm: PodCliqueSet, topologies: dict[str, ClusterTopologyBinding]
) -> None:
    """A domain absent from the binding drops that constraint; the others still translate."""
    llm.spec.template.cliques[1].topology_constraint = TopologyConstraint(pack=TopologyPackConstraint(required="numa"))
    gangs = _gangs(llm, topologies)
    groups = {g["name"]: g for g in gangs["llm-0"]["spec"]["podgroups"]}
    assert "topologyConstraint" not in groups["llm-0-prefill"]
    assert gangs["llm-0"]["spec"]["topologyConstraint"]["packConstraint"]["preferred"] == "topology.kubernetes.io/block"
    translator = TopologyTranslator(llm, topologies)
    translator.translate_all()
    assert list(translator.problems) == [REASON_LEVELS_UNAVAILABLE]
    assert "numa" in translator.problems[REASON_LEVELS_UNAVAILABLE][0]


def test_scaled_gang_falls_back_to_pcs_constraint(
    llm: PodCliqueSet, topologies: dict[str, ClusterTopologyBinding]
) -> None:
    """A scaled gang of a group without its own constraint inherits the PCS constraint."""
    llm.spec.template.pod_clique_scaling_groups[0].topology_constraint = None  # type: ignore[index]
    gangs = _gangs(llm, topologies)
    assert gangs["llm-0-decode-0"]["spec"]["topologyConstraint"] == {
        "packConstraint": {"preferred": "topology.kubernetes.io/block"}
    }
    assert "topologyConstraintGroupConfigs" not in gangs["llm-0"]["spec"]
