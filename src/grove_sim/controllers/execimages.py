"""Executable images: run a container for real as a local subprocess.

A simulated kubelet cannot pull images, but some containers matter to the behaviour under test (Grove's
``grove-initc`` holds a pod until its parents are Ready; a Deployment of a local program serves HTTP). An
"executable images" mapping (image prefix → local command line, from ``grove-sim up --exec-image PREFIX[=COMMAND]``
or the Python API) names such images. The process runs the container's ``command`` + ``args`` looked up on
grove-sim's PATH, as an image's entry point would be, or, when the container sets no command, COMMAND + ``args``
(a prefix mapped to no COMMAND requires the container to set ``command``); ``$(VAR)`` references in the command
and arguments are expanded from the environment as a kubelet does. Its environment:

- ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT`` (the API server), ``HOSTNAME`` (the pod's name, as a
  kubelet sets the pod's hostname), ``POD_NAME``, ``POD_NAMESPACE``, ``POD_IP``;
- the container's ``env`` entries with ``value`` or a downward-API ``fieldRef``/``resourceFieldRef`` resolved;
- ``KUBECONFIG``: a kubeconfig of its own for this simulated server (with grove-sim's CA when it serves HTTPS),
  carrying the token the container would find in its service-account volume (never the administrator's
  credentials), or no credentials at all;
- ``GROVE_SIM_POD_INFO_DIR``: a temp dir holding one sub-directory per downward-API or Secret volume of the pod,
  with the volume's files materialised (e.g. ``<dir>/podinfo/labels``);
- ``TMPDIR`` (unless the container sets it): its ``/tmp``, the volume mounted there or a directory of its own, so
  what the program leaves in its temp directory (a client's CA file, when SIGKILL ends it) goes with the container
  instead of piling up in grove-sim's temp directory;
- ``GROVE_SIM_MOUNT_<VOLUME>`` (volume name upper-cased, ``-`` and ``.`` as ``_``): the local directory that stands
  in for that volume's ``mountPath``, and ``GROVE_SIM_MOUNTS``: a JSON map ``{mountPath: local dir}``.

The process lives in grove-sim's process group and, on Linux, is killed if grove-sim dies, so a killed simulator
leaves no container behind. Its output goes to a sink (the container's log ring) and its tail becomes the
termination message.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import re
import shlex
import signal
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import ceil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from grove_sim.machinery.kubeconfig import kubeconfig_document
from grove_sim.machinery.quantity import QuantityError, parse_quantity

__all__ = [
    "ExecProcess",
    "ExecResult",
    "NoCommand",
    "PodRuntime",
    "container_argv",
    "expand",
    "match_exec_image",
    "resolve_field_ref",
    "resolve_resource_ref",
    "start_container",
]

OUTPUT_TAIL = 4096
"""Bytes of a process's output kept: the tail becomes the termination message."""

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
        "status.podIPs": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
    }
    return str(simple.get(path) or "")


class NoCommand(OSError):
    """The image is mapped to no command and the container sets none (kubelet's ``StartError``)."""


def container_argv(command: str, container: Mapping[str, Any]) -> list[str]:
    """The argv of ``container``: its ``command`` + ``args`` (looked up on PATH by the exec), else the mapped
    ``command`` line + ``args``; raises :class:`NoCommand` when neither names a program."""
    args = [str(a) for a in container.get("args") or []]
    own = [str(c) for c in container.get("command") or []]
    if own:
        return own + args
    mapped = shlex.split(command)
    if not mapped:
        raise NoCommand(f"no command specified: image {container.get('image')!r} has no entry point mapped")
    return mapped + args


def resolve_resource_ref(pod: Mapping[str, Any], container: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
    """A downward-API ``resourceFieldRef`` value: the container's request or limit divided by ``divisor``, rounded
    up as kubelet does ("0" when unset; a real kubelet would use the node's allocatable for an unset limit)."""
    name = ref.get("containerName") or container.get("name")
    target = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == name), container)
    kind, _, resource = str(ref.get("resource", "")).partition(".")
    value = ((target.get("resources") or {}).get(kind) or {}).get(resource)
    try:
        amount = parse_quantity(value) if value is not None else Fraction(0)
        divisor = parse_quantity(ref.get("divisor") or "1") or Fraction(1)
    except QuantityError:
        return "0"
    return str(ceil(amount / divisor))


_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion of a command or argument: a defined variable is replaced, ``$$`` is a
    literal ``$``, anything else is left as written (kubelet's ``expansion.Expand``)."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        return env.get(name, match.group(0))

    return _REFERENCE.sub(replace, text)


class ExecResult:
    """How a run ended: exit code (negative: killed by that signal) and the tail of its output."""

    def __init__(self, exit_code: int, message: str) -> None:
        self.exit_code = exit_code
        self.message = message


def _volume_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def _materialise(pod: Mapping[str, Any], root: Path, secrets: Mapping[str, Mapping[str, bytes]]) -> dict[str, Path]:
    dirs: dict[str, Path] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = str(volume.get("name"))
        downward = volume.get("downwardAPI")
        if isinstance(downward, dict):
            target = root / name
            target.mkdir(parents=True, exist_ok=True)
            for item in downward.get("items") or []:
                ref = (item.get("fieldRef") or {}).get("fieldPath")
                if ref and item.get("path"):
                    path = target / str(item["path"])
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(resolve_field_ref(pod, ref), encoding="utf-8")
            dirs[name] = target
        elif name in secrets:
            target = root / name
            target.mkdir(parents=True, exist_ok=True)
            for file, content in secrets[name].items():
                (target / file).write_bytes(content)
            dirs[name] = target
    return dirs


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook asking the kernel to SIGKILL the child when grove-sim dies (Linux); None elsewhere.

    The libc function is looked up here, before any fork, so the hook itself only makes one system call.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def hook() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGKILL))

    return hook


_PRE_EXEC = _die_with_parent()


class ExecProcess:
    """A running executable-image container: its pid, SIGTERM/SIGKILL, and how it ended (files removed then)."""

    def __init__(
        self, proc: asyncio.subprocess.Process, tmp: tempfile.TemporaryDirectory[str], env: Mapping[str, str]
    ) -> None:
        self._proc = proc
        self._tmp = tmp
        self.env = dict(env)
        """The environment it runs with (exec probes run with it too)."""

    @property
    def pid(self) -> int:
        """The process id (grove-sim reports it as the container ID)."""
        return self._proc.pid

    @property
    def running(self) -> bool:
        """Whether the process has not exited yet."""
        return self._proc.returncode is None

    def send(self, sig: int) -> None:
        """Send ``sig`` unless the process has exited."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(sig)

    async def stop(self, sig: int, grace: float) -> None:
        """Send ``sig`` (SIGTERM), then SIGKILL if the process is still running ``grace`` seconds later."""
        self.send(sig)
        try:
            await asyncio.wait_for(asyncio.shield(self._proc.wait()), grace)
        except TimeoutError:
            self.send(signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                await self._proc.wait()

    async def wait(self, sink: Callable[[bytes], None] | None = None) -> ExecResult:
        """Wait for the exit, passing output to ``sink`` and keeping its tail; cancelled, the process is killed."""
        tail = b""
        try:
            assert self._proc.stdout is not None
            while chunk := await self._proc.stdout.read(65536):
                tail = (tail + chunk)[-OUTPUT_TAIL:]
                if sink is not None:
                    sink(chunk)
            code = await self._proc.wait()
        except asyncio.CancelledError:
            self.send(signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                await self._proc.wait()
            raise
        finally:
            self._tmp.cleanup()
        return ExecResult(code, tail.decode(errors="replace"))


@dataclass(frozen=True, slots=True)
class PodRuntime:
    """What the kubelet gives a pod's processes: the API server to reach, its CA, the pod's IP and token."""

    server_url: str
    token: str | None = None
    ca_data: bytes | None = None
    """PEM of the CA that signed the server's certificate (HTTPS only)."""
    pod_ip: str = ""


def _environment(pod: Mapping[str, Any], container: Mapping[str, Any], runtime: PodRuntime) -> dict[str, str]:
    meta = pod.get("metadata") or {}
    env = dict(os.environ)
    server = urlsplit(runtime.server_url)
    env["KUBERNETES_SERVICE_HOST"] = server.hostname or "127.0.0.1"
    env["KUBERNETES_SERVICE_PORT"] = str(server.port or (443 if server.scheme == "https" else 80))
    env["HOSTNAME"] = env["POD_NAME"] = str(meta.get("name", ""))
    env["POD_NAMESPACE"] = str(meta.get("namespace") or "default")
    env["POD_IP"] = runtime.pod_ip
    for entry in container.get("env") or []:
        name = entry.get("name")
        if not name:
            continue
        source = entry.get("valueFrom") or {}
        if "value" in entry:
            env[name] = str(entry["value"])
        elif source.get("fieldRef"):
            env[name] = resolve_field_ref(pod, source["fieldRef"].get("fieldPath", ""))
        elif source.get("resourceFieldRef"):
            env[name] = resolve_resource_ref(pod, container, source["resourceFieldRef"])
    return env


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


async def start_container(
    argv: list[str],
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    runtime: PodRuntime,
    secrets: Mapping[str, Mapping[str, bytes]] | None = None,
) -> ExecProcess:
    """Start ``argv`` for ``container`` of ``pod`` (whose status carries its IP); raises OSError if it cannot.

    ``runtime`` holds the server, CA and bearer token its kubeconfig carries; ``secrets`` the files of the pod's
    Secret volumes.
    """
    tmp = tempfile.TemporaryDirectory(prefix="grove-sim-pod-")
    try:
        root = Path(tmp.name)
        volumes = _materialise(pod, root / "volumes", secrets or {})
        env = _environment(pod, container, runtime)
        mounts: dict[str, str] = {}
        for mount in container.get("volumeMounts") or []:
            local = volumes.get(str(mount.get("name")))
            if local is not None:
                env[f"GROVE_SIM_MOUNT_{_volume_name(str(mount.get('name')))}"] = str(local)
                mounts[str(mount.get("mountPath"))] = str(local)
        if not any(entry.get("name") == "TMPDIR" for entry in container.get("env") or []):
            env["TMPDIR"] = mounts.get("/tmp") or str(_made(root / "tmp"))
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        kubeconfig = root / "kubeconfig"
        document = kubeconfig_document(
            runtime.server_url, token=runtime.token, namespace=namespace, user="pod", ca_data=runtime.ca_data
        )
        kubeconfig.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        env["KUBECONFIG"] = str(kubeconfig)
        env["GROVE_SIM_POD_INFO_DIR"] = str(root / "volumes")
        env["GROVE_SIM_MOUNTS"] = json.dumps(mounts)
        proc = await asyncio.create_subprocess_exec(
            *[expand(arg, env) for arg in argv],
            env=env,
            cwd=root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            preexec_fn=_PRE_EXEC,
        )
    except BaseException:
        tmp.cleanup()
        raise
    return ExecProcess(proc, tmp, env)
