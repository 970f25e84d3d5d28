"""The built-in default scheduler: binds the pods that name ``default-scheduler``, as a cluster's kube-scheduler.

Pods naming any other scheduler (Grove's) are never touched. A pending pod is filtered against every node
(``grove_sim.controllers.workloads.fit``) and bound through ``pods/binding`` to the feasible node with the most
free CPU and memory (kube-scheduler's ``LeastAllocated`` score; ties by name, so placement is deterministic). A
pod that fits nowhere gets ``PodScheduled=False`` reason ``Unschedulable`` with kube-scheduler's message and a
``FailedScheduling`` event, and is retried when a node or a bound pod changes (capacity may have appeared). What
is requested on a node is summed from the pods bound there each time a pod is scheduled, so a bind by another
scheduler is seen at once and this scheduler needs no cache of its own.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction
from typing import Any, Final

from grove_sim.controllers import podstatus
from grove_sim.controllers.events import EventRecorder
from grove_sim.controllers.workloads.fit import allocatable, fit_error, misfits, short_of_resources
from grove_sim.controllers.workloads.owned import PODS, write_status
from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.registry import subresources
from grove_sim.registry.core import Core, now_rfc3339
from grove_sim.storage.store import Event

__all__ = ["DEFAULT_SCHEDULER", "DefaultScheduler"]

DEFAULT_SCHEDULER: Final = "default-scheduler"
_NODES: Final = ("", "nodes")
Key = tuple[str, str]


def _ours(pod: dict[str, Any]) -> bool:
    """Unbound, ungated, not being deleted, and naming this scheduler (or none, which defaults to it)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName") or spec.get("schedulingGates") or pod["metadata"].get("deletionTimestamp"):
        return False
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER


class DefaultScheduler:
    """One scheduling queue for the pods of ``default-scheduler``."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._events = EventRecorder(core, DEFAULT_SCHEDULER)
        self._unschedulable: set[Key] = set()
        self.queue: WorkQueue[Key] = WorkQueue("default-scheduler", self._schedule)
        core.store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.key == _NODES:
            self._retry()
            return
        if event.key != PODS:
            return
        meta = event.obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if event.type != "DELETED" and _ours(event.obj):
            changed = (event.old or {}).get("spec") is not event.obj.get("spec")
            if key not in self._unschedulable or changed:
                self._unschedulable.discard(key)
                self.queue.add(key)
            return
        self._unschedulable.discard(key)
        old_node = ((event.old or {}).get("spec") or {}).get("nodeName")
        if old_node and (
            event.type == "DELETED" or (event.obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        ):
            self._retry()

    def _retry(self) -> None:
        """Capacity or nodes changed: every unschedulable pod gets another attempt."""
        for key in sorted(self._unschedulable):
            self.queue.add(key)
        self._unschedulable.clear()

    def _schedule(self, key: Key) -> None:
        pod = self._core.store.get(PODS, *key)
        if pod is None or not _ours(pod):
            return
        nodes = self._core.store.list(_NODES)
        used = self._requested()
        requests = podstatus.pod_requests(pod)
        reasons: Counter[str] = Counter()
        short_nodes = 0
        best: tuple[Fraction, str] | None = None
        for node in nodes:
            name = node["metadata"]["name"]
            failed = misfits(pod, node, requests, used[name])
            if failed:
                reasons.update(failed)
                short_nodes += short_of_resources(failed)
                continue
            score = self._free_share(node, used[name], requests)
            if best is None or (-score, name) < (-best[0], best[1]):
                best = (score, name)
        if best is None:
            self._refuse(pod, key, fit_error(len(nodes), reasons, short_nodes))
            return
        self._bind(pod, best[1])

    def _requested(self) -> defaultdict[str, defaultdict[str, Fraction]]:
        """What the pods bound to each node request (finished pods hold nothing)."""
        used: defaultdict[str, defaultdict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
        for pod in self._core.store.list(PODS):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                for name, amount in podstatus.pod_requests(pod).items():
                    used[node][name] += amount
        return used

    @staticmethod
    def _free_share(node: dict[str, Any], used: dict[str, Fraction], requests: dict[str, Fraction]) -> Fraction:
        """``LeastAllocated``: the mean share of CPU and memory left after placing the pod."""
        capacity = allocatable(node)
        shares = []
        for resource in ("cpu", "memory"):
            total = capacity.get(resource, Fraction(0))
            if total > 0:
                shares.append((total - used.get(resource, Fraction(0)) - requests.get(resource, Fraction(0))) / total)
        return sum(shares, Fraction(0)) / len(shares) if shares else Fraction(0)

    def _bind(self, pod: dict[str, Any], node: str) -> None:
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        body = {"metadata": {"name": meta["name"], "uid": meta.get("uid")}, "target": {"kind": "Node", "name": node}}
        try:
            subresources.bind(self._core, namespace, meta["name"], body)
        except errors.ApiError:
            return
        self._events.emit(pod, "Normal", "Scheduled", f"Successfully assigned {namespace}/{meta['name']} to {node}")

    def _refuse(self, pod: dict[str, Any], key: Key, message: str) -> None:
        self._unschedulable.add(key)
        self._events.emit(pod, "Warning", "FailedScheduling", message)
        status = dict(pod.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        previous = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        if previous is not None and previous.get("reason") == "Unschedulable" and previous.get("message") == message:
            return
        condition = podstatus.condition("PodScheduled", "False", now_rfc3339(), "Unschedulable")
        condition["message"] = message
        status["conditions"] = [*conditions, condition]
        write_status(self._core, pod, status)
