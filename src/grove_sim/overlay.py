"""grove-sim ready for ``kubectl apply -k deploy/overlays/sim``: the one definition `make demo` and tests/deploy share.

The sim overlay installs Grove as a user does (Deployments of the image ``grove:dev``, RBAC for each component,
webhooks behind a Service). For that grove-sim must run those containers as local processes (``--exec-image
grove=<grove-initc>``: a container that names a ``command`` runs that program from PATH, the operator's init
container, which names none, the image's entry point grove-initc), authorize with RBAC (a verb missing from a role
fails as on a real cluster), serve HTTPS (kubectl sends a bearer token only over TLS) and bind the Deployments' pods
with its default scheduler. The programs are the ones installed beside this interpreter, found on PATH as in the
image.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["IMAGE", "overlay_env", "overlay_flags", "programs_dir"]

IMAGE = "grove"
"""The image (prefix) of the sim overlay's containers, ``grove:dev``."""


def programs_dir() -> Path:
    """Where this environment's console scripts are (``.venv/bin``)."""
    return Path(sys.executable).parent


def overlay_flags() -> list[str]:
    """The ``grove-sim up`` flags (also parsed into ``SimOptions`` by ``grove_sim.cli.options``) for the overlay."""
    initc = programs_dir() / "grove-initc"
    if not initc.is_file():
        raise FileNotFoundError(f"{initc} is not installed (make venv installs the console scripts)")
    return [
        *("--exec-image", f"{IMAGE}={initc}"),
        *("--authorization-mode", "RBAC"),
        "--tls",
        "--default-scheduler",
    ]


def overlay_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the programs first on PATH, for the grove-sim that runs the containers."""
    path = env.get("PATH", "")
    return {**env, "PATH": f"{programs_dir()}{os.pathsep}{path}" if path else str(programs_dir())}
