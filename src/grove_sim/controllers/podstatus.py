"""Pod status documents as a real kubelet writes them: conditions, container statuses, effective requests.

Kept apart from ``grove_sim.controllers.kubelet`` (which decides *when* a pod changes state) so the shapes clients
parse — ``initContainerStatuses`` during ``Init:i/n``, running ``containerStatuses``, the five pod conditions with
stable ``lastTransitionTime`` — are pure functions of the pod and its progress.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from grove_sim.machinery.quantity import QuantityError, parse_quantity
from grove_sim.registry.core import now_rfc3339

__all__ = ["condition", "init_status", "initialized_status", "pod_requests", "running_status", "set_conditions"]


def _container_requests(container: dict[str, Any]) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    out: dict[str, Fraction] = {}
    for name, value in merged.items():
        with contextlib.suppress(QuantityError):
            out[name] = parse_quantity(value)
    return out


def pod_requests(pod: dict[str, Any]) -> dict[str, Fraction]:
    """Effective requests: max(any init container, sum of containers) per resource, plus one ``pods`` slot."""
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = defaultdict(Fraction)
    for container in spec.get("containers") or []:
        for name, value in _container_requests(container).items():
            total[name] += value
    for container in spec.get("initContainers") or []:
        for name, value in _container_requests(container).items():
            total[name] = max(total[name], value)
    total["pods"] = Fraction(1)
    return {k: v for k, v in total.items() if v > 0}


def condition(type_: str, status: str, now: str, reason: str = "") -> dict[str, Any]:
    """One pod condition as the kubelet writes it."""
    cond: dict[str, Any] = {"type": type_, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        cond["reason"] = reason
    return cond


def set_conditions(status: dict[str, Any], values: dict[str, tuple[str, str]]) -> None:
    """Set condition values, keeping lastTransitionTime when a condition does not change, in kubelet order."""
    now = now_rfc3339()
    current = {c.get("type"): c for c in status.get("conditions") or []}
    for type_, (value, reason) in values.items():
        old = current.get(type_)
        if old is None or old.get("status") != value:
            current[type_] = condition(type_, value, now, reason)
    order = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    status["conditions"] = sorted(current.values(), key=lambda c: order.index(c["type"]) if c["type"] in order else 99)


def _init_statuses(
    pod: dict[str, Any],
    completed: Sequence[dict[str, Any]],
    restarts: Sequence[int],
    current: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """``initContainerStatuses``: ``completed`` holds the terminated states of the init containers that exited 0,
    ``current`` the status fields (state, lastState, containerID, started) of the next one, the rest wait."""
    statuses = []
    for i, container in enumerate((pod.get("spec") or {}).get("initContainers") or []):
        entry: dict[str, Any] = {
            "name": container.get("name"),
            "image": container.get("image"),
            "imageID": "",
            "ready": i < len(completed),
            "restartCount": restarts[i] if i < len(restarts) else 0,
            "started": False,
        }
        if i < len(completed):
            entry["state"] = {"terminated": completed[i]}
        elif i == len(completed) and current is not None:
            entry.update(current)
        else:
            entry["state"] = {"waiting": {"reason": "PodInitializing"}}
        statuses.append(entry)
    return statuses


def _waiting_containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": c.get("name"),
            "image": c.get("image"),
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "started": False,
            "state": {"waiting": {"reason": "PodInitializing"}},
        }
        for c in (pod.get("spec") or {}).get("containers") or []
    ]


def init_status(
    pod: dict[str, Any],
    status: dict[str, Any],
    *,
    completed: Sequence[dict[str, Any]],
    restarts: Sequence[int],
    current: dict[str, Any] | None,
) -> dict[str, Any]:
    """Status while init container ``len(completed)`` runs, failed or backs off (``Init:i/n``, ``Init:Error``,
    ``Init:CrashLoopBackOff`` in kubectl); ``current`` holds its state fields."""
    status["phase"] = "Pending"
    status["initContainerStatuses"] = _init_statuses(pod, completed, restarts, current)
    status["containerStatuses"] = _waiting_containers(pod)
    set_conditions(
        status,
        {
            "PodReadyToStartContainers": ("True", ""),
            "Initialized": ("False", "ContainersNotInitialized"),
            "Ready": ("False", "ContainersNotReady"),
            "ContainersReady": ("False", "ContainersNotReady"),
            "PodScheduled": ("True", ""),
        },
    )
    return status


def initialized_status(
    pod: dict[str, Any], status: dict[str, Any], *, completed: Sequence[dict[str, Any]], restarts: Sequence[int]
) -> dict[str, Any]:
    """Status between the last init container's exit and the app containers' start (``PodInitializing``)."""
    status["phase"] = "Pending"
    status["initContainerStatuses"] = _init_statuses(pod, completed, restarts)
    status["containerStatuses"] = _waiting_containers(pod)
    set_conditions(
        status,
        {
            "PodReadyToStartContainers": ("True", ""),
            "Initialized": ("True", ""),
            "Ready": ("False", "ContainersNotReady"),
            "ContainersReady": ("False", "ContainersNotReady"),
            "PodScheduled": ("True", ""),
        },
    )
    return status


def running_status(
    pod: dict[str, Any],
    status: dict[str, Any],
    *,
    completed: Sequence[dict[str, Any]],
    restarts: Sequence[int],
    ready: bool,
    runs: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Status of a started pod: every init container Completed, app containers running (Ready per ``ready``),
    except those run as processes, whose entries ``runs`` gives by name; the pod is Ready when all are."""
    status["phase"] = "Running"
    started = status["startTime"]
    if (pod.get("spec") or {}).get("initContainers"):
        status["initContainerStatuses"] = _init_statuses(pod, completed, restarts)
    status["containerStatuses"] = [
        {
            "name": c.get("name"),
            "image": c.get("image"),
            "imageID": f"sim://{c.get('image')}",
            "containerID": f"containerd://{pod['metadata'].get('uid', '')[:8]}{i}",
            "ready": ready,
            "restartCount": 0,
            "started": True,
            "state": {"running": {"startedAt": started}},
        }
        for i, c in enumerate((pod.get("spec") or {}).get("containers") or [])
    ]
    if runs:
        status["containerStatuses"] = [runs.get(str(c["name"]), c) for c in status["containerStatuses"]]
        ready = all(c.get("ready") for c in status["containerStatuses"])
    value = "True" if ready else "False"
    reason = "" if ready else "ContainersNotReady"
    set_conditions(
        status,
        {
            "PodReadyToStartContainers": ("True", ""),
            "Initialized": ("True", ""),
            "Ready": (value, reason),
            "ContainersReady": (value, reason),
            "PodScheduled": ("True", ""),
        },
    )
    return status
