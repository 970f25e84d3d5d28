"""The Grove resource types grove-operator reads and writes, and the names of its cache indexes.

Why one module at the bottom of the package: the wiring registers informers and indexes under these names, and
every controller, component and test looks objects up by them, so they must not live inside any one of those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from grove_runtime.resources import ResourceType

__all__ = [
    "CLUSTERTOPOLOGYBINDINGS",
    "DYNAMO_PODCLIQUES",
    "INDEX_BASE_PODGANG",
    "INDEX_PART_OF",
    "INDEX_PCSG",
    "INDEX_PODCLIQUE",
    "INDEX_PODGANGSET",
    "PODCLIQUES",
    "PODCLIQUESCALINGGROUPS",
    "PODCLIQUESETS",
    "PODGANGS",
    "PODGANGSETS",
    "namespaced_label_index",
]

Obj = dict[str, Any]

PODCLIQUESETS = ResourceType("grove.io", "v1alpha1", "podcliquesets", "PodCliqueSet")
PODCLIQUES = ResourceType("grove.io", "v1alpha1", "podcliques", "PodClique")
PODCLIQUESCALINGGROUPS = ResourceType("grove.io", "v1alpha1", "podcliquescalinggroups", "PodCliqueScalingGroup")
PODGANGS = ResourceType("scheduler.grove.io", "v1alpha1", "podgangs", "PodGang")
PODGANGSETS = ResourceType("grove.dynamo.ai", "v1", "podgangsets", "PodGangSet")
DYNAMO_PODCLIQUES = ResourceType("grove.dynamo.ai", "v1", "dynamopodcliques", "PodClique")
"""The PodCliques of the first API (same kind name as grove.io's, another group)."""
CLUSTERTOPOLOGYBINDINGS = ResourceType(
    "grove.io", "v1alpha1", "clustertopologybindings", "ClusterTopologyBinding", namespaced=False
)

INDEX_PART_OF = "grove-part-of"
INDEX_PODCLIQUE = "grove-podclique"
INDEX_PCSG = "grove-pcsg"
INDEX_BASE_PODGANG = "grove-base-podgang"
INDEX_PODGANGSET = "grove-podgangset"


def namespaced_label_index(label: str) -> Callable[[Obj], Iterable[str]]:
    """Index function `<namespace>/<label value>`, so equal names in different namespaces never mix."""

    def values(obj: Obj) -> Iterable[str]:
        meta = obj.get("metadata") or {}
        value = (meta.get("labels") or {}).get(label)
        return (f"{meta.get('namespace') or ''}/{value}",) if value else ()

    return values
