"""Cluster shapes: the Node objects a simulated cluster starts with, from flags, a YAML shape file or a trace.

Pure builders of core/v1 Node dicts (no server, no I/O beyond reading the given file). ``grove-sim up`` and
``grove_sim.testing.SimCluster`` users, benchmarks and tests import the public names from here.
"""

from __future__ import annotations

from grove_sim.cluster.nodes import DEFAULT_GPU_MODEL, GPU_RESOURCE, HOSTNAME_LABEL, KUBELET_VERSION, node_object
from grove_sim.cluster.openb import openb_nodes
from grove_sim.cluster.shapes import nodes_from_file, nodes_from_flags
from grove_sim.cluster.topology import TOPOLOGY_LABELS, ClusterShapeError, Topology, parse_topology

__all__ = [
    "DEFAULT_GPU_MODEL",
    "GPU_RESOURCE",
    "HOSTNAME_LABEL",
    "KUBELET_VERSION",
    "TOPOLOGY_LABELS",
    "ClusterShapeError",
    "Topology",
    "node_object",
    "nodes_from_file",
    "nodes_from_flags",
    "openb_nodes",
    "parse_topology",
]
