"""The shape of pods in grove-scheduler's cache: what placement, gangs, preemption and recovery read, nothing else
(client-go's informer transform).

Why: the scheduler caches every pod of the cluster, and on a full one the pods are most of its memory (500,000
resident pods took 4.9 GB before this). Most of a running pod is never read here: its status beyond the phase
(the kubelet's conditions, container statuses, IPs), the spec beyond placement (volumes, DNS, service account),
of each container everything but its name, resources and ports (environment, command, probes, mounts), and
kubectl's last-applied copy of the whole object. Dropped when a pod enters the cache (page by page while listing).
The strings many pods repeat (namespace, node and scheduler names, quantities, label values, phase) are interned, and
the parts that replicas of one workload have in common (containers, labels, owner references, tolerations,
affinity, a status that is just a phase) are one shared object per distinct value, so 500,000 pods share them
instead of each holding its own copies. Like every informer object (client-go's rule), a cached pod is read-only:
code that changes one copies it first. Whoever needs another field adds it here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import orjson

__all__ = ["CANONICAL_MAX", "CONTAINER_FIELDS", "SPEC_FIELDS", "STATUS_CONDITIONS", "Shared", "slim_pod"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Shared(Generic[K, V]):
    """One instance per equal value, found by its key, while the memo has room: when full it starts again
    (sharing is an economy, never a need). Shared values are read-only, like every cached object."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._values: dict[K, V] = {}

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The value remembered under `key`, else `make()`, remembered."""
        found = self._values.get(key)
        if found is None:
            if len(self._values) >= self.limit:
                self._values.clear()
            found = self._values[key] = make()
        return found


SPEC_FIELDS = (
    "nodeName",
    "schedulerName",
    "schedulingGates",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "affinity",
    "tolerations",
    "nodeSelector",
    "overhead",
    "containers",
    "initContainers",
)
"""What placement, queueing and preemption read of a pod's spec."""

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

CONTAINER_FIELDS = ("name", "resources", "ports", "restartPolicy")
"""Per container: what requests are computed from (a restartable init container is a sidecar) and host ports."""

STATUS_CONDITIONS = ("PodScheduled", "DisruptionTarget")
"""The pod conditions the scheduler writes; the kubelet's are dropped."""

SHARED_SPEC_FIELDS = ("containers", "initContainers", "tolerations", "affinity", "nodeSelector", "overhead")
"""Spec fields whose values replicas of one workload have in common (shared, see `_canonical`)."""

CANONICAL_MAX = 65_536
"""Distinct shared pod parts remembered (`Shared`)."""

_CANONICAL: Shared[bytes, Any] = Shared(CANONICAL_MAX)


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """`pod` without what the scheduler never reads, its repeated strings shared; modifies and returns it."""
    for field in ("apiVersion", "kind"):
        if isinstance(pod.get(field), str):
            pod[field] = sys.intern(pod[field])
    meta = pod.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
        for field in ("namespace", "creationTimestamp"):
            if isinstance(meta.get(field), str):
                meta[field] = sys.intern(meta[field])
        for field in ("labels", "ownerReferences"):
            if isinstance(meta.get(field), (dict, list)):
                meta[field] = _canonical(meta[field])
    spec = pod.get("spec")
    if isinstance(spec, dict):
        spec = {k: spec[k] for k in SPEC_FIELDS if k in spec}
        for field in ("containers", "initContainers"):
            containers = spec.get(field)
            if isinstance(containers, list):
                spec[field] = [_slim_container(c) for c in containers]
        spec = _shared({k: v for k, v in spec.items() if k not in SHARED_SPEC_FIELDS}) | {
            k: _canonical(spec[k]) for k in SHARED_SPEC_FIELDS if k in spec
        }
        pod["spec"] = spec
    status = pod.get("status")
    if isinstance(status, dict):
        slim: dict[str, Any] = {k: status[k] for k in ("phase", "nominatedNodeName") if k in status}
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            kept = [c for c in conditions if isinstance(c, dict) and c.get("type") in STATUS_CONDITIONS]
            if kept:
                slim["conditions"] = kept
        pod["status"] = _shared(slim) if "conditions" in slim else _canonical(slim)
    return pod


def _canonical(value: Any) -> Any:
    """One shared instance per distinct JSON value (strings interned) while the memo has room."""
    try:
        key = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # not plain JSON: keep it unshared
        return _shared(value)
    return _CANONICAL.get(key, lambda: _shared(value))


def _shared(value: Any) -> Any:
    """`value` with every string in it interned (dict keys are already shared by the JSON decoder)."""
    if type(value) is str:  # exact: an str subclass cannot be interned
        return sys.intern(value)
    if isinstance(value, dict):
        return {k: _shared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shared(v) for v in value]
    return value


def _slim_container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    return {k: container[k] for k in CONTAINER_FIELDS if k in container}
