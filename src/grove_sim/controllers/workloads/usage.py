"""Simulated resource usage: what a pod uses is what its ``sim.grove.io/<resource>-usage`` annotation says.

A user or a benchmark sets ``sim.grove.io/cpu-usage: 800m`` and ``sim.grove.io/memory-usage: 1Gi`` on pods
(``kubectl annotate pods -l SELECTOR sim.grove.io/cpu-usage=800m --overwrite``); a pod without an annotation uses
nothing of that resource. The metrics API (``kubectl top``) and the HPA controller both read usage here, so they
always agree. Only running pods bound to a node report metrics, as from a real metrics-server.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any, Final

from grove_sim.machinery.quantity import QuantityError, parse_quantity

__all__ = ["ANNOTATION_PREFIX", "measured", "pod_usage"]

ANNOTATION_PREFIX: Final = "sim.grove.io/"
_RESOURCES: Final = ("cpu", "memory")


def measured(pod: dict[str, Any]) -> bool:
    """Whether the pod reports metrics: running on a node and not being deleted."""
    if pod["metadata"].get("deletionTimestamp") or not (pod.get("spec") or {}).get("nodeName"):
        return False
    return (pod.get("status") or {}).get("phase") == "Running"


def pod_usage(pod: dict[str, Any], names: Iterable[str] = _RESOURCES) -> dict[str, Fraction]:
    """The pod's usage of each named metric from its ``sim.grove.io/<name>-usage`` annotation (zero if absent or
    not a quantity)."""
    annotations = pod["metadata"].get("annotations") or {}
    usage: dict[str, Fraction] = {}
    for name in names:
        text = annotations.get(f"{ANNOTATION_PREFIX}{name}-usage")
        try:
            usage[name] = parse_quantity(text) if text else Fraction(0)
        except QuantityError:
            usage[name] = Fraction(0)
    return usage
