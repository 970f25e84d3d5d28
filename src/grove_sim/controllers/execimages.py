"""Executable images: run an init container for real as a local subprocess.

A simulated kubelet cannot pull images, but some init containers matter to the behaviour under test (Grove's
``grove-initc`` holds a pod until its parents are Ready). An "executable images" mapping (image prefix → local
command line, from ``grove-sim up --exec-image PREFIX=COMMAND`` or the Python API) names such images. The matched
command runs with the container's ``args`` appended and this environment:

- the container's ``env`` entries with ``value`` or a downward-API ``fieldRef`` resolved;
- ``KUBECONFIG``: a kubeconfig for this simulated server;
- ``GROVE_SIM_POD_INFO_DIR``: a temp dir holding one sub-directory per downward-API volume of the pod, with the
  volume's files materialised (e.g. ``<dir>/podinfo/labels``);
- ``GROVE_SIM_MOUNT_<VOLUME>`` (volume name upper-cased, ``-`` and ``.`` as ``_``): the local directory that stands
  in for that volume's ``mountPath``, and ``GROVE_SIM_MOUNTS``: a JSON map ``{mountPath: local dir}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["ExecResult", "match_exec_image", "resolve_field_ref", "run_container"]

_LABEL_REF = re.compile(r"metadata\.(labels|annotations)\['([^']*)'\]\Z")


def match_exec_image(mapping: Mapping[str, str], image: str) -> str | None:
    """The command for ``image`` (longest matching prefix wins) or None."""
    best = None
    for prefix in sorted(mapping, key=len, reverse=True):
        if image.startswith(prefix):
            best = mapping[prefix]
            break
    return best


def resolve_field_ref(pod: Mapping[str, Any], path: str) -> str:
    """A downward-API ``fieldRef.fieldPath`` value of ``pod`` ("" when unset)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    match = _LABEL_REF.match(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
    }
    return str(simple.get(path) or "")


class ExecResult:
    """How a run ended: exit code and the tail of its output (the termination message)."""

    def __init__(self, exit_code: int, message: str) -> None:
        self.exit_code = exit_code
        self.message = message


def _volume_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def _materialise(pod: Mapping[str, Any], root: Path) -> dict[str, Path]:
    dirs: dict[str, Path] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        downward = volume.get("downwardAPI")
        if not isinstance(downward, dict):
            continue
        target = root / str(volume.get("name"))
        target.mkdir(parents=True, exist_ok=True)
        for item in downward.get("items") or []:
            ref = (item.get("fieldRef") or {}).get("fieldPath")
            if ref and item.get("path"):
                path = target / str(item["path"])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(resolve_field_ref(pod, ref), encoding="utf-8")
        dirs[str(volume.get("name"))] = target
    return dirs


async def run_container(
    command: str, pod: Mapping[str, Any], container: Mapping[str, Any], kubeconfig: str | None
) -> ExecResult:
    """Run ``command`` (plus the container's args) for ``container`` of ``pod`` and wait for it to exit."""
    with tempfile.TemporaryDirectory(prefix="grove-sim-pod-") as tmp:
        root = Path(tmp)
        volumes = _materialise(pod, root)
        env = dict(os.environ)
        for entry in container.get("env") or []:
            name = entry.get("name")
            if not name:
                continue
            if "value" in entry:
                env[name] = str(entry["value"])
            elif (entry.get("valueFrom") or {}).get("fieldRef"):
                env[name] = resolve_field_ref(pod, entry["valueFrom"]["fieldRef"].get("fieldPath", ""))
        mounts: dict[str, str] = {}
        for mount in container.get("volumeMounts") or []:
            local = volumes.get(str(mount.get("name")))
            if local is not None:
                env[f"GROVE_SIM_MOUNT_{_volume_name(str(mount.get('name')))}"] = str(local)
                mounts[str(mount.get("mountPath"))] = str(local)
        env["GROVE_SIM_POD_INFO_DIR"] = str(root)
        env["GROVE_SIM_MOUNTS"] = json.dumps(mounts)
        if kubeconfig:
            env["KUBECONFIG"] = kubeconfig
        argv = shlex.split(command) + [str(a) for a in container.get("args") or []]
        proc = await asyncio.create_subprocess_exec(
            *argv, env=env, cwd=tmp, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        try:
            output, _ = await proc.communicate()
        except asyncio.CancelledError:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
        text = output.decode(errors="replace")
        return ExecResult(proc.returncode if proc.returncode is not None else -1, text[-4096:])
