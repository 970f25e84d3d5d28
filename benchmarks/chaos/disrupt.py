"""Disruptions: grove-sim's fault document, and SIGKILL / SIGSTOP of grove-operator and grove-scheduler replicas.

The fault document keeps about 5% of the programs' API requests failing (500, 503, 429, 409 in equal shares), a
share delayed, watches cut and re-watches expired, with the observer's account exempt; now and then the whole
server pauses for a moment. The `Supervisor` plays a Deployment: every replica that exits is started again. The
`Disruptor` picks a program at random moments and SIGKILLs or SIGSTOPs its leader (the Lease's holder; a replica
at random when none holds it), resuming a frozen one after it has lost its lease; each disruption is survived once
a live replica holds the Lease again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.e2e.procs import Child
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import LEASES

__all__ = ["Disruptor", "Program", "Supervisor", "fault_document", "put_faults", "sim_fault_counters"]

ERROR_CODES = (500, 503, 429, 409)


def fault_document(seed: int, exempt: list[str], *, error_rate: float = 0.05, paused: bool = False) -> dict[str, Any]:
    """The chaos fault configuration: `error_rate` of requests failing, split evenly over the four codes."""
    share = 1 - (1 - error_rate) ** (1 / len(ERROR_CODES))  # the rules draw one after the other
    return {
        "seed": seed,
        "exemptUsers": exempt,
        "errors": [
            {"code": code, "rate": round(share, 5), **({"retryAfterSeconds": 1} if code == 429 else {})}
            for code in ERROR_CODES
        ],
        "latency": {"seconds": 0.05, "rate": 0.05},
        "dropWatches": {"rate": 0.3, "afterSeconds": 20.0},
        "expireRewatches": {"rate": 0.3},
        "paused": paused,
    }


def _sim_request(url: str, token: str | None, method: str, path: str, body: Any = None) -> bytes:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        return bytes(response.read())


def put_faults(url: str, token: str | None, doc: dict[str, Any] | None) -> None:
    """Put a fault configuration in force (`None`: none)."""
    _sim_request(url, token, "DELETE" if doc is None else "PUT", "/sim/faults", doc)


def sim_fault_counters(url: str, token: str | None) -> dict[str, int]:
    """`grove_sim_injected_faults_total` summed by kind."""
    totals: Counter[str] = Counter()
    for line in _sim_request(url, token, "GET", "/metrics").decode().splitlines():
        if line.startswith("grove_sim_injected_faults_total{"):
            kind = line.split('kind="', 1)[1].split('"', 1)[0]
            totals[kind] += int(float(line.rsplit(" ", 1)[1]))
    return dict(totals)


@dataclass
class Program:
    """One program's replicas (`Child` processes started from the same arguments) and its Lease."""

    name: str
    lease: str
    make: Any  # (replica name) -> Child
    replicas: int
    children: list[Child] = field(default_factory=list)
    starts: int = 0
    peak_rss_mib: float = 0.0

    def start(self) -> None:
        """Start every replica."""
        self.children = [self._spawn(i) for i in range(self.replicas)]

    def _spawn(self, index: int) -> Child:
        self.starts += 1
        child: Child = self.make(f"{self.name}-{index}-{self.starts}")
        return child.start()

    def restart_exited(self) -> int:
        """Start again every replica that exited; returns how many."""
        restarted = 0
        for index, child in enumerate(self.children):
            if not child.alive():
                child.stop()
                self.children[index] = self._spawn(index)
                restarted += 1
        return restarted

    def sample_memory(self) -> None:
        """Keep the highest resident memory seen of any replica."""
        for child in self.children:
            if child.alive():  # it may exit between the two calls: then both figures are NaN
                self.peak_rss_mib = max([self.peak_rss_mib, *(v for v in child.memory() if v == v)])

    def by_pid(self, pid: int) -> Child | None:
        """The replica with that process id."""
        return next((c for c in self.children if c.proc is not None and c.proc.pid == pid), None)

    def stop(self) -> None:
        """Stop every replica (resuming a frozen one first)."""
        for child in self.children:
            if child.proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.proc.pid, signal.SIGCONT)
            child.stop()


@dataclass
class Supervisor:
    """Restarts exited replicas every `period` seconds, and samples memory."""

    programs: list[Program]
    period: float = 0.5
    restarts: int = 0

    async def run(self) -> None:
        """Until cancelled."""
        while True:
            for program in self.programs:
                self.restarts += program.restart_exited()
                program.sample_memory()
            await asyncio.sleep(self.period)


@dataclass
class Disruptor:
    """Kills and freezes the leaders of `programs` at random moments (kill and freeze alternating, the programs in
    turn); `record` lists each disruption."""

    client: KubeClient
    programs: list[Program]
    lease_namespace: str
    rng: random.Random
    lease_duration: float
    interval: tuple[float, float] = (6.0, 14.0)
    record: list[dict[str, Any]] = field(default_factory=list)
    frozen: set[int] = field(default_factory=set)

    async def leader(self, program: Program) -> Child | None:
        """The replica holding the program's Lease, if a live one does."""
        try:
            lease = await self.client.get(LEASES, program.lease, self.lease_namespace)
        except errors.ApiError:
            return None
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        pid = holder.rsplit("-", 1)[-1]
        return program.by_pid(int(pid)) if pid.isdigit() else None

    async def disrupt_once(self) -> None:
        """SIGKILL or SIGSTOP one program's leader, then wait until a live replica leads again."""
        turn = len(self.record)  # kill, freeze, each program in turn: every combination within four
        program = self.programs[(turn // 2) % len(self.programs)]
        action = ("kill", "freeze")[turn % 2]
        target = await self.leader(program) or self.rng.choice(program.children)
        if target.proc is None or not target.alive():
            return
        pid, start = target.proc.pid, time.monotonic()
        entry: dict[str, Any] = {"program": program.name, "action": action, "pid": pid, "at": round(time.time(), 1)}
        self.record.append(entry)
        if action == "kill":
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        else:
            self.frozen.add(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
            await asyncio.sleep(self.lease_duration + 2.0)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
            self.frozen.discard(pid)
        while time.monotonic() - start < self.lease_duration * 20:
            leader = await self.leader(program)
            if leader is not None and leader.alive() and (action == "freeze" or leader.proc is None
                                                          or leader.proc.pid != pid):  # fmt: skip
                entry["new_leader_s"] = round(time.monotonic() - start, 1)
                entry["survived"] = True
                return
            await asyncio.sleep(0.5)
        entry["survived"] = False

    async def run(self, stop: asyncio.Event) -> None:
        """Disrupt at random intervals until `stop` is set."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.rng.uniform(*self.interval))
            if not stop.is_set():
                await self.disrupt_once()

    def done(self, count: int) -> bool:
        """Whether at least `count` disruptions are over (survived or not)."""
        return sum(1 for entry in self.record if "survived" in entry) >= count

    def resume_all(self) -> None:
        """SIGCONT whatever is still frozen."""
        for pid in list(self.frozen):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        self.frozen.clear()


def write_kubeconfig(source: Path, target: Path, token: str) -> Path:
    """A copy of a kubeconfig whose user authenticates with `token`."""
    import yaml

    doc = yaml.safe_load(source.read_text())
    for user in doc.get("users") or []:
        user["user"] = {"token": token}
    target.write_text(yaml.safe_dump(doc))
    return target
