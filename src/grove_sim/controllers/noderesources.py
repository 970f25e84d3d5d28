"""What each node has left: kubelet admission by resources, as a real kubelet rejects a pod that does not fit.

A pod's effective requests (max of its init containers' and the sum of its containers', plus one ``pods`` slot)
added to those of the pods already admitted on its node must fit the node's allocatable, else the pod fails with
reason ``OutOf<resource>``: this is how the simulation catches scheduler bugs. Parsing is cached per pod shape
and per node version, because at 50,000 pods it is the kubelet's hot path.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Any

from grove_sim.controllers import podstatus
from grove_sim.machinery.quantity import QuantityError, format_quantity, parse_quantity

__all__ = ["NodeResources", "Rejection"]

_REQUESTS_CACHE = 4096


class Rejection:
    """Why a pod was not admitted: the pod's ``reason`` and ``message``, worded as kubelet words them."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message


class NodeResources:
    """Requests admitted per node, and the parsed allocatable of each node."""

    def __init__(self) -> None:
        self._used: dict[str, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
        self._allocatable: dict[str, tuple[dict[str, Any], dict[str, Fraction]]] = {}
        self._requests: dict[tuple[Any, ...], dict[str, Fraction]] = {}

    def forget_node(self, name: str) -> None:
        """Drop the cached allocatable of a deleted node."""
        self._allocatable.pop(name, None)

    def admit(self, node: dict[str, Any], pod: dict[str, Any]) -> tuple[dict[str, Fraction], Rejection | None]:
        """Account the pod's requests on ``node`` if they fit; otherwise the rejection and nothing accounted."""
        node_name = node["metadata"]["name"]
        allocatable = self._node_allocatable(node_name, (node.get("status") or {}).get("allocatable") or {})
        requests = self._pod_requests(pod)
        used = self._used[node_name]
        for name, value in sorted(requests.items()):
            capacity = allocatable.get(name, Fraction(0))
            if used[name] + value > capacity:
                message = (
                    f"Pod was rejected: Node didn't have enough resource: {name}, requested: "
                    f"{format_quantity(value, name)}, used: {format_quantity(used[name], name)}, "
                    f"capacity: {format_quantity(capacity, name)}"
                )
                return requests, Rejection(f"OutOf{name}", message)
        for name, value in requests.items():
            used[name] += value
        return requests, None

    def release(self, node_name: str, requests: dict[str, Fraction]) -> None:
        """Give back what an admitted pod held."""
        used = self._used[node_name]
        for name, value in requests.items():
            used[name] -= value

    def _pod_requests(self, pod: dict[str, Any]) -> dict[str, Fraction]:
        """The pod's effective requests, computed once per distinct set of container resources.

        Pods of one workload share their resources, so the Fraction arithmetic runs once per shape, keyed by the
        containers' requests and limits. The returned dict is shared and must not be mutated.
        """
        spec = pod.get("spec") or {}
        try:
            key = tuple(
                (
                    group,
                    tuple(((c.get("resources") or {}).get("requests") or {}).items()),
                    tuple(((c.get("resources") or {}).get("limits") or {}).items()),
                )
                for group in ("containers", "initContainers")
                for c in spec.get(group) or ()
            )
            cached = self._requests.get(key)
        except (AttributeError, TypeError):
            return podstatus.pod_requests(pod)
        if cached is None:
            if len(self._requests) >= _REQUESTS_CACHE:
                self._requests.clear()
            cached = self._requests[key] = podstatus.pod_requests(pod)
        return cached

    def _node_allocatable(self, node_name: str, allocatable: dict[str, Any]) -> dict[str, Fraction]:
        """The node's allocatable as numbers, parsed once per node version: the stored dict is immutable, so its
        identity tells whether the cached parse is current. Unparsable amounts count as zero."""
        cached = self._allocatable.get(node_name)
        if cached is not None and cached[0] is allocatable:
            return cached[1]
        parsed: dict[str, Fraction] = {}
        for name, value in allocatable.items():
            try:
                parsed[name] = parse_quantity(value)
            except QuantityError:
                parsed[name] = Fraction(0)
        self._allocatable[node_name] = (allocatable, parsed)
        return parsed
