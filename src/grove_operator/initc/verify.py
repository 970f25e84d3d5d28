"""Checking a startup after the fact: did any pod become Ready before its parents had their minimum Ready?

This is the promise `grove-initc` keeps, stated on the pods alone: for every pod that carries the `grove-initc`
init container, each `--podcliques=<parent>:<min>` argument must have at least `min` pods of that parent whose
Ready condition turned True strictly before the pod's own did. Conditions carry whole seconds, so the check is
meaningful when a pod takes at least a second from start to Ready (grove-sim's `--ready-delay 1`), as a child's
Ready then lies at least one second after the Ready of the parents it waited for. The end-to-end tests, the
startup-order benchmark and the demo use it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from grove_api import labels as glabels
from grove_operator.initc.parents import parse_parents

__all__ = ["order_violations", "ready_since", "startup_parents_of"]


def ready_since(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod's Ready condition last turned True (None while it is not Ready)."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            stamp = str(condition.get("lastTransitionTime") or "")
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
    return None


def startup_parents_of(pod: Mapping[str, Any]) -> dict[str, int]:
    """The parents (and minimums) the pod's `grove-initc` init container waits for; empty without one."""
    for container in (pod.get("spec") or {}).get("initContainers") or ():
        if container.get("name") == glabels.INIT_CONTAINER_NAME:
            return parse_parents(str(a).removeprefix("--podcliques=") for a in container.get("args") or ())
    return {}


def order_violations(pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per (pod, parent) whose pod became Ready with fewer than the minimum of that parent Ready before."""
    pods = list(pods)
    ready_by_clique: dict[str, list[datetime]] = defaultdict(list)
    for pod in pods:
        since = ready_since(pod)
        clique = ((pod.get("metadata") or {}).get("labels") or {}).get(glabels.LABEL_PODCLIQUE)
        if since is not None and clique:
            ready_by_clique[str(clique)].append(since)
    problems = []
    for pod in pods:
        since = ready_since(pod)
        if since is None:
            continue
        for parent, needed in startup_parents_of(pod).items():
            before = sum(1 for t in ready_by_clique.get(parent, ()) if t < since)
            if before < needed:
                name = (pod.get("metadata") or {}).get("name")
                problems.append(f"{name} Ready at {since:%H:%M:%S} with {before}/{needed} of {parent} Ready before")
    return sorted(problems)
