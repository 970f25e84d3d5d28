"""What `kubectl grove ... -o json` prints: one model per command, with a JSON schema users can rely on.

The models are the contract: each command builds its answer as one of them, the text output renders that very
answer, `-o json|yaml` dumps it, and `docs/kubectl-grove.schema.json` is generated from them (`python -m
grove_kubectl.output`), so a script reading the JSON and a person reading the screen see the same facts.
Unknown fields are refused, so the schema cannot drift from what is printed.
"""

from __future__ import annotations

import json
import sys
from typing import Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter
from pydantic.alias_generators import to_camel

__all__ = [
    "SCHEMA_ID",
    "Attention",
    "ConstraintView",
    "DomainView",
    "GangPlacement",
    "GpuCount",
    "Output",
    "PlacementOutput",
    "Reason",
    "ReasonCount",
    "TopOutput",
    "TreeNode",
    "TreeOutput",
    "WhyOutput",
    "json_schema",
]

SCHEMA_ID = "https://grove.example/kubectl-grove.schema.json"


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Attention(_Model):
    """A condition that needs attention (a breach, a gang not scheduled, ...)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""


class TreeNode(_Model):
    """One object of the hierarchy: its status word, ready/total counts when it has them, and its children."""

    kind: str
    name: str
    status: str
    ready: int | None = None
    total: int | None = None
    detail: str = ""
    attention: list[Attention] = []
    children: list[TreeNode] = []


class TreeOutput(_Model):
    """`kubectl grove tree`."""

    kind: Literal["Tree"] = "Tree"
    namespace: str
    root: TreeNode


class GpuCount(_Model):
    """GPUs of a node or domain: allocatable, requested by bound pods, and free (allocatable - used)."""

    allocatable: int
    used: int
    free: int


class DomainView(_Model):
    """A topology domain (block, rack, ...) or node; `gangGpus` are the GPUs the gang's pods use in it."""

    level: str
    name: str
    gpus: GpuCount
    gang_gpus: int = 0
    pods: list[str] = []
    children: list[DomainView] = []


class ConstraintView(_Model):
    """A constraint the gang asked for and whether its pods meet it (one domain of `key`)."""

    scope: str
    key: str
    required: bool
    source: Literal["topologyConstraint", "podAffinity"]
    met: bool
    domains: list[str]


class GangPlacement(_Model):
    """One PodGang: where its pods are, what it asked for, and the scheduler's placement score."""

    name: str
    namespace: str
    phase: str
    placement_score: float | None = None
    pods: int
    bound_pods: int
    domains: list[DomainView]
    constraints: list[ConstraintView]


class PlacementOutput(_Model):
    """`kubectl grove placement`."""

    kind: Literal["Placement"] = "Placement"
    target: str
    gangs: list[GangPlacement]


class ReasonCount(_Model):
    """One term of a scheduler message such as "4 Insufficient nvidia.com/gpu"."""

    reason: str
    count: int


class Reason(_Model):
    """One reason the target is not running, where it comes from and, for scheduler reasons, the node counts."""

    category: Literal["gate", "scheduler", "startup", "breach", "termination", "pod", "spec"]
    object: str
    message: str
    nodes_available: int | None = None
    nodes_total: int | None = None
    counts: list[ReasonCount] = []


class WhyOutput(_Model):
    """`kubectl grove why`."""

    kind: Literal["Why"] = "Why"
    target: str
    namespace: str
    running: bool
    summary: str
    reasons: list[Reason]


class TopOutput(_Model):
    """`kubectl grove top`: GPU allocation per topology domain, broadest level first."""

    kind: Literal["Top"] = "Top"
    levels: list[str]
    gpus: GpuCount
    domains: list[DomainView]


Output = TreeOutput | PlacementOutput | WhyOutput | TopOutput


def json_schema() -> dict[str, object]:
    """The JSON schema of every command's `-o json` output (one of the four, told apart by `kind`)."""
    schema: dict[str, object] = TypeAdapter(Output).json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def main() -> int:
    """Print the schema (`python -m grove_kubectl.output > docs/kubectl-grove.schema.json`)."""
    sys.stdout.write(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
