"""`make demo` leaves nothing behind: whatever stops it, every process it started is gone afterwards, and a plain
run prints no path that it then deletes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo.py"
STARTED = re.compile(r"started (grove-[a-z]+) \(pid (\d+)\)")
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
def demo(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """The demo with --keep, in its own session (signals aimed at it never reach the test)."""
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), "--keep"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(tmp_path),
        start_new_session=True,
    )
    yield proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=WAIT)


def _read_until_all_started(proc: subprocess.Popen[str]) -> dict[str, int]:
    """Read the demo's output until it has started all three programs; their pids."""
    assert proc.stdout is not None
    pids: dict[str, int] = {}
    for line in proc.stdout:
        if match := STARTED.search(line):
            pids[match[1]] = int(match[2])
        if len(pids) == 3:
            return pids
    raise AssertionError(f"the demo exited ({proc.wait()}) before starting all three programs: {pids}")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_demo_stopped_mid_walkthrough_leaves_no_process(demo: subprocess.Popen[str], how: signal.Signals) -> None:
    """Stopped right after its programs started (SIGTERM as `make` passes it on, SIGHUP, Ctrl-C, or SIGKILL,
    which the demo cannot handle), the demo leaves grove-sim, grove-operator and grove-scheduler stopped."""
    pids = _read_until_all_started(demo)
    demo.send_signal(how)
    demo.communicate(timeout=WAIT)
    assert _wait_until_gone(list(pids.values())) == []


def test_plain_demo_prints_no_path_it_deletes(tmp_path: Path) -> None:
    """A plain run finishes, leaves no work directory, and every absolute path it printed still exists."""
    result = subprocess.run(
        [sys.executable, str(DEMO)], capture_output=True, text=True, env=_env(tmp_path), timeout=600, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert list(tmp_path.iterdir()) == []
    assert "Demo finished; every process it started has stopped." in result.stdout
    assert "no pod became Ready before its parents" in result.stdout
    printed = set(re.findall(r"(?<![\w.])(/[\w.\-]+(?:/[\w.\-{},]+)+)", result.stdout + result.stderr))
    assert printed, "the demo printed no path at all (expected at least the CRD folder it applies)"
    assert [path for path in sorted(printed) if not Path(path).exists()] == []
    assert [int(pid) for _, pid in STARTED.findall(result.stdout) if _alive(int(pid))] == []
