"""grove-operator and grove-scheduler as child processes, with their readiness, memory and Prometheus metrics.

Each program runs as `python -m <package>.cli` in its own session with its log in a work folder (kept when a run
fails, so the log can be read). Readiness is the program's own `/readyz`, on a port chosen here so it is known.
grove-sim itself is `benchmarks.sim_throughput_proc.SimProcess`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Child", "cpu_seconds", "free_port", "memory_mib", "parse_metrics"]


def free_port() -> int:
    """A free loopback TCP port (the tiny race with another binder is acceptable for a benchmark)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def memory_mib(pid: int) -> tuple[float, float]:
    """(current VmRSS, peak VmHWM) of a process in MiB; NaN when the process is gone."""
    values = {"VmRSS:": float("nan"), "VmHWM:": float("nan")}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key = line.split(maxsplit=1)[0] if line else ""
            if key in values:
                values[key] = int(line.split()[1]) / 1024
    return values["VmRSS:"], values["VmHWM:"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (`/proc/<pid>/stat`); NaN when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text exposition as `{sample name{labels}: value}` (labels sorted, `le` included); a counter
    labelled only by `scheduler_name` (`pods_bound_total`) also appears under its bare name, summed."""
    out: dict[str, float] = {}
    sums: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{key}="{value}"' for key, value in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}" if labels else sample.name] = float(sample.value)
            if set(sample.labels) == {"scheduler_name"}:
                sums[sample.name] = sums.get(sample.name, 0.0) + float(sample.value)
    return {**sums, **out}


@dataclass
class Child:
    """One program (`python -m module ...`) in a child process; `stop()` is idempotent."""

    name: str
    argv: Sequence[str]
    logdir: Path
    port: int
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def log(self) -> Path:
        """The program's combined stdout/stderr."""
        return self.logdir / f"{self.name}.log"

    @property
    def pid(self) -> int:
        """The child's process id."""
        if self.proc is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.proc.pid

    def start(self) -> Child:
        """Start the program with `sys.executable`, output to its log."""
        with self.log.open("wb") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, *self.argv], stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    def alive(self) -> bool:
        """Whether the child is still running."""
        return self.proc is not None and self.proc.poll() is None

    def get(self, path: str, timeout: float = 5.0) -> str:
        """GET a path of the program's HTTP endpoint (`/readyz`, `/metrics`)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as response:
            return str(response.read().decode())

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Poll `/readyz` until it answers 200; raises if the child dies or the time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                code = self.proc.returncode if self.proc is not None else None
                raise RuntimeError(f"{self.name} exited with status {code}; log: {self.log}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                self.get("/readyz", timeout=2.0)
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not ready within {timeout:.0f} s; log: {self.log}")
            time.sleep(0.1)

    def metrics(self) -> dict[str, float]:
        """The program's current `/metrics`, parsed."""
        return parse_metrics(self.get("/metrics"))

    def memory(self) -> tuple[float, float]:
        """(current, peak) resident memory in MiB."""
        return memory_mib(self.pid) if self.proc is not None else (float("nan"), float("nan"))

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM the child's session, SIGKILL it after `timeout`."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return proc.wait()


def _profiled(profile_out: Path | None) -> list[str]:
    return [] if profile_out is None else ["-m", "cProfile", "-o", str(profile_out)]


def operator(kubeconfig: Path, namespace: str, logdir: Path, profile_out: Path | None = None) -> Child:
    """grove-operator watching only the benchmark namespace, no leader election (optionally under cProfile)."""
    port = free_port()
    argv = [
        *_profiled(profile_out), "-m", "grove_operator.cli", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
        "--namespace", namespace, "--health-port", str(port), "--metrics-port", "0", "--log-level", "WARNING",
        "--webhook-port", "0", "--webhook-namespace", namespace,
    ]  # fmt: skip
    return Child("grove-operator", argv, logdir, port)


def scheduler(kubeconfig: Path, logdir: Path, profile_out: Path | None = None) -> Child:
    """grove-scheduler with a known metrics port (`/readyz`, `/metrics`), no leader election (optionally profiled)."""
    port = free_port()
    argv = [
        *_profiled(profile_out), "-m", "grove_sched.cli", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
        "--metrics-port", str(port), "--log-level", "WARNING",
    ]  # fmt: skip
    return Child("grove-scheduler", argv, logdir, port)
