"""Where a program's Kubernetes configuration comes from, resolved in kubectl's order.

Why our own resolution: kubernetes-asyncio's loaders each know one source, and calling the in-cluster loader on a
laptop dies with a traceback (``Service host/port is not set``) even when ``$KUBECONFIG`` names a good file. Like
kubectl, a program looks at ``--kubeconfig``, then ``$KUBECONFIG`` (a path list; the first existing file is used),
then the in-cluster service account, then ``~/.kube/config``, and says in one line what is missing when none works.

The same service-account folder also tells an in-cluster program its own namespace, which is where its Lease lives
(:func:`own_namespace`).

Two loaders read the resolved source: :func:`load_configuration` into kubernetes-asyncio's ``Configuration``
(every credential kind kubectl knows, for the long-running programs), and :func:`load_connection` into a plain
:class:`Connection` (server, bearer token or client certificate, TLS) without importing kubernetes-asyncio, for
``grove-initc``, whose start-up cost is paid once per waiting pod.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from kubernetes_asyncio import client as k8s

__all__ = [
    "DEFAULT_LEASE_NAMESPACE",
    "SERVICE_ACCOUNT_DIR",
    "ConfigSource",
    "Connection",
    "KubeconfigError",
    "load_configuration",
    "load_connection",
    "own_namespace",
    "resolve",
]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_LEASE_NAMESPACE = "grove-system"
SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"


class KubeconfigError(Exception):
    """No usable configuration; the message is one line that says what was tried or what is wrong."""


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """Where the configuration comes from: ``kind`` is ``--kubeconfig``, ``$KUBECONFIG``, ``in-cluster`` or
    ``~/.kube/config``; ``path`` is the file (the service-account folder for in-cluster)."""

    kind: str
    path: Path


def _in_cluster(env: Mapping[str, str], sa_dir: Path) -> bool:
    return bool(env.get(SERVICE_HOST_ENV) and env.get(SERVICE_PORT_ENV) and (sa_dir / "token").is_file())


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
    from kubernetes_asyncio import client as k8s
    from kubernetes_asyncio.config import ConfigException, incluster_config
    from kubernetes_asyncio.config import kube_config as k8s_kube_config

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


@dataclass(frozen=True, slots=True)
class Connection:
    """How to reach the API server: its URL, the bearer token (or the file it is read from), TLS material."""

    server: str
    token: str | None = None
    token_file: str | None = None
    ca_file: str | None = None
    ca_data: bytes | None = None
    cert_file: str | None = None
    key_file: str | None = None
    cert_data: bytes | None = None
    key_data: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    proxy: str | None = None


def load_connection(
    explicit: str | None = None,
    *,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
    sa_dir: Path = SERVICE_ACCOUNT_DIR,
) -> Connection:
    """The :class:`Connection` of the resolved source. Token, token-file and client-certificate users only: an exec
    or auth-provider plugin, or a malformed file, raises :class:`KubeconfigError`."""
    env = os.environ if env is None else env
    source = resolve(explicit, env=env, sa_dir=sa_dir)
    if source.kind == "in-cluster":
        host = env[SERVICE_HOST_ENV]
        host = f"[{host}]" if ":" in host else host
        ca = sa_dir / "ca.crt"
        return Connection(
            server=f"https://{host}:{env[SERVICE_PORT_ENV]}",
            token_file=str(sa_dir / "token"),
            ca_file=str(ca) if ca.is_file() else None,
        )
    try:
        doc = yaml.safe_load(source.path.read_text(encoding="utf-8"))
        return _kubeconfig_connection(doc, source.path.parent, context)
    except (OSError, yaml.YAMLError, ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise KubeconfigError(f"{source.kind} {source.path}: {reason}") from exc


def _named(doc: Mapping[str, Any], section: str, name: str) -> Mapping[str, Any]:
    for entry in doc.get(section) or ():
        if entry.get("name") == name:
            body: Mapping[str, Any] = entry.get(section[:-1]) or {}
            return body
    raise ValueError(f"{section[:-1]} {name!r} is not defined")


def _kubeconfig_connection(doc: Mapping[str, Any], base: Path, context: str | None) -> Connection:
    name = context or doc.get("current-context")
    if not name:
        raise ValueError("no current-context")
    ctx = _named(doc, "contexts", str(name))
    cluster = _named(doc, "clusters", str(ctx["cluster"]))
    user = _named(doc, "users", str(ctx["user"])) if ctx.get("user") else {}
    plugin = next((key for key in ("exec", "auth-provider", "username") if user.get(key)), None)
    if plugin:
        raise ValueError(f"user credentials of kind {plugin!r} are not supported here (use a token or a certificate)")

    def path(key: str) -> str | None:
        value = cluster.get(key) or user.get(key)
        return str(base / str(value)) if value else None

    def data(key: str) -> bytes | None:
        value = cluster.get(key) or user.get(key)
        return base64.b64decode(str(value), validate=True) if value else None

    return Connection(
        server=str(cluster["server"]),
        token=str(user["token"]) if user.get("token") else None,
        token_file=path("tokenFile"),
        ca_file=path("certificate-authority"),
        ca_data=data("certificate-authority-data"),
        cert_file=path("client-certificate"),
        key_file=path("client-key"),
        cert_data=data("client-certificate-data"),
        key_data=data("client-key-data"),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=str(cluster["tls-server-name"]) if cluster.get("tls-server-name") else None,
        proxy=str(cluster["proxy-url"]) if cluster.get("proxy-url") else None,
    )


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
