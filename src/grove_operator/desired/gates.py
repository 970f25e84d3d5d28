"""Which pods of a PodClique get the `grove.io/podgang-pending-creation` gate lifted (grove-reference §3.3).

Pods are created gated so no scheduler sees them before their PodGang does. A pod is released once the PodGroup
named after its PodClique references it; a pod of a *scaled* gang (its PodClique carries `grove.io/base-podgang`)
additionally waits until the base gang is scheduled, so scaled gangs never compete with the base gang for capacity.
Only Grove's own gate is removed; foreign gates are preserved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grove_api import PodClique, PodGang
from grove_api import labels as glabels
from grove_operator.desired.layout import is_terminating

__all__ = ["GateDecision", "base_gang_scheduled", "has_grove_gate", "pods_to_ungate", "remove_gate_patch"]


@dataclass(frozen=True)
class GateDecision:
    """Pods to ungate now, whether gated pods remain (requeue), and why the decision could not be made."""

    ungate: list[str] = field(default_factory=list)
    still_gated: int = 0
    error: str | None = None


def has_grove_gate(pod: Mapping[str, Any]) -> bool:
    """True while the pod still carries Grove's scheduling gate."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    return any(g.get("name") == glabels.SCHEDULING_GATE_PODGANG_PENDING for g in gates)


def remove_gate_patch(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch removing only Grove's gate (a merge patch replaces the whole list)."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    remaining = [dict(g) for g in gates if g.get("name") != glabels.SCHEDULING_GATE_PODGANG_PENDING]
    return {"spec": {"schedulingGates": remaining}}


def base_gang_scheduled(base_gang: PodGang, pclqs: Mapping[str, PodClique]) -> tuple[bool, str | None]:
    """Whether every PodGroup of the base gang has `scheduledReplicas >= minReplicas` (and why not, if unknown)."""
    for group in base_gang.spec.pod_groups:
        pclq = pclqs.get(group.name)
        if pclq is None:
            return False, f"PodClique {group.name!r} of base PodGang {base_gang.metadata.name!r} not found"
        scheduled = pclq.status.scheduled_replicas if pclq.status is not None else 0
        if scheduled < group.min_replicas:
            return False, None
    return True, None


def pods_to_ungate(
    pclq: PodClique,
    pods: Sequence[Mapping[str, Any]],
    podgang: PodGang | None,
    base_gang: PodGang | None = None,
    base_pclqs: Mapping[str, PodClique] | None = None,
) -> GateDecision:
    """Decide which gated pods of `pclq` to release.

    `podgang` is the gang named by the PodClique's `grove.io/podgang` label (None if absent); for a PodClique in a
    scaled gang, `base_gang` and the PodCliques of its PodGroups (`base_pclqs`, by name) are needed too.
    """
    gated = [p for p in pods if not is_terminating(p) and has_grove_gate(p)]
    if not gated:
        return GateDecision()
    if podgang is None:
        return GateDecision(still_gated=len(gated))
    labels = pclq.metadata.labels or {}
    if glabels.LABEL_BASE_PODGANG in labels:
        if base_gang is None:
            return GateDecision(
                still_gated=len(gated), error=f"base PodGang {labels[glabels.LABEL_BASE_PODGANG]!r} not found"
            )
        scheduled, error = base_gang_scheduled(base_gang, base_pclqs or {})
        if not scheduled:
            return GateDecision(still_gated=len(gated), error=error)
    group = next((g for g in podgang.spec.pod_groups if g.name == pclq.metadata.name), None)
    referenced = {ref.name for ref in (group.pod_references or ())} if group is not None else set()
    ungate = sorted(p["metadata"]["name"] for p in gated if p["metadata"]["name"] in referenced)
    return GateDecision(ungate=ungate, still_gated=len(gated) - len(ungate))
