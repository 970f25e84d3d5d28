"""`make demo` leaves nothing behind: whatever stops it, every process it started is gone afterwards (grove-sim and
the processes that run the installed Deployments' containers, or with --direct the programs it started itself), and a
plain run prints no path that it then deletes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo.py"
STARTED = re.compile(r"started (grove-[a-z]+) \(pid (\d+)\)")
CONTAINER = re.compile(r"grove-sim://(\d+)")
"""A container's process, as the demo shows the installed pods (containerID grove-sim://<pid>)."""
WAIT = 120.0
"""Seconds allowed for a step that takes a few seconds (a guard against hanging, not a measurement)."""

pytestmark = pytest.mark.slow


def _env(tmp: Path) -> dict[str, str]:
    """The demo's environment; its work directory goes under ``tmp`` (a --keep run leaves it behind on purpose)."""
    env = dict(os.environ, NO_PROXY="127.0.0.1,localhost", TMPDIR=str(tmp))
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "KUBECONFIG"):
        env.pop(key, None)
    return env


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped by its new parent, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_until_gone(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + WAIT
    while (alive := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


@pytest.fixture
def start_demo(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start the demo with --keep and the given flags, in its own session (signals aimed at it never reach the
    test); killed at the end of the test if still running."""
    procs: list[subprocess.Popen[str]] = []

    def start(*flags: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, str(DEMO), "--keep", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=_env(tmp_path),
            start_new_session=True,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=WAIT)


def _pids(output: str) -> list[int]:
    """Every process the demo said it started, and every installed container's process it showed."""
    return [int(pid) for _, pid in STARTED.findall(output)] + [int(pid) for pid in CONTAINER.findall(output)]


def _read_until_all_started(proc: subprocess.Popen[str], direct: bool) -> list[int]:
    """Read the demo's output until grove-sim and Grove run: with --direct the three programs it starts, else the
    four pods of the installed Deployments (two replicas each); their pids."""
    assert proc.stdout is not None
    seen = ""
    for line in proc.stdout:
        seen += line
        programs = {name for name, _ in STARTED.findall(seen)}
        if (direct and len(programs) == 3) or (not direct and len(CONTAINER.findall(seen)) == 4):
            return _pids(seen)
    raise AssertionError(f"the demo exited ({proc.wait()}) before Grove ran:\n{seen}")


@pytest.mark.parametrize(
    ("how", "flags"),
    [(signal.SIGTERM, ()), (signal.SIGKILL, ()), (signal.SIGINT, ("--direct",)), (signal.SIGHUP, ("--direct",))],
    ids=["SIGTERM", "SIGKILL", "SIGINT-direct", "SIGHUP-direct"],
)
def test_demo_stopped_mid_walkthrough_leaves_no_process(
    start_demo: Callable[..., subprocess.Popen[str]], how: signal.Signals, flags: tuple[str, ...]
) -> None:
    """Stopped once Grove runs (SIGTERM as `make` passes it on, SIGKILL, which the demo cannot handle, Ctrl-C or
    SIGHUP), the demo leaves grove-sim and Grove's processes stopped: the installed Deployments' containers, or with
    --direct grove-operator and grove-scheduler. Ctrl-C and SIGHUP take SIGTERM's path through the demo, so they
    run against the quicker --direct start."""
    demo = start_demo(*flags)
    pids = _read_until_all_started(demo, direct="--direct" in flags)
    demo.send_signal(how)
    demo.communicate(timeout=WAIT)
    assert _wait_until_gone(pids) == []


def test_plain_demo_prints_no_path_it_deletes(tmp_path: Path) -> None:
    """A plain run installs Grove with kubectl apply -k, shows the troubleshooting commands working, finishes, leaves
    no work directory and no process, and every absolute path it printed still exists."""
    result = subprocess.run(
        [sys.executable, str(DEMO)], capture_output=True, text=True, env=_env(tmp_path), timeout=600, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert list(tmp_path.iterdir()) == []
    assert "Demo finished; every process it started has stopped." in result.stdout
    assert "no pod became Ready before its parents" in result.stdout
    assert "$ kubectl apply -k " in result.stdout
    logs = re.search(r"\$ kubectl logs -n grove-system deployment/grove-scheduler.*\n(.*)", result.stdout)
    assert logs
    assert '"event": ' in logs[1], "kubectl logs deployment/grove-scheduler shows its JSON log"
    assert "svc/grove-scheduler-metrics" in result.stdout
    assert re.search(r"pods bound by grove-scheduler: [1-9]", result.stdout), "metrics through kubectl port-forward"
    printed = set(re.findall(r"(?<![\w.])(/[\w.\-]+(?:/[\w.\-{},]+)+)", result.stdout + result.stderr))
    assert printed, "the demo printed no path at all (expected at least the overlay it applies)"
    assert [path for path in sorted(printed) if not Path(path).exists()] == []
    assert len(CONTAINER.findall(result.stdout)) == 4
    assert [pid for pid in _pids(result.stdout) if _alive(pid)] == []
