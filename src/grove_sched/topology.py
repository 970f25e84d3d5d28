"""Which topology hierarchy a gang is placed in: the levels of the ClusterTopologyBinding its PodGang refers to.

Why: the placement tiers "preferred domains" (with their fallback to broader domains), "empty domains opened" and
"room" work on the cluster's own hierarchy, which only the ClusterTopologyBinding states (levels broadest first,
each a node label key). The operator names it on the PodGang with the annotation `grove.io/topology-name` when it
translated the gang's constraints (grove-reference §2.3).

The rule, in order:

1. the binding the PodGang names, when it exists and is readable;
2. otherwise the one binding whose levels contain every key the gang's constraints use (a PodGang written by hand,
   or one whose binding was deleted: when the cluster has exactly one topology that fits, it is that one);
3. otherwise nothing, and placement uses `PlacementOptions.default_levels` (`--default-topology-levels`; by
   default zone > block > rack > host in the `topology.kubernetes.io/` namespace).

A gang's constraint key that the chosen hierarchy lacks still holds; it only has no broader level to fall back to.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from grove_api.labels import ANNOTATION_TOPOLOGY_NAME
from grove_runtime.resources import ResourceType

__all__ = ["CLUSTERTOPOLOGYBINDINGS", "binding_levels", "resolve_levels"]

Obj = Mapping[str, Any]

CLUSTERTOPOLOGYBINDINGS = ResourceType(
    "grove.io", "v1alpha1", "clustertopologybindings", "ClusterTopologyBinding", namespaced=False
)


def binding_levels(binding: Obj) -> tuple[str, ...] | None:
    """A binding's node label keys, broadest first; None when its levels cannot be read."""
    spec = binding.get("spec")
    levels = spec.get("levels") if isinstance(spec, Mapping) else None
    if not isinstance(levels, list) or not levels:
        return None
    keys = []
    for level in levels:
        key = level.get("key") if isinstance(level, Mapping) else None
        if not isinstance(key, str) or not key or key in keys:
            return None
        keys.append(key)
    return tuple(keys)


def resolve_levels(podgang: Obj | None, keys: Collection[str], bindings: Iterable[Obj]) -> tuple[str, ...]:
    """The hierarchy of a gang whose constraints use `keys` (the rule in the module docstring); () = the default."""
    readable: dict[str, tuple[str, ...]] = {}
    for binding in bindings:
        levels = binding_levels(binding)
        if levels is not None:
            metadata = binding.get("metadata")
            readable[str(metadata.get("name", "") if isinstance(metadata, Mapping) else "")] = levels
    annotations = ((podgang or {}).get("metadata") or {}).get("annotations") or {}
    named = annotations.get(ANNOTATION_TOPOLOGY_NAME)
    if isinstance(named, str) and named in readable:
        return readable[named]
    fitting = [levels for _, levels in sorted(readable.items()) if set(keys) <= set(levels)]
    return fitting[0] if len(fitting) == 1 else ()
