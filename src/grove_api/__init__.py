"""Grove API: the kinds of grove.io/v1alpha1 and scheduler.grove.io/v1alpha1 as pydantic models.

Operator, scheduler and tests import the models from here; object names live in `grove_api.names`, label and
annotation keys in `grove_api.labels`, and `python -m grove_api.crdgen` writes the CRDs into `crds/`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grove_api._meta import (
        Condition,
        ConditionStatus,
        GroveModel,
        Int32,
        Int64,
        ObjectMeta,
        OwnerReference,
        Time,
        format_time,
    )
    from grove_api.common import (
        AutoScalingConfig,
        LastError,
        PCSGResourceSharingFilter,
        PCSGResourceSharingSpec,
        PCSResourceSharingFilter,
        PCSResourceSharingSpec,
        ResourceClaimTemplateConfig,
        ResourceSharingScope,
        ResourceSharingSpec,
        TopologyConstraint,
        TopologyDomain,
        TopologyPackConstraint,
    )
    from grove_api.dynamo_v1 import (
        DynamoPodClique,
        DynamoPodCliqueSpec,
        DynamoPodCliqueStatus,
        LabelSelector,
        LabelSelectorRequirement,
        PodAffinityTerm,
        PodCliqueTopology,
        PodGangSet,
        PodGangSetScheduling,
        PodGangSetSpec,
        PodGangSetStatus,
        PodTemplate,
        PodTemplateMetadata,
        WeightedPodAffinityTerm,
    )
    from grove_api.podclique import (
        CONDITION_MIN_AVAILABLE_BREACHED,
        CONDITION_PODCLIQUE_AVAILABLE,
        CONDITION_PODCLIQUE_SCHEDULED,
        PodClique,
        PodCliqueSpec,
        PodCliqueStatus,
        PodCliqueUpdateProgress,
        PodsSelectedToUpdate,
    )
    from grove_api.podcliqueset import (
        CONDITION_TOPOLOGY_LEVELS_UNAVAILABLE,
        DEFAULT_TERMINATION_DELAY,
        CliqueStartupType,
        HeadlessServiceConfig,
        PodCliqueScalingGroupConfig,
        PodCliqueSet,
        PodCliqueSetReplicaUpdateProgress,
        PodCliqueSetSpec,
        PodCliqueSetStatus,
        PodCliqueSetTemplateSpec,
        PodCliqueSetUpdateProgress,
        PodCliqueSetUpdateStrategy,
        PodCliqueTemplateSpec,
        PodGangStatusSummary,
        PodGangSummaryPhase,
        UpdateStrategyType,
    )
    from grove_api.podgang import (
        CONDITION_DISRUPTION_TARGET,
        CONDITION_INITIALIZED,
        CONDITION_READY,
        CONDITION_SCHEDULED,
        CONDITION_UNHEALTHY,
        REASON_PODS_CREATED,
        REASON_PODS_CREATION_PENDING,
        NamespacedName,
        PodGang,
        PodGangPhase,
        PodGangSpec,
        PodGangStatus,
        PodGroup,
        TopologyConstraintGroupConfig,
        TopologyPackConstraintKeys,
        TopologySchedulingConstraint,
    )
    from grove_api.scalinggroup import (
        CONDITION_GANG_TERMINATION_IN_PROGRESS,
        PodCliqueScalingGroup,
        PodCliqueScalingGroupSpec,
        PodCliqueScalingGroupStatus,
        PodCliqueScalingGroupUpdateProgress,
        ReplicasSelectedToUpdate,
    )
    from grove_api.topology import (
        CONDITION_SCHEDULER_TOPOLOGY_DRIFT,
        ClusterTopologyBinding,
        ClusterTopologyBindingSpec,
        ClusterTopologyBindingStatus,
        SchedulerTopologyBinding,
        SchedulerTopologyStatus,
        TopologyLevel,
    )

_SUBMODULES = ("_meta", "common", "dynamo_v1", "podclique", "podcliqueset", "podgang", "scalinggroup", "topology")

__all__ = [
    "CONDITION_DISRUPTION_TARGET",
    "CONDITION_GANG_TERMINATION_IN_PROGRESS",
    "CONDITION_INITIALIZED",
    "CONDITION_MIN_AVAILABLE_BREACHED",
    "CONDITION_PODCLIQUE_AVAILABLE",
    "CONDITION_PODCLIQUE_SCHEDULED",
    "CONDITION_READY",
    "CONDITION_SCHEDULED",
    "CONDITION_SCHEDULER_TOPOLOGY_DRIFT",
    "CONDITION_TOPOLOGY_LEVELS_UNAVAILABLE",
    "CONDITION_UNHEALTHY",
    "DEFAULT_TERMINATION_DELAY",
    "REASON_PODS_CREATED",
    "REASON_PODS_CREATION_PENDING",
    "AutoScalingConfig",
    "CliqueStartupType",
    "ClusterTopologyBinding",
    "ClusterTopologyBindingSpec",
    "ClusterTopologyBindingStatus",
    "Condition",
    "ConditionStatus",
    "DynamoPodClique",
    "DynamoPodCliqueSpec",
    "DynamoPodCliqueStatus",
    "GroveModel",
    "HeadlessServiceConfig",
    "Int32",
    "Int64",
    "LabelSelector",
    "LabelSelectorRequirement",
    "LastError",
    "NamespacedName",
    "ObjectMeta",
    "OwnerReference",
    "PCSGResourceSharingFilter",
    "PCSGResourceSharingSpec",
    "PCSResourceSharingFilter",
    "PCSResourceSharingSpec",
    "PodAffinityTerm",
    "PodClique",
    "PodCliqueScalingGroup",
    "PodCliqueScalingGroupConfig",
    "PodCliqueScalingGroupSpec",
    "PodCliqueScalingGroupStatus",
    "PodCliqueScalingGroupUpdateProgress",
    "PodCliqueSet",
    "PodCliqueSetReplicaUpdateProgress",
    "PodCliqueSetSpec",
    "PodCliqueSetStatus",
    "PodCliqueSetTemplateSpec",
    "PodCliqueSetUpdateProgress",
    "PodCliqueSetUpdateStrategy",
    "PodCliqueSpec",
    "PodCliqueStatus",
    "PodCliqueTemplateSpec",
    "PodCliqueTopology",
    "PodCliqueUpdateProgress",
    "PodGang",
    "PodGangPhase",
    "PodGangSet",
    "PodGangSetScheduling",
    "PodGangSetSpec",
    "PodGangSetStatus",
    "PodGangSpec",
    "PodGangStatus",
    "PodGangStatusSummary",
    "PodGangSummaryPhase",
    "PodGroup",
    "PodTemplate",
    "PodTemplateMetadata",
    "PodsSelectedToUpdate",
    "ReplicasSelectedToUpdate",
    "ResourceClaimTemplateConfig",
    "ResourceSharingScope",
    "ResourceSharingSpec",
    "SchedulerTopologyBinding",
    "SchedulerTopologyStatus",
    "Time",
    "TopologyConstraint",
    "TopologyConstraintGroupConfig",
    "TopologyDomain",
    "TopologyLevel",
    "TopologyPackConstraint",
    "TopologyPackConstraintKeys",
    "TopologySchedulingConstraint",
    "UpdateStrategyType",
    "WeightedPodAffinityTerm",
    "format_time",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        for submodule in _SUBMODULES:
            module = importlib.import_module(f"grove_api.{submodule}")
            if hasattr(module, name):
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module 'grove_api' has no attribute {name!r}")
