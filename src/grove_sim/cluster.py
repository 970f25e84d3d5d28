"""Simulated cluster shapes: the core/v1 Node objects grove-sim seeds, from flags, a YAML shape file or a trace.

The scheduler under test sees nothing but these objects, so they carry what a real node carries and what
topology-aware placement reads: ``status.capacity`` == ``allocatable`` (cpu, memory, pods, ephemeral-storage and
``nvidia.com/gpu``), Ready conditions, addresses, ``nodeInfo`` and the topology labels below. There is no kubelet or
heartbeat here; the server owns node lifecycle and load.

Topology (``"zone=1,block=2,rack=4"``): levels are listed outermost first and each count is the number of domains
per parent domain, so that example makes 1 zone, 2 blocks and 2 x 4 = 8 racks. Nodes are dealt contiguously and
evenly over the innermost domains (sizes differ by at most one). Domain values are ``<level>-<n>`` with ``n`` the
domain's index across the whole cluster, zero-padded to the width of the largest index at that level (8 racks:
``rack-0`` … ``rack-7``; 40 blocks: ``block-00`` … ``block-39``), so a value never repeats under another parent.
Label keys are ``TOPOLOGY_LABELS``; ``kubernetes.io/hostname`` (the host level) is always the node name.

YAML shape file (``grove-sim up --cluster FILE``)::

    topology: zone=1,block=2,rack=4     # optional: split all nodes of all pools (in order) over these domains
    pools:                              # one or more pools; nodes are named <name>-<index>
      - name: h100                      # required, a DNS label
        count: 64                       # required
        gpus: 8                         # default 0 (no nvidia.com/gpu resource, no GPU labels)
        gpuModel: NVIDIA-H100-80GB-HBM3 # default shown; becomes nvidia.com/gpu.product and accelerator labels
        cpu: "192"                      # default "192"
        memory: 2048Gi                  # default "2048Gi"
        pods: 110                       # default 110
        ephemeralStorage: 1Ti           # default "1Ti"
        labels: {pool: h100}            # optional extra labels
        taints:                         # optional; mappings or "key=value:Effect" strings
          - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
        topology: block=1,rack=8        # optional per-pool topology (only when there is no top-level topology);
                                        # domain indices continue across pools, so names stay unique

A ``.csv`` file is read as an openb node list (see ``openb_nodes``), every row included.
"""

from __future__ import annotations

import csv
import math
import re
import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

__all__ = [
    "GPU_RESOURCE",
    "TOPOLOGY_LABELS",
    "ClusterShapeError",
    "node_object",
    "nodes_from_file",
    "nodes_from_flags",
    "openb_nodes",
    "parse_topology",
]

GPU_RESOURCE: Final = "nvidia.com/gpu"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
TOPOLOGY_LABELS: Final[dict[str, str]] = {
    "region": "topology.kubernetes.io/region",
    "zone": "topology.kubernetes.io/zone",
    "datacenter": "topology.kubernetes.io/datacenter",
    "block": "topology.kubernetes.io/block",
    "rack": "topology.kubernetes.io/rack",
}
DEFAULT_GPU_MODEL: Final = "NVIDIA-H100-80GB-HBM3"
KUBELET_VERSION: Final = "v1.32.0-sim"

_LEVEL_ORDER: Final = list(TOPOLOGY_LABELS)
_QUANTITY_RE: Final = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?\Z")
_DNS_LABEL_RE: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_TAINT_RE: Final = re.compile(r"(?P<key>[^=:]+)(=(?P<value>[^:]*))?:(?P<effect>\w+)\Z")
_EFFECTS: Final = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
_POOL_KEYS: Final = frozenset(
    {"name", "count", "gpus", "gpuModel", "cpu", "memory", "pods", "ephemeralStorage", "labels", "taints", "topology"}
)


class ClusterShapeError(ValueError):
    """An invalid topology string, shape file or trace (reported to the ``grove-sim up`` user as is)."""


Topology = tuple[tuple[str, int], ...]


def parse_topology(text: str) -> Topology:
    """Parse ``"zone=1,block=2,rack=4"`` into ``(("zone", 1), ("block", 2), ("rack", 4))``, checking level order."""
    levels: list[tuple[str, int]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        level, sep, count = part.partition("=")
        level = level.strip()
        if level not in TOPOLOGY_LABELS:
            raise ClusterShapeError(f"unknown topology level {level!r}; known levels: {', '.join(_LEVEL_ORDER)}")
        if not sep or not count.strip().isdigit() or int(count) < 1:
            raise ClusterShapeError(f"topology level {level!r} needs a positive count, e.g. {level}=2")
        if levels and _LEVEL_ORDER.index(level) <= _LEVEL_ORDER.index(levels[-1][0]):
            raise ClusterShapeError(f"topology levels must be unique and listed outermost first: {text!r}")
        levels.append((level, int(count)))
    return tuple(levels)


def _domain_labels(
    count: int, topology: Topology, offsets: Mapping[str, int], widths: Mapping[str, int]
) -> list[dict[str, str]]:
    """Topology labels for ``count`` consecutive nodes dealt evenly over the innermost domains."""
    if not topology:
        return [{} for _ in range(count)]
    leaves = math.prod(c for _, c in topology)
    spans = [math.prod(c for _, c in topology[i + 1 :]) for i in range(len(topology))]
    labels: list[dict[str, str]] = []
    for index in range(count):
        leaf = index * leaves // count
        labels.append(
            {
                TOPOLOGY_LABELS[level]: f"{level}-{offsets.get(level, 0) + leaf // span:0{widths[level]}d}"
                for (level, _), span in zip(topology, spans, strict=True)
            }
        )
    return labels


def _domain_totals(topology: Topology) -> dict[str, int]:
    """How many domains each level of a topology creates in total."""
    totals: dict[str, int] = {}
    product = 1
    for level, count in topology:
        product *= count
        totals[level] = product
    return totals


def _width(total: int) -> int:
    """Digits needed to print indices 0 .. total-1."""
    return len(str(max(total - 1, 0)))


def _ip(name: str, index: int | None) -> str:
    """A unique-looking 10.x.y.z address: from the node's index when known, else from a hash of its name."""
    number = (index + 1) if index is not None else zlib.crc32(name.encode()) & 0xFFFFFF
    return f"10.{(number >> 16) & 255}.{(number >> 8) & 255}.{number & 255}"


def _now() -> str:
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
    now = timestamp or _now()
    node_labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "grove-sim",
        **labels,
        HOSTNAME_LABEL: name,
    }
    spec: dict[str, Any] = {"providerID": f"grove-sim://{name}"}
    if taints:
        spec["taints"] = [_taint(t) for t in taints]
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


def _taint(taint: Mapping[str, str] | str) -> dict[str, str]:
    """Normalise a taint mapping or ``key=value:Effect`` string, checking the effect."""
    if isinstance(taint, str):
        match = _TAINT_RE.match(taint.strip())
        if match is None:
            raise ClusterShapeError(f"taint {taint!r} is not key[=value]:Effect")
        taint = {k: v for k, v in match.groupdict().items() if v is not None}
    if not isinstance(taint, Mapping) or not taint.get("key") or taint.get("effect") not in _EFFECTS:
        raise ClusterShapeError(f"taint {taint!r} needs a key and an effect in {sorted(_EFFECTS)}")
    return {k: str(taint[k]) for k in ("key", "value", "effect") if taint.get(k) not in (None, "")}


def _quantity(value: Any, what: str) -> str:
    """A resource quantity from a shape file, as a string, after a syntax check."""
    text = str(value).strip()
    if not _QUANTITY_RE.match(text):
        raise ClusterShapeError(f"{what} {value!r} is not a Kubernetes quantity")
    return text


def _gpu_labels(gpus: int, model: str) -> dict[str, str]:
    """The GPU feature-discovery style labels a GPU node carries (none for CPU-only nodes)."""
    if gpus <= 0:
        return {}
    return {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": model,
        "nvidia.com/gpu.count": str(gpus),
        "accelerator": re.sub(r"[^a-z0-9.-]+", "-", model.lower()).strip("-.") or "nvidia",
    }


def _capacity(cpu: str, memory: str, pods: int, gpus: int, ephemeral_storage: str) -> dict[str, str]:
    """A node's capacity map; GPU-less nodes have no nvidia.com/gpu entry at all."""
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": ephemeral_storage}
    if gpus > 0:
        capacity[GPU_RESOURCE] = str(gpus)
    return capacity


def nodes_from_flags(
    nodes: int,
    gpus_per_node: int,
    topology: str = "",
    *,
    cpu: str = "192",
    memory: str = "2048Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    gpu_model: str = DEFAULT_GPU_MODEL,
    ephemeral_storage: str = "1Ti",
    name_prefix: str = "node",
) -> list[dict[str, Any]]:
    """``nodes`` identical nodes named ``<prefix>-<i>`` (zero-padded), split over ``topology`` domains."""
    pool = {
        "name": name_prefix,
        "count": nodes,
        "gpus": gpus_per_node,
        "gpuModel": gpu_model,
        "cpu": cpu,
        "memory": memory,
        "pods": pods,
        "ephemeralStorage": ephemeral_storage,
        "labels": dict(labels or {}),
    }
    return _build({"topology": topology, "pools": [pool]})


def _build(shape: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Build every pool of a parsed shape document."""
    pools = shape.get("pools")
    if not isinstance(pools, list) or not pools:
        raise ClusterShapeError("a cluster shape needs a non-empty 'pools' list")
    shared = parse_topology(str(shape.get("topology") or ""))
    pool_topologies = [parse_topology(str(p.get("topology") or "")) if isinstance(p, Mapping) else () for p in pools]
    if shared and any(pool_topologies):
        raise ClusterShapeError("give topology either at the top level or per pool, not both")
    counts = [_pool_count(p) for p in pools]
    totals: dict[str, int] = {}
    for topology in [shared] if shared else pool_topologies:
        for level, total in _domain_totals(topology).items():
            totals[level] = totals.get(level, 0) + total
    widths = {level: _width(total) for level, total in totals.items()}
    domain_labels = _domain_labels(sum(counts), shared, {}, widths) if shared else []
    offsets: dict[str, int] = {}
    now = _now()
    result: list[dict[str, Any]] = []
    seen: set[str] = set()
    for pool, count, topology in zip(pools, counts, pool_topologies, strict=True):
        if not shared:
            domain_labels.extend(_domain_labels(count, topology, offsets, widths))
            for level, total in _domain_totals(topology).items():
                offsets[level] = offsets.get(level, 0) + total
        result.extend(_pool_nodes(pool, count, domain_labels, len(result), now, seen))
    return result


def _pool_count(pool: Any) -> int:
    """Validate a pool's keys and return its node count."""
    if not isinstance(pool, Mapping):
        raise ClusterShapeError("every pool must be a mapping")
    unknown = set(pool) - _POOL_KEYS
    if unknown:
        raise ClusterShapeError(f"unknown pool keys {sorted(unknown)}; allowed: {sorted(_POOL_KEYS)}")
    count = pool.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ClusterShapeError(f"pool {pool.get('name')!r}: count must be a non-negative integer")
    return count


def _pool_nodes(
    pool: Mapping[str, Any], count: int, domain_labels: list[dict[str, str]], first: int, now: str, seen: set[str]
) -> list[dict[str, Any]]:
    """The nodes of one pool; ``first`` is the index of its first node in the whole cluster."""
    name = pool.get("name")
    if not isinstance(name, str) or not _DNS_LABEL_RE.match(name):
        raise ClusterShapeError(f"pool name {name!r} must be a lowercase DNS label")
    if name in seen:
        raise ClusterShapeError(f"pool name {name!r} is used twice")
    seen.add(name)
    gpus = pool.get("gpus", 0)
    pods = pool.get("pods", 110)
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 0:
        raise ClusterShapeError(f"pool {name!r}: gpus must be a non-negative integer")
    if not isinstance(pods, int) or isinstance(pods, bool) or pods < 1:
        raise ClusterShapeError(f"pool {name!r}: pods must be a positive integer")
    extra = pool.get("labels") or {}
    if not isinstance(extra, Mapping):
        raise ClusterShapeError(f"pool {name!r}: labels must be a mapping")
    taints = [_taint(t) for t in pool.get("taints") or ()]
    capacity = _capacity(
        _quantity(pool.get("cpu", "192"), "cpu"),
        _quantity(pool.get("memory", "2048Gi"), "memory"),
        pods,
        gpus,
        _quantity(pool.get("ephemeralStorage", "1Ti"), "ephemeralStorage"),
    )
    base_labels = {
        **_gpu_labels(gpus, str(pool.get("gpuModel") or DEFAULT_GPU_MODEL)),
        **{str(k): str(v) for k, v in extra.items()},
    }
    width = _width(count)
    return [
        node_object(
            f"{name}-{i:0{width}d}",
            capacity=capacity,
            labels={**base_labels, **domain_labels[first + i]},
            taints=taints,
            index=first + i,
            timestamp=now,
        )
        for i in range(count)
    ]


def openb_nodes(path: Path, *, gpu_only: bool = True, topology: str = "") -> list[dict[str, Any]]:
    """Nodes from an Alibaba openb node list (``sn, cpu_milli, memory_mib, gpu, model``), named by ``sn``.

    cpu becomes ``<cpu_milli>m``, memory ``<memory_mib>Mi``, ``gpu`` the ``nvidia.com/gpu`` count and ``model`` the
    GPU product labels. ``gpu_only`` drops nodes without GPUs; ``topology`` splits the kept rows in file order.
    """
    rows: list[dict[str, str]] = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = {"sn", "cpu_milli", "memory_mib", "gpu", "model"} - set(reader.fieldnames or ())
        if missing:
            raise ClusterShapeError(f"{path}: not an openb node list, missing columns {sorted(missing)}")
        for line, row in enumerate(reader, start=2):
            try:
                gpus = int(row["gpu"] or 0)
                int(row["cpu_milli"])
                int(row["memory_mib"])
            except ValueError as exc:
                raise ClusterShapeError(f"{path}:{line}: bad number in {row}") from exc
            if gpus > 0 or not gpu_only:
                rows.append(row)
    levels = parse_topology(topology)
    widths = {level: _width(total) for level, total in _domain_totals(levels).items()}
    domains = _domain_labels(len(rows), levels, {}, widths)
    now = _now()
    nodes: list[dict[str, Any]] = []
    for index, row in enumerate(rows):
        gpus = int(row["gpu"] or 0)
        labels = {**_gpu_labels(gpus, row["model"].strip() or "unknown"), **domains[index]}
        capacity = _capacity(f"{int(row['cpu_milli'])}m", f"{int(row['memory_mib'])}Mi", 110, gpus, "1Ti")
        nodes.append(node_object(row["sn"].strip(), capacity=capacity, labels=labels, index=index, timestamp=now))
    return nodes


def nodes_from_file(path: Path) -> list[dict[str, Any]]:
    """Nodes from a YAML shape file (format in the module docstring) or, for ``*.csv``, an openb node list."""
    if path.suffix.lower() == ".csv":
        return openb_nodes(path, gpu_only=False)
    try:
        shape = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ClusterShapeError(f"{path}: invalid YAML: {exc}") from exc
    if not isinstance(shape, Mapping):
        raise ClusterShapeError(f"{path}: a cluster shape must be a mapping with a 'pools' list")
    unknown = set(shape) - {"topology", "pools"}
    if unknown:
        raise ClusterShapeError(f"{path}: unknown keys {sorted(unknown)}; allowed: ['pools', 'topology']")
    return _build(shape)
