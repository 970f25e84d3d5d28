"""The small explicit table that turns Grove's models into CRDs: names, scope, subresources, columns, extras.

Everything a model cannot say about itself lives here, per kind, in one place: short names, scale paths, printer
columns (grove-reference §1.1), CRD-level defaults of optional fields, list-map keys, and the CEL rules upstream
declares (restricted to the CEL subset our simulated API server evaluates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from grove_api._schema import Schema, TypeExtras
from grove_api.common import TopologyConstraint, TopologyPackConstraint
from grove_api.dynamo_v1 import DynamoPodClique, PodGangSet
from grove_api.podclique import PodClique
from grove_api.podcliqueset import PodCliqueSet
from grove_api.podgang import PodGang
from grove_api.queue import Queue
from grove_api.reservation import Reservation
from grove_api.scalinggroup import PodCliqueScalingGroup
from grove_api.topology import ClusterTopologyBinding

__all__ = ["CRD_KINDS", "TYPE_EXTRAS", "CRDKind", "PrinterColumn", "ScalePaths"]


def _immutable(what: str) -> list[dict[str, str]]:
    """A transition rule rejecting any change of the field once set."""
    return [{"rule": "self == oldSelf", "message": f"{what} is immutable"}]


@dataclass(frozen=True)
class PrinterColumn:
    """One `kubectl get` column."""

    name: str
    type: str
    json_path: str
    priority: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The `additionalPrinterColumns` entry."""
        column: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.priority:
            column["priority"] = self.priority
        return column


@dataclass(frozen=True)
class ScalePaths:
    """JSON paths of the scale subresource."""

    spec_replicas: str
    status_replicas: str
    label_selector: str


@dataclass(frozen=True)
class CRDKind:
    """Everything needed to emit one CustomResourceDefinition."""

    model: type[BaseModel]
    group: str
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    scope: str
    description: str
    scale: ScalePaths | None
    printer_columns: tuple[PrinterColumn, ...]
    path_extras: dict[str, Schema] = field(default_factory=dict)
    """Extras keyed by dotted JSON path from the object root; `name[]` steps into a list's items."""
    version: str = "v1alpha1"
    categories: tuple[str, ...] = ("grove",)


_AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp")


def _breached(priority: int = 1) -> PrinterColumn:
    """The MinAvailableBreached condition status column."""
    return PrinterColumn(
        "MinBreached", "string", '.status.conditions[?(@.type=="MinAvailableBreached")].status', priority
    )


TYPE_EXTRAS: TypeExtras = {
    TopologyConstraint: {
        "x-kubernetes-validations": [
            {
                "rule": "has(self.pack) || has(self.packDomain)",
                "message": "topologyConstraint must specify pack or deprecated packDomain",
            },
            {
                "rule": "!(has(self.packDomain) && has(self.pack) && has(self.pack.required))",
                "message": "must not set both pack.required and deprecated packDomain",
            },
        ],
        "properties": {"topologyName": {"x-kubernetes-validations": _immutable("topologyName")}},
    },
    TopologyPackConstraint: {
        "x-kubernetes-validations": [
            {
                "rule": "has(self.required) || has(self.preferred)",
                "message": "pack must specify at least one of required or preferred",
            }
        ]
    },
}

_PCSG_CONFIG = "spec.template.podCliqueScalingGroups[]"

CRD_KINDS: tuple[CRDKind, ...] = (
    CRDKind(
        model=PodCliqueSet,
        group="grove.io",
        kind="PodCliqueSet",
        plural="podcliquesets",
        singular="podcliqueset",
        short_names=("pcs",),
        scope="Namespaced",
        description="A set of PodGangs: each replica is a full copy of a multi-role inference system.",
        scale=ScalePaths(".spec.replicas", ".status.replicas", ".status.hpaPodSelector"),
        printer_columns=(
            PrinterColumn("Replicas", "integer", ".spec.replicas"),
            PrinterColumn("Available", "integer", ".status.availableReplicas"),
            PrinterColumn("Updated", "integer", ".status.updatedReplicas"),
            PrinterColumn("PCLQs-Updated", "integer", ".status.updateProgress.updatedPodCliquesCount"),
            PrinterColumn("PCLQs-Total", "integer", ".status.updateProgress.totalPodCliquesCount"),
            PrinterColumn("PCSGs-Updated", "integer", ".status.updateProgress.updatedPodCliqueScalingGroupsCount"),
            PrinterColumn("PCSGs-Total", "integer", ".status.updateProgress.totalPodCliqueScalingGroupsCount"),
            _AGE,
        ),
        path_extras={
            "spec.replicas": {"default": 0},
            "spec.updateStrategy.type": {"default": "RollingRecreate"},
            "spec.template.cliqueStartupType": {
                "default": "CliqueStartupTypeAnyOrder",
                "x-kubernetes-validations": _immutable("cliqueStartupType"),
            },
            "spec.template.cliques": {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
            f"{_PCSG_CONFIG}.replicas": {"default": 1},
            f"{_PCSG_CONFIG}.minAvailable": {"default": 1},
        },
    ),
    CRDKind(
        model=PodClique,
        group="grove.io",
        kind="PodClique",
        plural="podcliques",
        singular="podclique",
        short_names=("pclq",),
        scope="Namespaced",
        description="A set of pods running the same template in one role.",
        scale=ScalePaths(".spec.replicas", ".status.replicas", ".status.hpaPodSelector"),
        printer_columns=(
            PrinterColumn("MinAvail", "integer", ".spec.minAvailable"),
            PrinterColumn("Replicas", "integer", ".spec.replicas"),
            PrinterColumn("Ready", "integer", ".status.readyReplicas"),
            PrinterColumn("Scheduled", "integer", ".status.scheduledReplicas"),
            PrinterColumn("Updated", "integer", ".status.updatedReplicas"),
            PrinterColumn("Gated", "integer", ".status.scheduleGatedReplicas", 1),
            _breached(),
            _AGE,
        ),
        path_extras={"spec.roleName": {"x-kubernetes-validations": _immutable("roleName")}},
    ),
    CRDKind(
        model=PodCliqueScalingGroup,
        group="grove.io",
        kind="PodCliqueScalingGroup",
        plural="podcliquescalinggroups",
        singular="podcliquescalinggroup",
        short_names=("pcsg",),
        scope="Namespaced",
        description="A group of PodCliques that scale together, one PodClique per member per replica.",
        scale=ScalePaths(".spec.replicas", ".status.replicas", ".status.selector"),
        printer_columns=(
            PrinterColumn("MinAvail", "integer", ".spec.minAvailable"),
            PrinterColumn("Replicas", "integer", ".spec.replicas"),
            PrinterColumn("Available", "integer", ".status.availableReplicas"),
            PrinterColumn("Scheduled", "integer", ".status.scheduledReplicas"),
            PrinterColumn("Updated", "integer", ".status.updatedReplicas"),
            PrinterColumn("PCLQs-Updated", "integer", ".status.updateProgress.updatedPodCliquesCount"),
            PrinterColumn("PCLQs-Total", "integer", ".status.updateProgress.totalPodCliquesCount"),
            _breached(),
            _AGE,
        ),
        path_extras={
            "spec.replicas": {"default": 1},
            "spec.minAvailable": {"default": 1, "x-kubernetes-validations": _immutable("minAvailable")},
            "spec.cliqueNames": {"x-kubernetes-validations": _immutable("cliqueNames")},
        },
    ),
    CRDKind(
        model=ClusterTopologyBinding,
        group="grove.io",
        kind="ClusterTopologyBinding",
        plural="clustertopologybindings",
        singular="clustertopologybinding",
        short_names=("ct",),
        scope="Cluster",
        description="The ordered topology hierarchy Grove packs gangs into, bound to scheduler topologies.",
        scale=None,
        printer_columns=(PrinterColumn("Domains", "string", ".spec.levels[*].domain"), _AGE),
    ),
    CRDKind(
        model=Queue,
        group="scheduling.run.ai",
        version="v2",
        kind="Queue",
        plural="queues",
        singular="queue",
        short_names=(),
        scope="Cluster",
        description="KAI-scheduler's queue: quota, limit and over-quota weight per resource, in a tree.",
        scale=None,
        printer_columns=(
            PrinterColumn("Parent", "string", ".spec.parentQueue"),
            PrinterColumn("GPU-Quota", "number", ".spec.resources.gpu.quota"),
            PrinterColumn("GPU-Limit", "number", ".spec.resources.gpu.limit", 1),
            PrinterColumn("GPU-FairShare", "number", ".status.fairShareGpus"),
            PrinterColumn("GPU-Allocated", "number", ".status.allocatedGpus"),
            PrinterColumn("GPU-Requested", "number", ".status.requestedGpus"),
            PrinterColumn("Pending", "integer", ".status.pendingGangs", 1),
            _AGE,
        ),
        categories=(),
    ),
    CRDKind(
        model=PodGang,
        group="scheduler.grove.io",
        kind="PodGang",
        plural="podgangs",
        singular="podgang",
        short_names=("pg",),
        scope="Namespaced",
        description="A gang of PodGroups that a scheduler must place atomically (minReplicas of each, or none).",
        scale=None,
        printer_columns=(PrinterColumn("Phase", "string", ".status.phase"), _AGE),
    ),
    CRDKind(
        model=Reservation,
        group="scheduling.koordinator.sh",
        kind="Reservation",
        plural="reservations",
        singular="reservation",
        short_names=("reserv",),
        scope="Cluster",
        description="Koordinator's Reservation: resources of a pod template held ahead of time for their owners.",
        scale=None,
        printer_columns=(
            PrinterColumn("Phase", "string", ".status.phase"),
            PrinterColumn("Node", "string", ".status.nodeName"),
            PrinterColumn("TTL", "string", ".spec.ttl"),
            _AGE,
        ),
    ),
    CRDKind(
        model=PodGangSet,
        group="grove.dynamo.ai",
        version="v1",
        kind="PodGangSet",
        plural="podgangsets",
        singular="podgangset",
        short_names=("pgs",),
        scope="Namespaced",
        description="Grove's first API: replicas of one pod template placed as one gang of at least minAvailable.",
        scale=ScalePaths(".spec.replicas", ".status.replicas", ".status.selector"),
        printer_columns=(
            PrinterColumn("Replicas", "integer", ".spec.replicas"),
            PrinterColumn("MinAvailable", "integer", ".spec.minAvailable"),
            PrinterColumn("Ready", "integer", ".status.readyReplicas"),
            PrinterColumn("Scheduled", "boolean", ".status.scheduled"),
            PrinterColumn("Reason", "string", '.status.conditions[?(@.type=="Scheduled")].reason', 1),
            _AGE,
        ),
        path_extras={
            "spec": {
                "x-kubernetes-validations": [
                    {
                        "rule": "!has(self.minAvailable) || !has(self.replicas) || self.minAvailable <= self.replicas",
                        "message": "must not be greater than spec.replicas",
                        "fieldPath": ".minAvailable",
                    }
                ]
            },
            "spec.template.spec": {
                "x-kubernetes-validations": [
                    {
                        "rule": "has(self.containers) && size(self.containers) > 0",
                        "message": "a pod template needs at least one container",
                        "fieldPath": ".containers",
                        "reason": "FieldValueRequired",
                    }
                ]
            },
        },
    ),
    CRDKind(
        model=DynamoPodClique,
        group="grove.dynamo.ai",
        version="v1",
        kind="PodClique",
        plural="dynamopodcliques",
        singular="dynamopodclique",
        short_names=("dpclq",),
        scope="Namespaced",
        description="Grove's first API: pod-affinity terms added to the PodGangSet pods a selector matches.",
        scale=None,
        printer_columns=(
            PrinterColumn("Matched", "integer", ".status.matchedPods"),
            PrinterColumn("Applied", "integer", ".status.appliedPods"),
            _AGE,
        ),
    ),
)
