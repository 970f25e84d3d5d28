"""The shape of pods in grove-operator's cache: only the fields the operator reads (client-go's informer transform).

Why: at 10,000 pods the pod cache is the largest part of the operator's memory, and most of each pod (its
containers with their environment, the kubelet's addresses and IPs) is never read: PodClique status, gate
lifting, scale-in victim order, PodGang references and the watch predicates look only at the metadata, at
`spec.schedulingGates`, `spec.nodeName` and `spec.hostname`, and at `status.phase`, `status.conditions` and the
container statuses. Dropping the rest when a pod enters the cache halves its size. Whoever needs another field
adds it here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["POD_SPEC_FIELDS", "POD_STATUS_FIELDS", "slim_pod"]

POD_SPEC_FIELDS = ("schedulingGates", "nodeName", "hostname", "subdomain", "schedulerName")
POD_STATUS_FIELDS = ("phase", "reason", "message", "conditions", "containerStatuses", "initContainerStatuses")


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """`pod` with only the spec and status fields above (metadata is kept whole); modifies and returns it."""
    spec = pod.get("spec")
    if isinstance(spec, dict):
        pod["spec"] = {k: spec[k] for k in POD_SPEC_FIELDS if k in spec}
    status = pod.get("status")
    if isinstance(status, dict):
        pod["status"] = {k: status[k] for k in POD_STATUS_FIELDS if k in status}
    return pod
