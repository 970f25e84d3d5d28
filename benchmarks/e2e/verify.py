"""Correctness of an end-to-end run, from the cluster's final state: a fast scheduler that places wrongly fails.

Checked: every PodGang exists and every PodGroup has at least `minReplicas` pods bound; every expected workload pod
is bound and none failed (grove-sim's kubelet fails a pod bound to a node that cannot hold it); every required
topology constraint (gang-wide, per group config, per PodGroup) holds, judged by the bound nodes' labels; and no
node holds more requested cpu, memory, GPUs or pods than it has allocatable, counting every pod on the cluster.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchmarks.sim_throughput_phases import parse_quantity

__all__ = ["check_constraints", "check_overcommit", "verify"]

Obj = Mapping[str, Any]


def _required(constraint: Obj | None) -> str | None:
    key = ((constraint or {}).get("packConstraint") or {}).get("required")
    return str(key) if key else None


def _scopes(podgang: Obj) -> Iterable[tuple[str, list[str], str]]:
    """(scope name, PodGroup names, required node label key) of every required constraint of a PodGang."""
    spec = podgang.get("spec") or {}
    groups = spec.get("podgroups") or []
    if key := _required(spec.get("topologyConstraint")):
        yield "gang", [str(g["name"]) for g in groups], key
    for config in spec.get("topologyConstraintGroupConfigs") or []:
        if key := _required(config.get("topologyConstraint")):
            yield str(config.get("name")), [str(n) for n in config.get("podGroupNames") or []], key
    for group in groups:
        if key := _required(group.get("topologyConstraint")):
            yield str(group["name"]), [str(group["name"])], key


def check_constraints(
    podgangs: Sequence[Obj], node_of: Mapping[str, str], node_labels: Mapping[str, Mapping[str, str]]
) -> tuple[list[str], int]:
    """Problems with gang completeness and required constraints, and the number of constraints checked."""
    problems: list[str] = []
    checked = 0
    for gang in podgangs:
        name = str((gang.get("metadata") or {}).get("name"))
        members: dict[str, list[str]] = {}
        for group in (gang.get("spec") or {}).get("podgroups") or []:
            refs = [str(r.get("name")) for r in group.get("podReferences") or []]
            members[str(group["name"])] = refs
            bound = sum(1 for pod in refs if node_of.get(pod))
            need = int(group.get("minReplicas", len(refs)))
            if bound < need:
                problems.append(f"gang {name} group {group['name']}: {bound}/{need} required pods bound")
        for scope, groups, key in _scopes(gang):
            checked += 1
            domains = set()
            for group_name in groups:
                for pod in members.get(group_name, []):
                    node = node_of.get(pod)
                    if node:
                        domains.add(node_labels.get(node, {}).get(key))
            if None in domains or len(domains) > 1:
                shown = sorted(str(d) for d in domains)
                problems.append(f"gang {name} scope {scope}: required {key} violated, pods span {shown}")
    return problems, checked


def _requests(pod: Obj) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    spec = pod.get("spec") or {}
    for container in spec.get("containers") or []:
        for resource, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[resource] += parse_quantity(str(value))
    for container in spec.get("initContainers") or []:  # init containers run first: the max counts, not the sum
        for resource, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[resource] = max(total[resource], parse_quantity(str(value)))
    total["pods"] = 1.0
    return total


def check_overcommit(nodes: Sequence[Obj], pods: Sequence[Obj]) -> list[str]:
    """Nodes whose bound, non-finished pods request more than the node's allocatable of any resource."""
    used: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for resource, value in _requests(pod).items():
            used[str(node)][resource] += value
    problems = []
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name"))
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        for resource, value in used.get(name, {}).items():
            limit = parse_quantity(str(allocatable.get(resource, "0")))
            if value > limit + 1e-9:
                problems.append(f"node {name} over-committed on {resource}: {value:g} > {limit:g}")
    return problems


def verify(
    podgangs: Sequence[Obj],
    workload_pods: Sequence[Obj],
    all_pods: Sequence[Obj],
    nodes: Sequence[Obj],
    expected_pods: int,
    expected_gangs: int,
) -> dict[str, Any]:
    """All checks; `ok` is False if any problem was found (problems are listed, the first 20 of each kind)."""
    node_of = {
        str(p["metadata"]["name"]): str((p.get("spec") or {}).get("nodeName") or "")
        for p in workload_pods
        if not (p.get("metadata") or {}).get("deletionTimestamp")
    }
    labels = {str(n["metadata"]["name"]): dict((n.get("metadata") or {}).get("labels") or {}) for n in nodes}
    problems: list[str] = []
    if len(podgangs) != expected_gangs:
        problems.append(f"{len(podgangs)} PodGangs, expected {expected_gangs}")
    bound = sum(1 for node in node_of.values() if node)
    if bound != expected_pods or len(node_of) != expected_pods:
        problems.append(f"{bound} of {len(node_of)} workload pods bound, expected {expected_pods}")
    failed = [str(p["metadata"]["name"]) for p in all_pods if (p.get("status") or {}).get("phase") == "Failed"]
    if failed:
        problems.append(f"{len(failed)} pods Failed (e.g. {', '.join(failed[:5])})")
    gang_problems, checked = check_constraints(podgangs, node_of, labels)
    over = check_overcommit(nodes, all_pods)
    return {
        "ok": not (problems or gang_problems or over),
        "pods_bound": bound,
        "gangs": len(podgangs),
        "constraints_checked": checked,
        "constraint_violations": len([p for p in gang_problems if "violated" in p]),
        "incomplete_gangs": len([p for p in gang_problems if "required pods bound" in p]),
        "overcommitted_nodes": len({p.split()[1] for p in over}),
        "problems": problems + gang_problems[:20] + over[:20],
    }
