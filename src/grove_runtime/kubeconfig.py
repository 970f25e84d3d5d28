"""Where a program's Kubernetes configuration comes from, resolved in kubectl's order.

Why our own resolution: kubernetes-asyncio's loaders each know one source, and calling the in-cluster loader on a
laptop dies with a traceback (``Service host/port is not set``) even when ``$KUBECONFIG`` names a good file. Like
kubectl, a program looks at ``--kubeconfig``, then ``$KUBECONFIG`` (a path list; the first existing file is used),
then the in-cluster service account, then ``~/.kube/config``, and says in one line what is missing when none works.

The same service-account folder also tells an in-cluster program its own namespace, which is where its Lease lives
(:func:`own_namespace`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.config import ConfigException, incluster_config
from kubernetes_asyncio.config import kube_config as k8s_kube_config

__all__ = [
    "DEFAULT_LEASE_NAMESPACE",
    "SERVICE_ACCOUNT_DIR",
    "ConfigSource",
    "KubeconfigError",
    "load_configuration",
    "own_namespace",
    "resolve",
]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_LEASE_NAMESPACE = "grove-system"


class KubeconfigError(Exception):
    """No usable configuration; the message is one line that says what was tried or what is wrong."""


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """Where the configuration comes from: ``kind`` is ``--kubeconfig``, ``$KUBECONFIG``, ``in-cluster`` or
    ``~/.kube/config``; ``path`` is the file (the service-account folder for in-cluster)."""

    kind: str
    path: Path


def _in_cluster(env: Mapping[str, str], sa_dir: Path) -> bool:
    return bool(
        env.get(incluster_config.SERVICE_HOST_ENV_NAME)
        and env.get(incluster_config.SERVICE_PORT_ENV_NAME)
        and (sa_dir / "token").is_file()
    )


def resolve(
    explicit: str | None = None, *, env: Mapping[str, str] | None = None, sa_dir: Path = SERVICE_ACCOUNT_DIR
) -> ConfigSource:
    """The first source that exists, in kubectl's order; raises :class:`KubeconfigError` when there is none.

    An explicit ``--kubeconfig`` must exist (kubectl refuses a missing one rather than falling back).
    """
    env = os.environ if env is None else env
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise KubeconfigError(f"--kubeconfig {explicit}: no such file")
        return ConfigSource("--kubeconfig", path)
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    for entry in listed:
        path = Path(entry).expanduser()
        if path.is_file():
            return ConfigSource("$KUBECONFIG", path)
    if _in_cluster(env, sa_dir):
        return ConfigSource("in-cluster", sa_dir)
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    default = home / ".kube" / "config"
    if default.is_file():
        return ConfigSource("~/.kube/config", default)
    tried = f"$KUBECONFIG ({os.pathsep.join(listed)}) has no existing file, " if listed else ""
    raise KubeconfigError(
        f"no Kubernetes configuration: {tried}pass --kubeconfig, set $KUBECONFIG, run in a cluster, or create {default}"
    )


async def load_configuration(
    explicit: str | None = None,
    *,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
    sa_dir: Path = SERVICE_ACCOUNT_DIR,
) -> tuple[k8s.Configuration, ConfigSource]:
    """A client configuration from the resolved source; unreadable or malformed files raise :class:`KubeconfigError`."""
    env = os.environ if env is None else env
    source = resolve(explicit, env=env, sa_dir=sa_dir)
    cfg = k8s.Configuration()
    try:
        if source.kind == "in-cluster":
            loader = incluster_config.InClusterConfigLoader(
                token_filename=str(sa_dir / "token"), cert_filename=str(sa_dir / "ca.crt"), environ=dict(env)
            )
            loader.load_and_set(cfg)
        else:
            await k8s_kube_config.load_kube_config(
                config_file=str(source.path), context=context, client_configuration=cfg
            )
    except (ConfigException, OSError, yaml.YAMLError, ValueError, KeyError, TypeError, AttributeError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise KubeconfigError(f"{source.kind} {source.path}: {reason}") from exc
    return cfg, source


def own_namespace(env: Mapping[str, str] | None = None, *, sa_dir: Path = SERVICE_ACCOUNT_DIR) -> str:
    """The namespace a program's Lease lives in by default: ``$POD_NAMESPACE`` (the downward API), else the
    service account's namespace file when running in a pod, else ``grove-system``."""
    env = os.environ if env is None else env
    if env.get("POD_NAMESPACE"):
        return env["POD_NAMESPACE"]
    try:
        namespace = (sa_dir / "namespace").read_text(encoding="utf-8").strip()
    except OSError:
        namespace = ""
    return namespace or DEFAULT_LEASE_NAMESPACE
