"""grove-sim as a separate OS process for the throughput benchmark: start, wait for readiness, read RSS, stop.

The load generator must not share a CPU time slice (or a GIL) with the server it measures, so the benchmark runs
``grove-sim up`` as a child process, optionally under ``cProfile`` to name the server's hot spots. Readiness is the
kubeconfig file appearing (the CLI writes it only once it listens). The child is always stopped with SIGTERM (so
cProfile can write its output) and killed if it does not exit in time. The ``grove-initc`` image runs as the
installed ``grove-initc`` (``--exec-image``), so pods that start after others are held as in a real cluster.
"""

from __future__ import annotations

import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from grove_sim.testing import console_script

__all__ = ["SimProcess", "SimStartError", "cpu_seconds", "profile_hotspots", "read_kubeconfig", "rss_mib"]


class SimStartError(RuntimeError):
    """grove-sim exited or did not write its kubeconfig in time."""


def rss_mib(pid: int) -> float:
    """Resident set size of a process in MiB, from ``/proc/<pid>/status`` (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used, from ``/proc/<pid>/stat`` (clock-tick resolution).

    On a shared machine wall-clock rates move with everyone else's load; CPU seconds per request do not, so the
    benchmark reports both.
    """
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_kubeconfig(path: Path) -> tuple[str, str | None]:
    """The server URL and bearer token (if any) of the current context of a kubeconfig file."""
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    current = doc.get("current-context")
    contexts = {c["name"]: c["context"] for c in doc.get("contexts") or []}
    context = contexts.get(current) if current else next(iter(contexts.values()), None)
    clusters = {c["name"]: c["cluster"] for c in doc["clusters"]}
    users = {u["name"]: u.get("user") or {} for u in doc.get("users") or []}
    cluster = clusters[context["cluster"]] if context else next(iter(clusters.values()))
    user = users.get(context.get("user", ""), {}) if context else {}
    return str(cluster["server"]), user.get("token")


def profile_hotspots(path: Path, top: int = 25) -> list[dict[str, Any]]:
    """The server functions with the most own time in a cProfile output file, heaviest first."""
    stats = pstats.Stats(str(path))
    rows: list[dict[str, Any]] = []
    table: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    for (filename, line, func), (_prim, calls, own, cumulative, _callers) in table.items():
        rows.append(
            {
                "function": f"{func} ({Path(filename).name}:{line})",
                "file": filename,
                "calls": calls,
                "tottime_s": round(own, 3),
                "cumtime_s": round(cumulative, 3),
            }
        )
    rows.sort(key=lambda row: row["tottime_s"], reverse=True)
    return rows[:top]


class SimProcess:
    """``grove-sim up`` in a child process; a context manager that always stops it."""

    def __init__(
        self,
        nodes: int,
        *,
        gpus_per_node: int = 8,
        topology: str = "block=10,rack=5",
        profile_out: Path | None = None,
        start_timeout: float = 120.0,
        ready_delay: float = 0.0,
        exec_images: Mapping[str, str] | None = None,
    ) -> None:
        self.nodes = nodes
        self.ready_delay = ready_delay
        self.exec_images = (
            dict(exec_images) if exec_images is not None else {"grove-initc": console_script("grove-initc")}
        )
        self.gpus_per_node = gpus_per_node
        self.topology = topology
        self.profile_out = profile_out
        self.start_timeout = start_timeout
        self.url = ""
        self.token: str | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.kubeconfig = Path()

    @property
    def pid(self) -> int:
        """The server's process id (the cProfile wrapper runs in the same process)."""
        if self._proc is None:
            raise RuntimeError("grove-sim is not running")
        return self._proc.pid

    def command(self) -> list[str]:
        """The exact command line used to start the server."""
        prefix = [sys.executable]
        if self.profile_out is not None:
            prefix += ["-m", "cProfile", "-o", str(self.profile_out)]
        return [
            *prefix,
            "-m",
            "grove_sim.cli",
            "up",
            "--kubeconfig",
            str(self.kubeconfig),
            "--port",
            "0",
            "--nodes",
            str(self.nodes),
            "--gpus-per-node",
            str(self.gpus_per_node),
            "--topology",
            self.topology,
            "--ready-delay",
            str(self.ready_delay),
            *(arg for prefix, command in self.exec_images.items() for arg in ("--exec-image", f"{prefix}={command}")),
            "--log-level",
            "WARNING",
        ]

    def start(self) -> SimProcess:
        """Start the child and wait for its kubeconfig; raises ``SimStartError`` if it fails to come up."""
        self._tmp = tempfile.TemporaryDirectory(prefix="grove-sim-bench-")
        self.kubeconfig = Path(self._tmp.name) / "kubeconfig"
        self._proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        while not self.kubeconfig.exists():
            if self._proc.poll() is not None:
                self.stop()
                raise SimStartError(f"grove-sim exited with status {self._proc.returncode} before it was ready")
            if time.monotonic() > deadline:
                self.stop()
                raise SimStartError(f"grove-sim did not write its kubeconfig within {self.start_timeout:.0f} s")
            time.sleep(0.05)
        self.url, self.token = read_kubeconfig(self.kubeconfig)
        return self

    def rss_mib(self) -> float:
        """The server's current RSS in MiB."""
        return rss_mib(self.pid)

    def cpu_seconds(self) -> float:
        """CPU seconds the server has used so far."""
        return cpu_seconds(self.pid)

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM the child (cProfile then writes its file), SIGKILL it after ``timeout``; idempotent."""
        proc, self._proc = self._proc, None
        code: int | None = None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        return code

    def __enter__(self) -> SimProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
