"""Fixtures for the desired-state tests: upstream samples loaded and defaulted, and the hierarchy built from them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_operator import defaults
from grove_operator.desired import layout, pod, podclique, scalinggroup

from ...fixtures.samples import sample_files, sample_path

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"
SAMPLE_FILES = sample_files()


def load_pcs(path: Path) -> PodCliqueSet:
    """The first PodCliqueSet document of a YAML file, defaulted as the API server would store it, with a uid."""
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    raw = next(d for d in documents if d.get("kind") == "PodCliqueSet")
    raw = defaults.default_podcliqueset(raw)
    raw["metadata"]["uid"] = f"uid-{raw['metadata']['name']}"
    return PodCliqueSet.model_validate(raw)


@dataclass
class Hierarchy:
    """Every object the operator would create for PCS replica 0..replicas-1 of a PodCliqueSet, before scheduling."""

    pcs: PodCliqueSet
    pcsgs: dict[str, PodCliqueScalingGroup] = field(default_factory=dict)
    pclqs: dict[str, PodClique] = field(default_factory=dict)
    pods: list[dict[str, Any]] = field(default_factory=list)


def build_hierarchy(pcs: PodCliqueSet, image: str = "grove-initc:test") -> Hierarchy:
    """Build PCSGs, PodCliques and pods with the desired builders, as the three controllers would."""
    result = Hierarchy(pcs)
    name = pcs.metadata.name or ""
    for i in range(pcs.spec.replicas or 0):
        for clique in layout.standalone_cliques(pcs.spec.template):
            obj = podclique.build_standalone_podclique(pcs, i, clique.name)
            obj["metadata"]["uid"] = f"uid-{obj['metadata']['name']}"
            result.pclqs[obj["metadata"]["name"]] = PodClique.model_validate(obj)
        for group in layout.scaling_group_configs(pcs.spec.template):
            obj = scalinggroup.build_scaling_group(pcs, i, group.name)
            obj["metadata"]["uid"] = f"uid-{obj['metadata']['name']}"
            pcsg = PodCliqueScalingGroup.model_validate(obj)
            result.pcsgs[pcsg.metadata.name or ""] = pcsg
            for j in range(pcsg.spec.replicas):
                for clique_name in group.clique_names:
                    member = podclique.build_pcsg_member_podclique(pcs, pcsg, j, clique_name)
                    member["metadata"]["uid"] = f"uid-{member['metadata']['name']}"
                    result.pclqs[member["metadata"]["name"]] = PodClique.model_validate(member)
    for pclq in result.pclqs.values():
        for index in range(pclq.spec.replicas):
            built = pod.build_pod(
                pcs, pclq, index, default_scheduler_name="default-scheduler", init_container_image=image
            )
            built["metadata"]["name"] = f"{built['metadata']['generateName']}{index:05d}"
            result.pods.append(built)
    assert name
    return result


@pytest.fixture(scope="session")
def sample() -> Callable[[str], PodCliqueSet]:
    """Load a sample by its path relative to the samples directory."""
    return lambda rel: load_pcs(sample_path(rel))


@pytest.fixture(scope="session")
def hierarchy() -> Callable[[PodCliqueSet], Hierarchy]:
    """Build the full hierarchy of a PodCliqueSet."""
    return build_hierarchy
