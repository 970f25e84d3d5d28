"""``grove-sim up`` as a process: writes its kubeconfig when ready, serves, exits cleanly on SIGTERM."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from grove_sim.cli import GC_THRESHOLD, build_parser, options, tune_gc
from grove_sim.overlay import IMAGE, overlay_env, overlay_flags, programs_dir


def test_up_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    """The kubeconfig points at a live server with the requested nodes; SIGTERM ends the process with status 0."""
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "grove_sim.cli",
            "up",
            "--kubeconfig",
            str(kubeconfig),
            "--nodes",
            "3",
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(300):
            if kubeconfig.exists():
                break
            time.sleep(0.05)
        url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        with urllib.request.urlopen(f"{url}/api/v1/nodes") as resp:
            nodes = json.loads(resp.read())
        assert [n["metadata"]["name"] for n in nodes["items"]] == ["node-0", "node-1", "node-2"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert "grove-sim ready" in out


def test_tune_gc_freezes_start_up_objects_and_raises_thresholds() -> None:
    """``grove-sim up`` moves start-up objects out of the collector's reach and collects far less often."""
    before = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLD
        assert GC_THRESHOLD[0] > before[0]
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
    assert gc.get_freeze_count() == 0


def test_up_with_rbac_and_faults_from_the_command_line(tmp_path: Path) -> None:
    """``--authorization-mode RBAC`` refuses an anonymous list (kube-apiserver's 403) while the admin token lists;
    ``--faults`` is in force from the first request; a bad fault document is a usage error naming the field."""
    kubeconfig = tmp_path / "kc"
    faults = json.dumps({"seed": 1, "errors": [{"code": 503, "rate": 1.0, "resources": ["nodes"]}]})
    command = [sys.executable, "-m", "grove_sim.cli", "up", "--kubeconfig", str(kubeconfig), "--log-level", "WARNING"]
    proc = subprocess.Popen(
        [*command, "--authorization-mode", "RBAC", "--faults", faults], stdout=subprocess.PIPE, text=True
    )
    try:
        for _ in range(300):
            if kubeconfig.exists():
                break
            time.sleep(0.05)
        config = yaml.safe_load(kubeconfig.read_text())
        url, token = config["clusters"][0]["cluster"]["server"], config["users"][0]["user"]["token"]
        codes = []
        for path, headers in (
            ("/api/v1/namespaces", {}),
            ("/api/v1/namespaces", {"Authorization": f"Bearer {token}"}),
            ("/api/v1/nodes", {"Authorization": f"Bearer {token}"}),
        ):
            try:
                with urllib.request.urlopen(urllib.request.Request(url + path, headers=headers)) as resp:
                    codes.append(resp.status)
            except urllib.error.HTTPError as exc:
                codes.append(exc.code)
        assert codes == [403, 200, 503]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert proc.returncode == 0
    bad = subprocess.run([*command, "--faults", '{"errors": [{"code": 200}]}'], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "invalid fault configuration: errors[0].code: must be one of 409, 429, 500, 503" in bad.stderr


def test_exec_image_takes_a_prefix_with_or_without_a_command_and_tls_is_a_flag(tmp_path: Path) -> None:
    """``--exec-image PREFIX`` (containers must set ``command``) and ``PREFIX=COMMAND``; an empty prefix or an
    empty command after ``=`` is refused."""
    parser = build_parser()
    args = parser.parse_args(["up", "--kubeconfig", str(tmp_path / "kc"), "--exec-image", "ghcr.io/me/",
                              "--exec-image", "grove-initc=grove-initc --verbose", "--tls"])  # fmt: skip
    assert args.exec_image == [("ghcr.io/me/", ""), ("grove-initc", "grove-initc --verbose")]
    assert args.tls is True
    for bad in ("=cmd", "prefix=", "prefix=  "):
        with pytest.raises(SystemExit):
            parser.parse_args(["up", "--kubeconfig", str(tmp_path / "kc"), "--exec-image", bad])


def test_options_for_the_sim_overlay_are_what_grove_sim_up_runs_with() -> None:
    """The flags `make demo` passes to `grove-sim up` for deploy/overlays/sim give an embedded server the same setup:
    RBAC, TLS, the default scheduler, the image grove mapped to grove-initc, and the programs first on PATH."""
    sim = options(["--nodes", "2", *overlay_flags()])
    assert (sim.authorization_mode, sim.tls, sim.default_scheduler) == ("RBAC", True, True)
    assert sim.exec_images == {IMAGE: str(programs_dir() / "grove-initc")}
    assert len(sim.nodes) == 2
    assert overlay_env({"PATH": "/usr/bin"})["PATH"].split(os.pathsep) == [str(programs_dir()), "/usr/bin"]
