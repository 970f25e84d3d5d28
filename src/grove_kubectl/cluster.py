"""The cluster as `placement` and `top` see it: nodes by topology domain, and the GPUs pods hold on them.

Levels come from the ClusterTopologyBinding when there is one (its levels whose key some node carries, the host
level being the node itself), else `topology.kubernetes.io/block` and `.../rack`. GPUs are counted as the
scheduler counts them: a bound, unfinished pod holds the larger of the sum of its containers' and the largest of
its init containers' `nvidia.com/gpu` (requests, else limits). A value that is not a whole number counts as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grove_kubectl.output import DomainView, GpuCount

__all__ = ["GPU", "HOST_KEYS", "Domains", "NodeGpus", "default_levels", "gpu_request", "levels_of", "node_gpus"]

Obj = Mapping[str, Any]
GPU = "nvidia.com/gpu"
HOST_KEYS = ("kubernetes.io/hostname",)
_DEFAULT_LEVELS = (("block", "topology.kubernetes.io/block"), ("rack", "topology.kubernetes.io/rack"))


def _whole(value: Any) -> int:
    try:
        number = int(str(value))
    except ValueError:
        return 0
    return max(number, 0)


def _container_gpus(container: Obj) -> int:
    resources = container.get("resources") or {}
    for part in ("requests", "limits"):
        amount = (resources.get(part) or {}).get(GPU)
        if amount is not None:
            return _whole(amount)
    return 0


def gpu_request(pod: Obj) -> int:
    """The GPUs a pod holds once bound (see the module docstring)."""
    spec = pod.get("spec") or {}
    main = sum(_container_gpus(c) for c in spec.get("containers") or ())
    init = max((_container_gpus(c) for c in spec.get("initContainers") or ()), default=0)
    return max(main, init)


def _holds(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName")) and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


@dataclass
class NodeGpus:
    """One node: its labels, allocatable GPUs, GPUs held by bound pods, and those pods' names."""

    name: str
    labels: Mapping[str, str]
    allocatable: int
    used: int = 0
    pods: list[str] = field(default_factory=list)


def node_gpus(nodes: Iterable[Obj], pods: Iterable[Obj]) -> dict[str, NodeGpus]:
    """Every node by name with the GPUs the given pods hold on it."""
    out = {
        str(n["metadata"]["name"]): NodeGpus(
            str(n["metadata"]["name"]),
            dict((n.get("metadata") or {}).get("labels") or {}),
            _whole(((n.get("status") or {}).get("allocatable") or {}).get(GPU, 0)),
        )
        for n in nodes
    }
    for pod in pods:
        node = out.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        if node is not None and _holds(pod):
            node.used += gpu_request(pod)
            node.pods.append(str(pod["metadata"]["name"]))
    return out


def default_levels() -> list[tuple[str, str]]:
    """(level, node label key) of the default hierarchy."""
    return list(_DEFAULT_LEVELS)


def levels_of(bindings: Sequence[Obj], nodes: Iterable[NodeGpus]) -> list[tuple[str, str]]:
    """The hierarchy above nodes: the first ClusterTopologyBinding's levels (else the default) that nodes carry."""
    levels = default_levels()
    for binding in sorted(bindings, key=lambda b: str(b["metadata"]["name"])):
        declared = [
            (str(level.get("domain")), str(level.get("key")))
            for level in (binding.get("spec") or {}).get("levels") or ()
            if isinstance(level, Mapping) and level.get("key") not in HOST_KEYS
        ]
        if declared:
            levels = declared
            break
    carried = {key for node in nodes for key in node.labels}
    return [(name, key) for name, key in levels if key in carried]


class Domains:
    """Nodes grouped level by level into `DomainView` trees (broadest level first, nodes as leaves)."""

    def __init__(self, nodes: Mapping[str, NodeGpus], levels: Sequence[tuple[str, str]]) -> None:
        self.nodes = nodes
        self.levels = list(levels)
        self._pods: Mapping[str, Sequence[str]] = {}

    def tree(
        self,
        names: Iterable[str],
        gang_gpus: Mapping[str, int] | None = None,
        gang_pods: Mapping[str, Sequence[str]] | None = None,
    ) -> list[DomainView]:
        """The domains holding the named nodes, each with the GPUs of *all* its nodes and the gang's share (and,
        on nodes, the gang's pods)."""
        chosen = sorted({n for n in names if n in self.nodes})
        self._pods = gang_pods or {}
        return self._level(0, chosen, gang_gpus or {}, {})

    def _members(self, path: Mapping[str, str]) -> list[NodeGpus]:
        return [n for n in self.nodes.values() if all(n.labels.get(k, "-") == v for k, v in path.items())]

    def _level(self, depth: int, chosen: list[str], gang: Mapping[str, int], path: dict[str, str]) -> list[DomainView]:
        if depth == len(self.levels):
            return [self._node(self.nodes[n], gang, self._pods.get(n, ())) for n in chosen]
        level, key = self.levels[depth]
        out = []
        for value in sorted({self.nodes[n].labels.get(key, "-") for n in chosen}):
            inside = [n for n in chosen if self.nodes[n].labels.get(key, "-") == value]
            members = self._members({**path, key: value})
            children = self._level(depth + 1, inside, gang, {**path, key: value})
            out.append(
                DomainView(
                    level=level,
                    name=value,
                    gpus=_count(members),
                    gang_gpus=sum(c.gang_gpus for c in children),
                    children=children,
                )
            )
        return out

    @staticmethod
    def _node(node: NodeGpus, gang: Mapping[str, int], pods: Sequence[str]) -> DomainView:
        return DomainView(
            level="node", name=node.name, gpus=_count([node]), gang_gpus=gang.get(node.name, 0), pods=sorted(pods)
        )


def _count(nodes: Sequence[NodeGpus]) -> GpuCount:
    allocatable = sum(n.allocatable for n in nodes)
    used = sum(n.used for n in nodes)
    return GpuCount(allocatable=allocatable, used=used, free=max(allocatable - used, 0))
