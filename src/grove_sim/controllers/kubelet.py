"""Simulated nodes and kubelets, in the manner of KWOK: every node, however created, gets a fake kubelet.

For each pod bound to a node that exists the kubelet:

1. admits it or rejects it like a real kubelet: the pod's effective requests (max of the init containers' and the
   sum of the app containers', plus one ``pods`` slot) added to those of the non-terminal pods already admitted on
   the node must fit the node's allocatable, else the pod fails with reason ``OutOf<resource>`` (this is how the
   simulation catches scheduler bugs);
2. runs init containers: at once, except images in the executable-images mapping, which run for real
   (``grove_sim.controllers.execimages``); meanwhile the pod shows ``Init:i/n``; a non-zero exit terminates the
   container with ``Error`` and, for ``restartPolicy: Never``, fails the pod; otherwise it is retried with
   exponential backoff (0.5 s doubling to 10 s), counting ``restartCount``;
3. sets the pod Running (startTime, podIP, hostIP, running containerStatuses, Initialized/ContainersReady/Ready
   conditions) and Ready after ``ready_delay``;
4. removes pods marked for graceful deletion after ``min(grace period, delete_delay)``.

A pod bound to a node that does not exist stays Pending (nobody runs it, as in a real cluster whose node never
registered); it starts if the node is created later. Nodes created without status get Ready conditions,
capacity/allocatable and nodeInfo, as KWOK's node-initialize stage does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from grove_sim.controllers import podstatus
from grove_sim.controllers.execimages import match_exec_image, run_container
from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.machinery.quantity import QuantityError, format_quantity, parse_quantity
from grove_sim.registry.core import Core, clone, now_rfc3339
from grove_sim.storage.store import Event

__all__ = ["Kubelet", "KubeletOptions"]

_PODS = ("", "pods")
_NODES = ("", "nodes")
PodKey = tuple[str, str]
_REQUESTS_CACHE = 4096


@dataclass
class KubeletOptions:
    """Timing and behaviour of the simulated kubelets."""

    ready_delay: float = 0.0
    delete_delay: float = 0.05
    exec_images: dict[str, str] = field(default_factory=dict)
    kubeconfig: str | None = None


@dataclass(slots=True)
class _PodState:
    node: str
    requests: dict[str, Fraction]
    next_init: int = 0
    restarts: int = 0
    last_error: dict[str, Any] | None = None
    running: bool = False
    ready: bool = False
    ready_at: float = 0.0
    retry_at: float = 0.0
    task: asyncio.Task[None] | None = None


class Kubelet:
    """One controller standing in for the kubelets of every node."""

    def __init__(self, core: Core, options: KubeletOptions) -> None:
        self._core = core
        self.options = options
        self._pods: dict[PodKey, _PodState] = {}
        self._used: dict[str, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
        self._waiting: dict[str, set[PodKey]] = defaultdict(set)
        self._allocatable: dict[str, tuple[dict[str, Any], dict[str, Fraction]]] = {}
        self._requests: dict[tuple[Any, ...], dict[str, Fraction]] = {}
        self._ip = 0
        self.queue: WorkQueue[PodKey] = WorkQueue("kubelet", self._process)
        self.node_queue: WorkQueue[str] = WorkQueue("kubelet-nodes", self._init_node)
        self.delete_queue: WorkQueue[PodKey] = WorkQueue("kubelet-delete", self._finish_delete)
        core.store.add_listener(self._on_event)

    def queues(self) -> list[WorkQueue[Any]]:
        """The work queues the server starts and stops."""
        return [self.queue, self.node_queue, self.delete_queue]

    async def stop_tasks(self) -> None:
        """Cancel running init containers."""
        for state in self._pods.values():
            if state.task is not None:
                state.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await state.task

    # ------------------------------------------------------------------------------------------------- events

    def _on_event(self, event: Event) -> None:
        meta = event.obj.get("metadata") or {}
        if event.key == _NODES:
            if event.type == "DELETED":
                self._allocatable.pop(meta["name"], None)
                return
            uninitialised = not (event.obj.get("status") or {}).get("nodeInfo")
            if event.type == "ADDED" or (event.type == "MODIFIED" and uninitialised):
                self.node_queue.add(meta["name"])
            return
        if event.key != _PODS:
            return
        key = (meta.get("namespace", ""), meta["name"])
        if event.type == "DELETED":
            self._release(key)
            return
        node = (event.obj.get("spec") or {}).get("nodeName")
        if not node:
            return
        if meta.get("deletionTimestamp"):
            grace = float(meta.get("deletionGracePeriodSeconds") or 0)
            self.delete_queue.add_after(key, min(grace, self.options.delete_delay))
            return
        if (event.obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self._release(key)
            return
        state = self._pods.get(key)
        if state is None or not state.ready:
            self.queue.add(key)

    def _release(self, key: PodKey) -> None:
        state = self._pods.pop(key, None)
        if state is None:
            return
        used = self._used[state.node]
        for name, value in state.requests.items():
            used[name] -= value
        if state.task is not None:
            state.task.cancel()

    # --------------------------------------------------------------------------------------------------- nodes

    def _init_node(self, name: str) -> None:
        core = self._core
        node = core.store.get(_NODES, "", name)
        if node is None:
            return
        status = node.get("status") or {}
        if not status.get("nodeInfo") or not status.get("conditions") or not status.get("allocatable"):
            info = core.registry.get("", "v1", "nodes")
            assert info is not None
            new = clone(node)
            st = new.setdefault("status", {})
            capacity = st.get("capacity") or {"cpu": "1k", "memory": "1Ti", "pods": "1M"}
            st["capacity"] = capacity
            st.setdefault("allocatable", dict(capacity))
            now = now_rfc3339()
            if not any(c.get("type") == "Ready" for c in st.get("conditions") or []):
                ready = {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status (simulated)",
                }
                st["conditions"] = [
                    *(st.get("conditions") or []),
                    {**ready, "lastHeartbeatTime": now, "lastTransitionTime": now},
                ]
            st.setdefault("addresses", [{"type": "Hostname", "address": name}])
            st.setdefault(
                "nodeInfo",
                {
                    "kubeletVersion": "v1.32.5-grove-sim",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                    "containerRuntimeVersion": "containerd://1.7.0-sim",
                    "osImage": "Grove Simulated Linux",
                    "kernelVersion": "6.1.0-grove-sim",
                    "machineID": name,
                    "systemUUID": name,
                    "bootID": "",
                    "kubeProxyVersion": "v1.32.5-grove-sim",
                },
            )
            st.setdefault("phase", "Running")
            core.replace(info, node, new, subresource="status")
        for key in sorted(self._waiting.pop(name, set())):
            self.queue.add(key)

    # ---------------------------------------------------------------------------------------------------- pods

    def _write_status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        info = self._core.registry.get("", "v1", "pods")
        assert info is not None
        new = {**pod, "status": status}
        try:
            self._core.replace(info, pod, new, subresource="status")
        except errors.ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _process(self, key: PodKey) -> None:
        pod = self._core.store.get(_PODS, *key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        state = self._pods.get(key)
        if state is None:
            node = self._core.store.get(_NODES, "", node_name)
            if node is None:
                self._waiting[node_name].add(key)
                return
            state = self._admit(key, pod, node)
            if state is None:
                return
        if state.task is not None:
            return
        init = list((pod.get("spec") or {}).get("initContainers") or [])
        while state.next_init < len(init):
            container = init[state.next_init]
            command = match_exec_image(self.options.exec_images, str(container.get("image", "")))
            if command is None:
                state.next_init += 1
                continue
            if asyncio.get_running_loop().time() < state.retry_at:
                return
            self._write_status(
                pod,
                self._init_status(pod, state),
            )
            state.task = asyncio.get_running_loop().create_task(self._run_init(key, pod, container, command))
            return
        now = asyncio.get_running_loop().time()
        if not state.running:
            state.running = True
            state.ready_at = now + self.options.ready_delay
            state.ready = self.options.ready_delay <= 0
            self._write_status(
                pod,
                self._running_status(pod, state, state.ready),
            )
            if not state.ready:
                self.queue.add_after(key, self.options.ready_delay)
        elif not state.ready and now >= state.ready_at:
            state.ready = True
            self._write_status(pod, self._running_status(pod, state, True))

    def _admit(self, key: PodKey, pod: dict[str, Any], node: dict[str, Any]) -> _PodState | None:
        node_name = node["metadata"]["name"]
        allocatable = self._node_allocatable(node_name, (node.get("status") or {}).get("allocatable") or {})
        requests = self._pod_requests(pod)
        used = self._used[node_name]
        for name, value in sorted(requests.items()):
            capacity = allocatable.get(name, Fraction(0))
            if used[name] + value > capacity:
                message = (
                    f"Pod was rejected: Node didn't have enough resource: {name}, requested: "
                    f"{format_quantity(value, name)}, used: {format_quantity(used[name], name)}, "
                    f"capacity: {format_quantity(capacity, name)}"
                )
                status = {
                    **(pod.get("status") or {}),
                    "phase": "Failed",
                    "reason": f"OutOf{name}",
                    "message": message,
                    "startTime": now_rfc3339(),
                }
                self._write_status(pod, status)
                return None
        for name, value in requests.items():
            used[name] += value
        state = _PodState(node=node_name, requests=requests)
        self._pods[key] = state
        return state

    def _pod_requests(self, pod: dict[str, Any]) -> dict[str, Fraction]:
        """The pod's effective requests, computed once per distinct set of container resources.

        Pods of one workload share their resources, so the Fraction arithmetic runs once per shape, keyed by the
        containers' requests and limits. The returned dict is shared and must not be mutated.
        """
        spec = pod.get("spec") or {}
        try:
            key = tuple(
                (
                    group,
                    tuple(((c.get("resources") or {}).get("requests") or {}).items()),
                    tuple(((c.get("resources") or {}).get("limits") or {}).items()),
                )
                for group in ("containers", "initContainers")
                for c in spec.get(group) or ()
            )
            cached = self._requests.get(key)
        except (AttributeError, TypeError):
            return podstatus.pod_requests(pod)
        if cached is None:
            if len(self._requests) >= _REQUESTS_CACHE:
                self._requests.clear()
            cached = self._requests[key] = podstatus.pod_requests(pod)
        return cached

    def _node_allocatable(self, node_name: str, allocatable: dict[str, Any]) -> dict[str, Fraction]:
        """The node's allocatable as numbers, parsed once per node version: the stored dict is immutable, so its
        identity tells whether the cached parse is current. Unparsable amounts count as zero."""
        cached = self._allocatable.get(node_name)
        if cached is not None and cached[0] is allocatable:
            return cached[1]
        parsed: dict[str, Fraction] = {}
        for name, value in allocatable.items():
            try:
                parsed[name] = parse_quantity(value)
            except QuantityError:
                parsed[name] = Fraction(0)
        self._allocatable[node_name] = (allocatable, parsed)
        return parsed

    async def _run_init(self, key: PodKey, pod: dict[str, Any], container: dict[str, Any], command: str) -> None:
        state = self._pods.get(key)
        if state is None:
            return
        started = now_rfc3339()
        try:
            result = await run_container(command, pod, container, self.options.kubeconfig)
            code, message = result.exit_code, result.message
        except OSError as exc:
            code, message = 127, str(exc)
        state.task = None
        if self._pods.get(key) is not state:
            return
        current = self._core.store.get(_PODS, *key)
        if current is None or current["metadata"].get("deletionTimestamp"):
            return
        if code == 0:
            state.next_init += 1
            state.last_error = None
            self.queue.add(key)
            return
        state.restarts += 1
        state.last_error = {
            "exitCode": code,
            "reason": "Error",
            "message": message[-1024:],
            "startedAt": started,
            "finishedAt": now_rfc3339(),
        }
        status = self._init_status(current, state, "CrashLoopBackOff")
        if (current.get("spec") or {}).get("restartPolicy") == "Never":
            status["phase"] = "Failed"
            self._write_status(current, status)
            self._release(key)
            return
        backoff = min(10.0, 0.5 * 2 ** (state.restarts - 1))
        state.retry_at = asyncio.get_running_loop().time() + backoff
        self._write_status(current, status)
        self.queue.add_after(key, backoff)

    # -------------------------------------------------------------------------------------------------- status

    def _host_ip(self, node_name: str) -> str:
        node = self._core.store.get(_NODES, "", node_name) or {}
        for address in (node.get("status") or {}).get("addresses") or []:
            if address.get("type") == "InternalIP":
                return str(address.get("address"))
        return "10.0.0.1"

    def _base_status(self, pod: dict[str, Any], state: _PodState) -> dict[str, Any]:
        status = clone(pod.get("status") or {})
        status.setdefault("startTime", now_rfc3339())
        status["hostIP"] = self._host_ip(state.node)
        status["hostIPs"] = [{"ip": status["hostIP"]}]
        if not status.get("podIP"):
            self._ip += 1
            ip = f"10.{244 + (self._ip >> 16)}.{(self._ip >> 8) & 255}.{self._ip & 255}"
            status["podIP"] = ip
            status["podIPs"] = [{"ip": ip}]
        return status

    def _init_status(self, pod: dict[str, Any], state: _PodState, waiting_reason: str = "") -> dict[str, Any]:
        return podstatus.init_status(
            pod,
            self._base_status(pod, state),
            next_init=state.next_init,
            restarts=state.restarts,
            last_error=state.last_error,
            waiting_reason=waiting_reason,
        )

    def _running_status(self, pod: dict[str, Any], state: _PodState, ready: bool) -> dict[str, Any]:
        return podstatus.running_status(pod, self._base_status(pod, state), restarts=state.restarts, ready=ready)

    def _finish_delete(self, key: PodKey) -> None:
        info = self._core.registry.get("", "v1", "pods")
        assert info is not None
        pod = self._core.store.get(_PODS, *key)
        if pod is None or not pod["metadata"].get("deletionTimestamp"):
            return
        self._release(key)
        with contextlib.suppress(errors.ApiError):
            self._core.delete(info, key[0], key[1], {"gracePeriodSeconds": 0})
