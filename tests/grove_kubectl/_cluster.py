"""Helpers of the plugin tests: paths, the kubectl runner type and a guarded poll."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXAMPLES = ROOT / "examples" / "first-api"
KUBECTL = "/usr/bin/kubectl"
WAIT = 90.0
Run = Callable[..., subprocess.CompletedProcess[str]]


def wait_until(check: Callable[[], object], what: str) -> object:
    """Poll `check` until it returns something truthy; the deadline only guards against a hang."""
    deadline = time.monotonic() + WAIT
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
