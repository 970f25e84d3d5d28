"""The core/v1 Node objects grove-sim seeds: what a real node carries and what topology-aware placement reads.

The scheduler under test sees nothing but these objects, so they carry ``status.capacity`` == ``allocatable`` (cpu,
memory, pods, ephemeral-storage and ``nvidia.com/gpu``), Ready conditions, addresses, ``nodeInfo`` and GPU and
topology labels. There is no kubelet or heartbeat here; the server owns node lifecycle and load.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from grove_sim.cluster.topology import ClusterShapeError

__all__ = [
    "DEFAULT_GPU_MODEL",
    "GPU_RESOURCE",
    "HOSTNAME_LABEL",
    "KUBELET_VERSION",
    "check_quantity",
    "gpu_labels",
    "node_capacity",
    "node_object",
    "parse_taint",
    "timestamp_now",
]

GPU_RESOURCE: Final = "nvidia.com/gpu"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
DEFAULT_GPU_MODEL: Final = "NVIDIA-H100-80GB-HBM3"
KUBELET_VERSION: Final = "v1.32.0-sim"

_QUANTITY_RE: Final = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?\Z")
_TAINT_RE: Final = re.compile(r"(?P<key>[^=:]+)(=(?P<value>[^:]*))?:(?P<effect>\w+)\Z")
_EFFECTS: Final = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


def _ip(name: str, index: int | None) -> str:
    """A unique-looking 10.x.y.z address: from the node's index when known, else from a hash of its name."""
    number = (index + 1) if index is not None else zlib.crc32(name.encode()) & 0xFFFFFF
    return f"10.{(number >> 16) & 255}.{(number >> 8) & 255}.{number & 255}"


def timestamp_now() -> str:
    """The current time in the RFC 3339 form node conditions carry."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_object(
    name: str,
    *,
    capacity: Mapping[str, str],
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, str]] = (),
    index: int | None = None,
    unschedulable: bool = False,
    timestamp: str | None = None,
) -> dict[str, Any]:
    """A Ready core/v1 Node dict with ``allocatable == capacity``; ``index`` makes the InternalIP unique."""
    now = timestamp or timestamp_now()
    node_labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "grove-sim",
        **labels,
        HOSTNAME_LABEL: name,
    }
    spec: dict[str, Any] = {"providerID": f"grove-sim://{name}"}
    if taints:
        spec["taints"] = [parse_taint(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
        """One node condition stamped with the build time."""
        return {
            "type": kind,
            "status": status,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }

    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels},
        "spec": spec,
        "status": {
            "capacity": dict(capacity),
            "allocatable": dict(capacity),
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status (simulated)"),
            ],
            "addresses": [{"type": "InternalIP", "address": _ip(name, index)}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{zlib.crc32(name.encode()):08x}",
                "systemUUID": f"grove-sim-{name}",
                "bootID": "",
                "kernelVersion": "6.1.0-grove-sim",
                "osImage": "Grove Simulated Linux",
                "containerRuntimeVersion": "containerd://1.7.0-sim",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def parse_taint(taint: Mapping[str, str] | str) -> dict[str, str]:
    """Normalise a taint mapping or ``key=value:Effect`` string, checking the effect."""
    if isinstance(taint, str):
        match = _TAINT_RE.match(taint.strip())
        if match is None:
            raise ClusterShapeError(f"taint {taint!r} is not key[=value]:Effect")
        taint = {k: v for k, v in match.groupdict().items() if v is not None}
    if not isinstance(taint, Mapping) or not taint.get("key") or taint.get("effect") not in _EFFECTS:
        raise ClusterShapeError(f"taint {taint!r} needs a key and an effect in {sorted(_EFFECTS)}")
    return {k: str(taint[k]) for k in ("key", "value", "effect") if taint.get(k) not in (None, "")}


def check_quantity(value: Any, what: str) -> str:
    """A resource quantity from a shape file, as a string, after a syntax check."""
    text = str(value).strip()
    if not _QUANTITY_RE.match(text):
        raise ClusterShapeError(f"{what} {value!r} is not a Kubernetes quantity")
    return text


def gpu_labels(gpus: int, model: str) -> dict[str, str]:
    """The GPU feature-discovery style labels a GPU node carries (none for CPU-only nodes)."""
    if gpus <= 0:
        return {}
    return {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": model,
        "nvidia.com/gpu.count": str(gpus),
        "accelerator": re.sub(r"[^a-z0-9.-]+", "-", model.lower()).strip("-.") or "nvidia",
    }


def node_capacity(cpu: str, memory: str, pods: int, gpus: int, ephemeral_storage: str) -> dict[str, str]:
    """A node's capacity map; GPU-less nodes have no nvidia.com/gpu entry at all."""
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": ephemeral_storage}
    if gpus > 0:
        capacity[GPU_RESOURCE] = str(gpus)
    return capacity
