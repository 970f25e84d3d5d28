"""Independent check of a decision's hard constraints, so no strategy's numbers rest on an invalid placement.

The runner checks every decision of every strategy before committing it, and the tests use the same check as the
property they assert. It re-derives everything from the snapshot and the gang, sharing no code with any strategy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np

from grove_sched.model import GangRequest, TopologyConstraint
from grove_sched.placement import Snapshot


def violations(snapshot: Snapshot, gang: GangRequest, assignments: Mapping[str, str]) -> list[str]:
    """Every broken hard constraint of `assignments` (pod → node) for `gang` on `snapshot`; empty when valid."""
    problems: list[str] = []
    group_of = {pod.name: grp for grp in gang.groups for pod in grp.pods}
    request_of = {
        pod.name: pod.requests if pod.requests is not None else grp.requests for grp in gang.groups for pod in grp.pods
    }
    for pod, node in assignments.items():
        if pod not in group_of:
            problems.append(f"pod {pod} is not in gang {gang.name}")
        if node not in snapshot.node_index:
            problems.append(f"pod {pod} is on unknown node {node}")
    if problems:
        return problems
    placed = Counter(group_of[pod].name for pod in assignments)
    for grp in gang.groups:
        if placed[grp.name] < grp.min_replicas:
            problems.append(
                f"group {grp.name} has {placed[grp.name]} pods placed, below its minimum {grp.min_replicas}"
            )
    used = np.zeros_like(snapshot.free)
    for pod, node in assignments.items():
        used[snapshot.node_index[node]] += snapshot.vector(request_of[pod])
    over = np.flatnonzero(((snapshot.free - used) < 0).any(axis=1) & (used > 0).any(axis=1))
    problems.extend(f"node {snapshot.node_names[n]} is over-committed" for n in over)
    touched = np.flatnonzero((used > 0).any(axis=1))
    bad = touched[snapshot.unschedulable[touched] | snapshot.taint_matrix[touched].any(axis=1)]
    problems.extend(f"node {snapshot.node_names[n]} is cordoned or tainted" for n in bad)
    scopes: list[tuple[str, set[str], TopologyConstraint]] = [(f"gang {gang.name}", set(group_of), gang.topology)]
    for cfg in gang.group_configs:
        members = {pod.name for grp in gang.groups if grp.name in cfg.group_names for pod in grp.pods}
        scopes.append((f"group config {cfg.name}", members, cfg.topology))
    for grp in gang.groups:
        scopes.append((f"group {grp.name}", {pod.name for pod in grp.pods}, grp.topology))
    for label, members, topo in scopes:
        key = topo.required_key
        if key is None:
            continue
        dom = snapshot.domains(key)
        values = {int(dom[snapshot.node_index[node]]) for pod, node in assignments.items() if pod in members}
        if -1 in values or len(values) > 1:
            problems.append(f"{label} spans {len(values)} {key} domain(s) (or unlabelled nodes) but requires one")
    return problems
