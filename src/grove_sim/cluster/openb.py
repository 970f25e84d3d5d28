"""The Alibaba openb GPU node list (``sn, cpu_milli, memory_mib, gpu, model``) as simulated nodes."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from grove_sim.cluster.nodes import gpu_labels, node_capacity, node_object, timestamp_now
from grove_sim.cluster.topology import ClusterShapeError, domain_labels, domain_totals, index_width, parse_topology

__all__ = ["openb_nodes"]


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
    widths = {level: index_width(total) for level, total in domain_totals(levels).items()}
    domains = domain_labels(len(rows), levels, {}, widths)
    now = timestamp_now()
    nodes: list[dict[str, Any]] = []
    for index, row in enumerate(rows):
        gpus = int(row["gpu"] or 0)
        labels = {**gpu_labels(gpus, row["model"].strip() or "unknown"), **domains[index]}
        capacity = node_capacity(f"{int(row['cpu_milli'])}m", f"{int(row['memory_mib'])}Mi", 110, gpus, "1Ti")
        nodes.append(node_object(row["sn"].strip(), capacity=capacity, labels=labels, index=index, timestamp=now))
    return nodes
