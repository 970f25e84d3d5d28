"""Cluster shapes: identical nodes from ``grove-sim up`` flags, or node pools from a YAML shape file.

YAML shape file or a trace.

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

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from grove_sim.cluster.nodes import (
    DEFAULT_GPU_MODEL,
    check_quantity,
    gpu_labels,
    node_capacity,
    node_object,
    parse_taint,
    timestamp_now,
)
from grove_sim.cluster.openb import openb_nodes
from grove_sim.cluster.topology import ClusterShapeError, domain_labels, domain_totals, index_width, parse_topology

__all__ = ["nodes_from_file", "nodes_from_flags"]

_DNS_LABEL_RE: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_POOL_KEYS: Final = frozenset(
    {"name", "count", "gpus", "gpuModel", "cpu", "memory", "pods", "ephemeralStorage", "labels", "taints", "topology"}
)


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
        for level, total in domain_totals(topology).items():
            totals[level] = totals.get(level, 0) + total
    widths = {level: index_width(total) for level, total in totals.items()}
    labels_by_node = domain_labels(sum(counts), shared, {}, widths) if shared else []
    offsets: dict[str, int] = {}
    now = timestamp_now()
    result: list[dict[str, Any]] = []
    seen: set[str] = set()
    for pool, count, topology in zip(pools, counts, pool_topologies, strict=True):
        if not shared:
            labels_by_node.extend(domain_labels(count, topology, offsets, widths))
            for level, total in domain_totals(topology).items():
                offsets[level] = offsets.get(level, 0) + total
        result.extend(_pool_nodes(pool, count, labels_by_node, len(result), now, seen))
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
    pool: Mapping[str, Any], count: int, labels_by_node: list[dict[str, str]], first: int, now: str, seen: set[str]
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
    taints = [parse_taint(t) for t in pool.get("taints") or ()]
    capacity = node_capacity(
        check_quantity(pool.get("cpu", "192"), "cpu"),
        check_quantity(pool.get("memory", "2048Gi"), "memory"),
        pods,
        gpus,
        check_quantity(pool.get("ephemeralStorage", "1Ti"), "ephemeralStorage"),
    )
    base_labels = {
        **gpu_labels(gpus, str(pool.get("gpuModel") or DEFAULT_GPU_MODEL)),
        **{str(k): str(v) for k, v in extra.items()},
    }
    width = index_width(count)
    return [
        node_object(
            f"{name}-{i:0{width}d}",
            capacity=capacity,
            labels={**base_labels, **labels_by_node[first + i]},
            taints=taints,
            index=first + i,
            timestamp=now,
        )
        for i in range(count)
    ]


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
