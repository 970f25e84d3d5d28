"""The kinds the plugin reads, and `TYPE/NAME` arguments resolved the way kubectl resolves them.

A target may use the kind's plural, singular, short name or kind, with or without the group (`pcs/llm`,
`podcliqueset.grove.io/llm`, `podgang/llm-0`, `pod/x`), as kubectl accepts them.
"""

from __future__ import annotations

from collections.abc import Sequence

from grove_kubectl.session import CommandError
from grove_runtime.resources import PODS, ResourceType

__all__ = [
    "CLUSTERTOPOLOGYBINDINGS",
    "DYNAMO_PODCLIQUES",
    "PODCLIQUES",
    "PODCLIQUESCALINGGROUPS",
    "PODCLIQUESETS",
    "PODGANGS",
    "PODGANGSETS",
    "parse_target",
]

PODCLIQUESETS = ResourceType("grove.io", "v1alpha1", "podcliquesets", "PodCliqueSet")
PODCLIQUES = ResourceType("grove.io", "v1alpha1", "podcliques", "PodClique")
PODCLIQUESCALINGGROUPS = ResourceType("grove.io", "v1alpha1", "podcliquescalinggroups", "PodCliqueScalingGroup")
CLUSTERTOPOLOGYBINDINGS = ResourceType(
    "grove.io", "v1alpha1", "clustertopologybindings", "ClusterTopologyBinding", namespaced=False
)
PODGANGS = ResourceType("scheduler.grove.io", "v1alpha1", "podgangs", "PodGang")
PODGANGSETS = ResourceType("grove.dynamo.ai", "v1", "podgangsets", "PodGangSet")
DYNAMO_PODCLIQUES = ResourceType("grove.dynamo.ai", "v1", "dynamopodcliques", "PodClique")

_NAMES: dict[ResourceType, tuple[str, ...]] = {
    PODCLIQUESETS: ("pcs", "podcliqueset", "podcliquesets"),
    PODGANGS: ("pg", "podgang", "podgangs"),
    PODGANGSETS: ("pgs", "podgangset", "podgangsets"),
    PODS: ("po", "pod", "pods"),
}


def parse_target(text: str, allowed: Sequence[ResourceType]) -> tuple[ResourceType, str]:
    """`TYPE/NAME` → (resource type, name); anything else is a usage error naming what is accepted."""
    kind, sep, name = text.partition("/")
    kind = kind.lower()
    for rt in allowed:
        names = _NAMES.get(rt, (rt.plural,))
        qualified = {f"{n}.{rt.group}" for n in names} if rt.group else set()
        if sep and name and (kind in names or kind in qualified or kind == rt.kind.lower()):
            return rt, name
    accepted = ", ".join(f"{_NAMES.get(rt, (rt.plural,))[0]}/NAME" for rt in allowed)
    raise CommandError(f"expected one of {accepted}, got {text!r}")
