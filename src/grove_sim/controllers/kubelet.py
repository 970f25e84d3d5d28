"""Simulated nodes and kubelets, in the manner of KWOK: every node, however created, gets a fake kubelet.

For each pod bound to a node that exists the kubelet:

1. admits it or rejects it like a real kubelet (``grove_sim.controllers.noderesources``): the pod's effective
   requests must fit what the node has left, else the pod fails with reason ``OutOf<resource>`` (this is how the
   simulation catches scheduler bugs);
2. runs init containers one after the other: at once, except images in the executable-images mapping, which run
   for real (``grove_sim.controllers.execimages``) with the pod's service-account token and Secret volumes
   (``grove_sim.controllers.initcontainers``); meanwhile the container is ``running`` and kubectl shows
   ``Init:i/n``; a non-zero exit terminates it with ``Error`` (``Init:Error``) and, for ``restartPolicy: Never``,
   fails the pod; otherwise it is restarted with kubelet's backoff (at once, then 10 s doubling to 5 min:
   ``Init:CrashLoopBackOff`` meanwhile), counting ``restartCount``; after the last one the pod shows
   ``PodInitializing`` (Initialized) before its containers start;
3. sets the pod Running (startTime, podIP, hostIP, running containerStatuses, Initialized/ContainersReady/Ready
   conditions) and Ready after ``ready_delay``; app containers whose image is in the executable-images mapping
   run as local processes (``grove_sim.controllers.containers``: probes drive their readiness, exits restart them
   per ``restartPolicy``, their output is kept for ``kubectl logs``), and the pod is Ready once they all are;
4. removes pods marked for graceful deletion after ``min(grace period, delete_delay)``; running processes are
   first sent SIGTERM and, if still running after the grace period, SIGKILL, and the pod goes once they exited.

Every pod gets an address of its own on the loopback network (``127.a.b.c``: all of 127/8 is local on Linux), so
processes of two pods can both listen on the same port and probes, endpoints, proxy and port-forward reach them.

A pod bound to a node that does not exist stays Pending (nobody runs it, as in a real cluster whose node never
registered); it starts if the node is created later. Nodes created without status get Ready conditions,
capacity/allocatable and nodeInfo, as KWOK's node-initialize stage does.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from grove_sim.controllers import nodeinit, podstatus
from grove_sim.controllers.containers import ContainerRunner, LoopbackAddresses, RunnerSettings
from grove_sim.controllers.execimages import (
    ExecProcess,
    ExecResult,
    PodRuntime,
    container_argv,
    match_exec_image,
    start_container,
)
from grove_sim.controllers.initcontainers import (
    CrashBackoff,
    NotMounted,
    TokenSource,
    credentials,
    go_duration,
    with_env_refs,
)
from grove_sim.controllers.logring import DEFAULT_LOG_LIMIT, LogStore
from grove_sim.controllers.noderesources import NodeResources
from grove_sim.controllers.podevents import PodEvents
from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.registry.core import Core, clone, now_rfc3339
from grove_sim.storage.store import Event

__all__ = ["Kubelet", "KubeletOptions"]

_PODS = ("", "pods")
_NODES = ("", "nodes")
PodKey = tuple[str, str]


@dataclass
class KubeletOptions:
    """Timing and behaviour of the simulated kubelets."""

    ready_delay: float = 0.0
    delete_delay: float = 0.05
    exec_images: dict[str, str] = field(default_factory=dict)
    server_url: str = ""
    """The API server's URL, written into each executable-image process's kubeconfig."""
    restart_backoff: float = 10.0
    max_restart_backoff: float = 300.0
    mount_retry: float = 1.0
    """Seconds before retrying a container whose Secret volume is not there yet."""
    ca_data: bytes | None = None
    """PEM of the CA of an HTTPS API server, written into each process's kubeconfig."""
    time_scale: float = 1.0
    """Factor applied to probe delays and periods (tests run probes on a fast clock)."""
    log_limit: int = DEFAULT_LOG_LIMIT
    """Bytes of output kept per container run."""


@dataclass(slots=True)
class _PodState:
    node: str
    requests: dict[str, Fraction]
    ip: str
    runners: dict[str, ContainerRunner] = field(default_factory=dict)
    """The app containers that run as processes, by name."""
    completed: list[dict[str, Any]] = field(default_factory=list)
    """Terminated states of the init containers that exited 0, in order; the next one runs."""
    restarts: list[int] = field(default_factory=list)
    current: dict[str, Any] | None = None
    """Status fields (state, lastState, containerID, started) of the init container running, failed or waiting."""
    last_exit: dict[str, Any] | None = None
    backoff: CrashBackoff | None = None
    retry_at: float = 0.0
    backoff_wait: float = 0.0
    backing_off: bool = False
    process: ExecProcess | None = None
    task: asyncio.Task[None] | None = None
    stopping: bool = False
    initialized: bool = False
    running: bool = False
    ready: bool = False
    ready_at: float = 0.0


class Kubelet:
    """One controller standing in for the kubelets of every node."""

    def __init__(self, core: Core, options: KubeletOptions, token_for: TokenSource) -> None:
        self._core = core
        self.options = options
        self._token_for = token_for
        self._pods: dict[PodKey, _PodState] = {}
        self._stops: set[asyncio.Task[None]] = set()
        self._resources = NodeResources()
        self._waiting: dict[str, set[PodKey]] = defaultdict(set)
        self._addresses = LoopbackAddresses()
        self.events = PodEvents(core)
        self.logs = LogStore(options.log_limit)
        """Output of the containers run as processes (what ``pods/log`` reads)."""
        self.queue: WorkQueue[PodKey] = WorkQueue("kubelet", self._process)
        self.node_queue: WorkQueue[str] = WorkQueue("kubelet-nodes", self._init_node)
        self.delete_queue: WorkQueue[PodKey] = WorkQueue("kubelet-delete", self._finish_delete)
        core.store.add_listener(self._on_event)

    def queues(self) -> list[WorkQueue[Any]]:
        """The work queues the server starts and stops."""
        return [self.queue, self.node_queue, self.delete_queue]

    async def stop_tasks(self) -> None:
        """Kill running containers (cancelling their tasks kills the processes)."""
        tasks = [s.task for s in self._pods.values() if s.task is not None] + list(self._stops)
        tasks += [r.task for s in self._pods.values() for r in s.runners.values() if r.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # ------------------------------------------------------------------------------------------------- events

    def _on_event(self, event: Event) -> None:
        meta = event.obj.get("metadata") or {}
        if event.key == _NODES:
            if event.type == "DELETED":
                self._resources.forget_node(meta["name"])
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
            self.logs.forget(*key)
            return
        node = (event.obj.get("spec") or {}).get("nodeName")
        if not node:
            return
        if meta.get("deletionTimestamp"):
            grace = float(meta.get("deletionGracePeriodSeconds") or 0)
            state = self._pods.get(key)
            running = state is not None and state.process is not None and state.process.running
            if state is not None and (running or any(r.active for r in state.runners.values())):
                if not state.stopping:
                    state.stopping = True
                    task = asyncio.get_running_loop().create_task(self._stop_pod(key, state, grace))
                    self._stops.add(task)
                    task.add_done_callback(self._stops.discard)
                return
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
        self._resources.release(state.node, state.requests)
        if state.task is not None:
            state.task.cancel()
        for runner in state.runners.values():
            if runner.task is not None:
                runner.task.cancel()

    # --------------------------------------------------------------------------------------------------- nodes

    def _init_node(self, name: str) -> None:
        core = self._core
        node = core.store.get(_NODES, "", name)
        if node is None:
            return
        new = nodeinit.initialised(node)
        if new is not None:
            info = core.registry.get("", "v1", "nodes")
            assert info is not None
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
        if state.task is not None or state.stopping:
            return
        init = list((pod.get("spec") or {}).get("initContainers") or [])
        if len(state.restarts) < len(init):
            state.restarts = [0] * len(init)
        while len(state.completed) < len(init):
            container = init[len(state.completed)]
            command = match_exec_image(self.options.exec_images, str(container.get("image", "")))
            if command is None:
                at = now_rfc3339()
                state.completed.append({"exitCode": 0, "reason": "Completed", "startedAt": at, "finishedAt": at})
                continue
            if asyncio.get_running_loop().time() < state.retry_at:
                self._show_backoff(pod, state, container)
                return
            try:
                token, secrets = credentials(self._core.store, pod, container, self._token_for)
                container = with_env_refs(self._core.store, pod, container)
            except NotMounted:
                self.queue.add_after(key, self.options.mount_retry)
                return
            run = self._run_init(key, state, pod, container, command, PodRuntime(self.options.server_url, token,
                                 self.options.ca_data, state.ip), secrets)  # fmt: skip
            state.task = asyncio.get_running_loop().create_task(run)
            return
        if init and not state.initialized:
            state.initialized = True
            self._write_status(pod, podstatus.initialized_status(
                pod, self._base_status(pod, state), completed=state.completed, restarts=state.restarts
            ))  # fmt: skip
            self.queue.add(key)
            return
        now = asyncio.get_running_loop().time()
        if not state.running:
            state.running = True
            state.ready_at = now + self.options.ready_delay
            if self.options.ready_delay > 0:
                self.queue.add_after(key, self.options.ready_delay)
            self._start_runners(key, pod, state)
        status = self._running_status(pod, state, now >= state.ready_at)
        state.ready = all(c.get("ready") for c in status["containerStatuses"])
        if status != pod.get("status"):
            self._write_status(pod, status)

    def _admit(self, key: PodKey, pod: dict[str, Any], node: dict[str, Any]) -> _PodState | None:
        requests, rejection = self._resources.admit(node, pod)
        if rejection is not None:
            status = {
                **(pod.get("status") or {}),
                "phase": "Failed",
                "reason": rejection.reason,
                "message": rejection.message,
                "startTime": now_rfc3339(),
            }
            self._write_status(pod, status)
            return None
        state = _PodState(node=node["metadata"]["name"], requests=requests, ip=self._addresses.next())
        self._pods[key] = state
        return state

    def _start_runners(self, key: PodKey, pod: dict[str, Any], state: _PodState) -> None:
        """Start a runner for each app container whose image is executable."""
        spec = pod.get("spec") or {}
        meta = pod["metadata"]
        for container in spec.get("containers") or []:
            command = match_exec_image(self.options.exec_images, str(container.get("image", "")))
            if command is None:
                continue
            settings = RunnerSettings(
                policy=str(spec.get("restartPolicy") or "Always"),
                grace=float(spec.get("terminationGracePeriodSeconds", 30)),
                backoff=CrashBackoff(self.options.restart_backoff, self.options.max_restart_backoff),
                host=state.ip,
                pod_label=f"{meta['name']}_{meta.get('namespace', '')}({meta.get('uid', '')})",
                time_scale=self.options.time_scale,
                mount_retry=self.options.mount_retry,
                report=functools.partial(self._report, key, str(container.get("name", ""))),
            )
            name = str(container.get("name", ""))
            runner = ContainerRunner(
                container,
                functools.partial(self._start_process, key, state, container, command),
                settings,
                self.logs.container(*key, name),
                lambda: self.queue.add(key),
            )
            state.runners[name] = runner
            runner.begin()

    def _report(self, key: PodKey, container: str, type_: str, reason: str, message: str) -> None:
        pod = self._core.store.get(_PODS, *key)
        if pod is not None:
            self.events.record(pod, container, type_, reason, message)

    async def _start_process(
        self, key: PodKey, state: _PodState, container: dict[str, Any], command: str
    ) -> ExecProcess:
        pod = self._core.store.get(_PODS, *key)
        if pod is None:
            raise OSError("the pod is gone")
        argv = container_argv(command, container)
        token, secrets = credentials(self._core.store, pod, container, self._token_for)
        container = with_env_refs(self._core.store, pod, container)
        runtime = PodRuntime(self.options.server_url, token, self.options.ca_data, state.ip)
        return await start_container(argv, self._with_ip(pod, state), container, runtime, secrets)

    def _with_ip(self, pod: dict[str, Any], state: _PodState) -> dict[str, Any]:
        """``pod`` as its process sees it through the downward API: with its IPs, even before they are written."""
        status = {**(pod.get("status") or {}), "podIP": state.ip, "hostIP": self._host_ip(state.node)}
        return {**pod, "status": status}

    async def _run_init(
        self,
        key: PodKey,
        state: _PodState,
        pod: dict[str, Any],
        container: dict[str, Any],
        command: str,
        runtime: PodRuntime,
        secrets: dict[str, dict[str, bytes]],
    ) -> None:
        position = len(state.completed)
        if state.last_exit is not None:
            state.restarts[position] += 1
        last = {"lastState": {"terminated": state.last_exit}} if state.last_exit is not None else {}
        started = now_rfc3339()
        container_id: dict[str, str] = {}
        logs = self.logs.container(*key, str(container.get("name")))
        try:
            argv = container_argv(command, container)
            state.process = await start_container(argv, self._with_ip(pod, state), container, runtime, secrets)
        except OSError as exc:
            result = ExecResult(128, f"failed to start {command!r}: {exc}")
        else:
            container_id = {"containerID": f"grove-sim://{state.process.pid}"}
            state.current = {"state": {"running": {"startedAt": started}}, "started": True, **container_id, **last}
            self._write_status(pod, self._init_status(pod, state))
            ring = logs.new_run()
            try:
                result = await state.process.wait(ring.append)
            finally:
                ring.close()
        state.process = None
        state.task = None
        current = self._core.store.get(_PODS, *key)
        if self._pods.get(key) is not state or current is None or current["metadata"].get("deletionTimestamp"):
            return
        code = result.exit_code if result.exit_code >= 0 else 128 - result.exit_code
        terminated: dict[str, Any] = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": started,
            "finishedAt": now_rfc3339(),
            **container_id,
        }
        if code == 0:
            state.completed.append(terminated)
            state.current = state.last_exit = state.backoff = None
            state.retry_at = 0.0
            self.queue.add(key)
            return
        if result.message:
            terminated["message"] = result.message[-1024:]
        state.current = {"state": {"terminated": terminated}, **container_id, **last}
        state.last_exit = terminated
        status = self._init_status(current, state)
        if (current.get("spec") or {}).get("restartPolicy") == "Never":
            status["phase"] = "Failed"
            self._write_status(current, status)
            self._release(key)
            return
        if state.backoff is None:
            state.backoff = CrashBackoff(self.options.restart_backoff, self.options.max_restart_backoff)
        now = asyncio.get_running_loop().time()
        delay = state.backoff.restart_delay(now)
        state.retry_at = now + delay
        state.backoff_wait = delay
        state.backing_off = False
        self._write_status(current, status)
        self.queue.add_after(key, delay)

    def _show_backoff(self, pod: dict[str, Any], state: _PodState, container: dict[str, Any]) -> None:
        """``Init:CrashLoopBackOff``: the failed container waits for its restart (written once per wait)."""
        if state.backing_off or state.backoff is None:
            return
        state.backing_off = True
        meta = pod["metadata"]
        message = (
            f"back-off {go_duration(state.backoff_wait)} restarting failed container={container.get('name')} "
            f"pod={meta['name']}_{meta.get('namespace', '')}({meta.get('uid', '')})"
        )
        last = {"lastState": {"terminated": state.last_exit}} if state.last_exit is not None else {}
        state.current = {"state": {"waiting": {"reason": "CrashLoopBackOff", "message": message}}, **last}
        self._write_status(pod, self._init_status(pod, state))

    async def _stop_pod(self, key: PodKey, state: _PodState, grace: float) -> None:
        """SIGTERM, SIGKILL after ``grace`` seconds, then let the pod go (a kubelet's graceful container stop)."""
        try:
            stops = [runner.stop(grace) for runner in state.runners.values()]
            if state.process is not None:
                stops.append(state.process.stop(signal.SIGTERM, grace))
            await asyncio.gather(*stops, return_exceptions=True)
        finally:
            self.delete_queue.add(key)

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
        status["podIP"] = state.ip
        status["podIPs"] = [{"ip": state.ip}]
        return status

    def _init_status(self, pod: dict[str, Any], state: _PodState) -> dict[str, Any]:
        status = self._base_status(pod, state)
        completed, restarts = state.completed, state.restarts
        return podstatus.init_status(pod, status, completed=completed, restarts=restarts, current=state.current)

    def _running_status(self, pod: dict[str, Any], state: _PodState, ready: bool) -> dict[str, Any]:
        runs = {name: runner.status() for name, runner in state.runners.items()}
        status = podstatus.running_status(
            pod, self._base_status(pod, state), completed=state.completed, restarts=state.restarts, ready=ready,
            runs=runs,
        )  # fmt: skip
        containers = (pod.get("spec") or {}).get("containers") or []
        if runs and len(runs) == len(containers) and all(r.finished for r in state.runners.values()):
            status["phase"] = "Succeeded" if all(r.exit_code == 0 for r in state.runners.values()) else "Failed"
        return status

    def _finish_delete(self, key: PodKey) -> None:
        info = self._core.registry.get("", "v1", "pods")
        assert info is not None
        pod = self._core.store.get(_PODS, *key)
        if pod is None or not pod["metadata"].get("deletionTimestamp"):
            return
        self._release(key)
        with contextlib.suppress(errors.ApiError):
            self._core.delete(info, key[0], key[1], {"gracePeriodSeconds": 0})
