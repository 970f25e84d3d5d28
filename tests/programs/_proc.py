"""Run grove-operator and grove-scheduler as real processes and read what they say (JSON log lines on stderr)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROGRAMS = {"grove-operator": "grove_operator.cli", "grove-scheduler": "grove_sched.cli"}
WAIT = 60.0
"""Seconds to wait for a line a healthy program prints within a second or two (a guard, not a measurement)."""


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The test's environment without any Kubernetes configuration, HOME pointing at ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "KUBECONFIG", "POD_NAMESPACE"))}
    env["HOME"] = str(home)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env.pop(key, None)
    env.update(extra)
    return env


def write_kubeconfig(path: Path, server: str) -> Path:
    """A minimal kubeconfig for ``server`` (no credentials: grove-sim needs none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


@dataclass
class Program:
    """A running program and the lines it has written to stderr so far."""

    proc: asyncio.subprocess.Process
    lines: list[str] = field(default_factory=list)

    def events(self, name: str) -> list[dict[str, Any]]:
        """The JSON log entries with ``event == name``."""
        found = []
        for line in self.lines:
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict) and entry.get("event") == name:
                    found.append(entry)
        return found

    async def wait_for(self, check: Callable[[Program], Any]) -> Any:
        """Read stderr until ``check(self)`` is truthy; fails if the program exits first or nothing comes."""
        assert self.proc.stderr is not None
        while not (result := check(self)):
            line = await asyncio.wait_for(self.proc.stderr.readline(), WAIT)
            if not line:
                raise AssertionError(f"the program exited ({await self.proc.wait()}):\n" + "\n".join(self.lines))
            self.lines.append(line.decode(errors="replace").rstrip("\n"))
        return result

    async def event(self, name: str, **match: Any) -> dict[str, Any]:
        """The first log entry ``name`` whose fields include ``match``, waiting for it."""

        def found(program: Program) -> dict[str, Any] | None:
            return next((e for e in program.events(name) if match.items() <= e.items()), None)

        entry: dict[str, Any] = await self.wait_for(found)
        return entry

    async def stop(self) -> int:
        """SIGTERM and wait; the exit code."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(self.proc.communicate(), WAIT)
        assert self.proc.returncode is not None
        return self.proc.returncode


def _webhooks_off_unless_asked(program: str, args: tuple[str, ...]) -> tuple[str, ...]:
    """The operator's admission webhooks (on by default, port 9443) only where a test asks for them, so tests of
    other flags neither bind a fixed port nor wait for webhooks to be ready."""
    if program != "grove-operator" or any(a.startswith(("--webhook", "--no-webhook")) for a in args):
        return args
    return (*args, "--no-webhooks")


async def start(program: str, *args: str, env: dict[str, str]) -> Program:
    """Start ``program`` with stdout discarded and stderr piped (the operator without webhooks unless asked)."""
    args = _webhooks_off_unless_asked(program, args)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", PROGRAMS[program], *args,
        env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    return Program(proc)


@contextlib.asynccontextmanager
async def running(program: str, *args: str, env: dict[str, str]) -> AsyncIterator[Program]:
    """A started program, stopped (and its exit code checked to be 0) on the way out."""
    started = await start(program, *args, env=env)
    try:
        yield started
    finally:
        code = await started.stop()
    assert code == 0, "\n".join(started.lines[-20:])


async def run_to_exit(program: str, *args: str, env: dict[str, str]) -> tuple[int, list[str]]:
    """Run a program that is expected to exit by itself; its exit code and stderr lines."""
    started = await start(program, *args, env=env)
    _, err = await asyncio.wait_for(started.proc.communicate(), WAIT)
    assert started.proc.returncode is not None
    return started.proc.returncode, err.decode(errors="replace").splitlines()
