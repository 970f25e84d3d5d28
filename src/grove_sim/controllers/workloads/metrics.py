"""The ``metrics.k8s.io/v1beta1`` API (PodMetrics, NodeMetrics), computed on each read from simulated usage.

A metrics-server answers from what kubelets last reported; here a read sums the ``sim.grove.io`` usage
annotations (``grove_sim.controllers.workloads.usage``) of the running pods, so ``kubectl top pods`` and
``kubectl top nodes`` show an annotation the moment it is set, and nothing is stored (no write per pod). A pod's
usage is reported on its first container (the others use nothing); a node's is the sum over its pods. Quantities
are written as metrics-server writes them: CPU in nanocores, memory in KiB.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from typing import Any, Final

from grove_sim.controllers.workloads.owned import PODS
from grove_sim.controllers.workloads.usage import measured, pod_usage
from grove_sim.registry.core import Core, now_rfc3339

__all__ = ["MetricsApi", "usage_quantities"]

_NODES: Final = ("", "nodes")
_API_VERSION: Final = "metrics.k8s.io/v1beta1"
_WINDOW: Final = "10s"


def usage_quantities(usage: dict[str, Fraction]) -> dict[str, str]:
    """CPU as ``<n>n``, memory as ``<n>Ki`` (rounded up), as metrics-server reports them."""
    cpu = math.ceil(usage.get("cpu", Fraction(0)) * 10**9)
    memory = math.ceil(usage.get("memory", Fraction(0)) / 1024)
    return {"cpu": f"{cpu}n", "memory": f"{memory}Ki"}


class MetricsApi:
    """Serves the two metrics resources through ``Core.computed``."""

    def __init__(self, core: Core) -> None:
        self._core = core
        core.computed[("metrics.k8s.io", "pods")] = self.pod_metrics
        core.computed[("metrics.k8s.io", "nodes")] = self.node_metrics

    def pod_metrics(self, namespace: str | None) -> list[dict[str, Any]]:
        """PodMetrics of the running pods of ``namespace`` (all namespaces for None)."""
        now = now_rfc3339()
        items = []
        for pod in self._core.store.list(PODS, namespace):
            if not measured(pod):
                continue
            meta = pod["metadata"]
            usage = usage_quantities(pod_usage(pod))
            zero = usage_quantities({})
            containers = [
                {"name": str(c.get("name", "")), "usage": usage if i == 0 else zero}
                for i, c in enumerate((pod.get("spec") or {}).get("containers") or [])
            ]
            items.append(
                {
                    "kind": "PodMetrics",
                    "apiVersion": _API_VERSION,
                    "metadata": {
                        "name": meta["name"],
                        "namespace": meta.get("namespace", ""),
                        "labels": dict(meta.get("labels") or {}),
                        "creationTimestamp": now,
                    },
                    "timestamp": now,
                    "window": _WINDOW,
                    "containers": containers,
                }
            )
        return items

    def node_metrics(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """NodeMetrics of every node: the sum of its running pods' usage."""
        totals: defaultdict[str, dict[str, Fraction]] = defaultdict(lambda: {"cpu": Fraction(0), "memory": Fraction(0)})
        for pod in self._core.store.list(PODS):
            if measured(pod):
                node_total = totals[str(pod["spec"]["nodeName"])]
                for name, amount in pod_usage(pod).items():
                    node_total[name] += amount
        now = now_rfc3339()
        return [
            {
                "kind": "NodeMetrics",
                "apiVersion": _API_VERSION,
                "metadata": {
                    "name": node["metadata"]["name"],
                    "labels": dict(node["metadata"].get("labels") or {}),
                    "creationTimestamp": now,
                },
                "timestamp": now,
                "window": _WINDOW,
                "usage": usage_quantities(totals[node["metadata"]["name"]]),
            }
            for node in self._core.store.list(_NODES)
        ]
