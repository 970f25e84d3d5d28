"""An app container run as a local process for as long as its pod lives, as a kubelet's container runtime would.

``ContainerRunner`` starts the process (``grove_sim.controllers.execimages``), captures its output in the container's
log ring, runs its startup, readiness and liveness probes (``grove_sim.controllers.probes``), and when the process
exits restarts it per the pod's ``restartPolicy`` with kubelet's crash-loop backoff (the first restart at once, then
doubling; ``CrashLoopBackOff`` meanwhile). A liveness or startup probe that fails its threshold kills the process
(SIGTERM, SIGKILL after the grace period), which then restarts like any exit. The kubelet reads the runner's
container status fields and is told (``changed``) whenever they change.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from grove_sim.controllers.execimages import ExecProcess, ExecResult
from grove_sim.controllers.initcontainers import CrashBackoff, NotMounted, go_duration
from grove_sim.controllers.logring import ContainerLogs
from grove_sim.controllers.probes import ProbeState, ProbeTiming, check
from grove_sim.registry.core import now_rfc3339

__all__ = ["ContainerRunner", "LoopbackAddresses", "RunnerSettings"]

_LOOPBACK_ADDRESSES = 254 * 256 * 254


class LoopbackAddresses:
    """Pod IPs on the loopback network, ``127.a.b.c`` with a and c in 1..254 (never 127.0.0.1, no .0 or .255).

    All of 127/8 is local on Linux, so a process can listen on its pod's own address and two pods can both serve
    the same port. Each simulator starts at a random place, so two of them on one machine rarely hand out the same
    address. (macOS has only 127.0.0.1 unless aliases are added: ``sudo ifconfig lo0 alias 127.a.b.c``.)
    """

    def __init__(self, start: int | None = None) -> None:
        self._next = random.Random().randrange(_LOOPBACK_ADDRESSES) if start is None else start

    def next(self) -> str:
        """The next address (after 16 million of them, they start over)."""
        n = self._next % _LOOPBACK_ADDRESSES
        self._next += 1
        return f"127.{1 + (n // (254 * 256)) % 254}.{(n // 254) % 256}.{1 + n % 254}"


StartProcess = Callable[[], Awaitable[ExecProcess]]
"""Starts the container's process; raises ``NotMounted`` (retried) or ``OSError`` (a failed start)."""
Report = Callable[[str, str, str], None]
"""Records a kubelet Event about the container: (type, reason, message)."""


def _no_report(type_: str, reason: str, message: str) -> None:
    return None


class RunnerSettings:
    """What a runner takes from its pod and kubelet: restart policy, grace period, backoff, clocks."""

    def __init__(
        self,
        *,
        policy: str,
        grace: float,
        backoff: CrashBackoff,
        host: str,
        pod_label: str,
        time_scale: float = 1.0,
        mount_retry: float = 1.0,
        report: Report = _no_report,
    ) -> None:
        self.policy = policy
        self.grace = grace
        self.backoff = backoff
        self.host = host
        """The pod's IP: probes reach the process there."""
        self.pod_label = pod_label
        """``name_namespace(uid)``, as kubelet's back-off message names the pod."""
        self.time_scale = time_scale
        self.mount_retry = mount_retry
        self.report = report


class ContainerRunner:
    """One app container's process, restarts and probes; ``status()`` is its entry in ``containerStatuses``."""

    def __init__(
        self,
        container: Mapping[str, Any],
        start: StartProcess,
        settings: RunnerSettings,
        logs: ContainerLogs,
        changed: Callable[[], None],
    ) -> None:
        self.container = container
        self.name = str(container.get("name", ""))
        self._start = start
        self._settings = settings
        self.logs = logs
        self._changed = changed
        self.state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state: dict[str, Any] | None = None
        self.restart_count = 0
        self.ready = False
        self.started = False
        self.container_id = ""
        self.finished = False
        """Terminated for good (the restart policy does not restart it)."""
        self.exit_code = 0
        self._process: ExecProcess | None = None
        self._stopping = False
        self.task: asyncio.Task[None] | None = None

    @property
    def active(self) -> bool:
        """Whether its process is running (a pod being deleted waits for it)."""
        return self._process is not None and self._process.running

    def begin(self) -> None:
        """Start supervising on the running loop."""
        self.task = asyncio.get_running_loop().create_task(self._supervise())

    def status(self) -> dict[str, Any]:
        """This container's ``containerStatuses`` entry."""
        image = self.container.get("image")
        entry: dict[str, Any] = {
            "name": self.name,
            "image": image,
            "imageID": f"sim://{image}",
            "ready": self.ready,
            "restartCount": self.restart_count,
            "started": self.started,
            "state": self.state,
        }
        if self.container_id:
            entry["containerID"] = self.container_id
        if self.last_state is not None:
            entry["lastState"] = self.last_state
        return entry

    async def stop(self, grace: float) -> None:
        """Stop for good: no more restarts; SIGTERM, SIGKILL after ``grace`` seconds; returns once it exited."""
        self._stopping = True
        process = self._process
        if process is not None:
            self._settings.report("Normal", "Killing", f"Stopping container {self.name}")
            await process.stop(signal.SIGTERM, grace)
        if self.task is not None and not self.task.done():
            if process is None:
                self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self, name, value)
        self._changed()

    async def _supervise(self) -> None:
        while not self._stopping:
            started_at = now_rfc3339()
            try:
                process = await self._start()
            except NotMounted:
                await asyncio.sleep(self._settings.mount_retry)
                continue
            except OSError as exc:
                result, reason = ExecResult(128, f"failed to start container {self.name!r}: {exc}"), "StartError"
            else:
                result, reason = await self._run(process, started_at), ""
            code = result.exit_code if result.exit_code >= 0 else 128 - result.exit_code
            terminated: dict[str, Any] = {
                "exitCode": code,
                "reason": reason or ("Completed" if code == 0 else "Error"),
                "startedAt": started_at,
                "finishedAt": now_rfc3339(),
            }
            if self.container_id:
                terminated["containerID"] = self.container_id
            if code != 0 and result.message:
                terminated["message"] = result.message[-1024:]
            policy = self._settings.policy
            restart = policy == "Always" or (policy == "OnFailure" and code != 0)
            if self._stopping or not restart:
                self._set(state={"terminated": terminated}, ready=False, started=False, finished=True, exit_code=code)
                return
            delay = self._settings.backoff.restart_delay(asyncio.get_running_loop().time())
            self.last_state = {"terminated": terminated}
            if delay > 0:
                message = (
                    f"back-off {go_duration(delay)} restarting failed container={self.name} "
                    f"pod={self._settings.pod_label}"
                )
                self._set(state={"waiting": {"reason": "CrashLoopBackOff", "message": message}}, ready=False)
                self._settings.report(
                    "Warning",
                    "BackOff",
                    f"Back-off restarting failed container {self.name} in pod {self._settings.pod_label}",
                )
                await asyncio.sleep(delay)
            self.restart_count += 1

    async def _run(self, process: ExecProcess, started_at: str) -> ExecResult:
        self._process = process
        ring = self.logs.new_run()
        self._set(
            state={"running": {"startedAt": started_at}},
            container_id=f"grove-sim://{process.pid}",
            started="startupProbe" not in self.container,
            ready=False,
        )
        self._settings.report("Normal", "Started", f"Started container {self.name}")
        probes = asyncio.get_running_loop().create_task(self._probe(process))
        try:
            return await process.wait(ring.append)
        finally:
            ring.close()
            probes.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await probes
            self._process = None

    # ------------------------------------------------------------------------------------------------- probes

    async def _probe(self, process: ExecProcess) -> None:
        startup = self.container.get("startupProbe")
        if startup and not await self._until_verdict(startup, process, stop_on=True):
            await self._kill(process, startup, "startup")
            return
        if startup:
            self._set(started=True)
        await asyncio.gather(self._readiness(process), self._liveness(process))

    async def _readiness(self, process: ExecProcess) -> None:
        probe = self.container.get("readinessProbe")
        if not probe:
            self._set(ready=True)
            return
        state = ProbeState(ProbeTiming.of(probe, self._settings.time_scale))
        await asyncio.sleep(state.timing.initial_delay)
        while True:
            ok = await self._check(probe, process, state.timing, "Readiness")
            if state.record(ok):
                self._set(ready=bool(state.verdict))
            await asyncio.sleep(state.timing.period)

    async def _liveness(self, process: ExecProcess) -> None:
        probe = self.container.get("livenessProbe")
        if probe and not await self._until_verdict(probe, process, stop_on=False):
            await self._kill(process, probe, "liveness")

    async def _kill(self, process: ExecProcess, probe: Mapping[str, Any], which: str) -> None:
        self._settings.report("Normal", "Killing", f"Container {self.name} failed {which} probe, will be restarted")
        value = probe.get("terminationGracePeriodSeconds")
        await process.stop(signal.SIGTERM, float(value) if value is not None else self._settings.grace)

    async def _until_verdict(self, probe: Mapping[str, Any], process: ExecProcess, *, stop_on: bool) -> bool:
        """Probe until the verdict is ``stop_on`` or a failure; returns the last verdict (False: failed)."""
        state = ProbeState(ProbeTiming.of(probe, self._settings.time_scale))
        await asyncio.sleep(state.timing.initial_delay)
        which = "Startup" if stop_on else "Liveness"
        while True:
            state.record(await self._check(probe, process, state.timing, which))
            if state.verdict is False:
                return False
            if stop_on and state.verdict is True:
                return True
            await asyncio.sleep(state.timing.period)

    async def _check(self, probe: Mapping[str, Any], process: ExecProcess, timing: ProbeTiming, which: str) -> bool:
        ok = await check(probe, self.container, self._settings.host, process.env, timing.timeout)
        if not ok:
            self._settings.report("Warning", "Unhealthy", f"{which} probe failed")
        return ok
