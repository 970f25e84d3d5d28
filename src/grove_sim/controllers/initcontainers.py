"""Init containers as a kubelet runs them: what an executable-image process gets mounted, and crash-loop backoff.

Kept apart from ``grove_sim.controllers.kubelet`` (which decides when a container starts, stops and what the pod
shows) because both are plain rules: which token and Secret files a container's volumes give it, and kubelet's
``flowcontrol.Backoff`` for restarting a failed container.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from grove_sim.storage.store import Store

__all__ = ["SERVICE_ACCOUNT_PATH", "CrashBackoff", "NotMounted", "credentials", "go_duration", "with_env_refs"]

SERVICE_ACCOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where in-cluster clients read their token, CA and namespace."""
_SECRETS = ("", "secrets")

TokenSource = Callable[[str, str], str]
"""(namespace, service account) → a token of that service account, as the TokenRequest API gives the kubelet."""


@dataclass
class CrashBackoff:
    """kubelet's restart backoff for one container: the first restart is immediate, then the wait doubles from
    ``initial`` to ``maximum`` (10 s to 5 min in kubelet) and starts over once the container ran for twice the
    maximum without failing (``flowcontrol.Backoff``: ``IsInBackOffSince``, then ``Next``)."""

    initial: float = 10.0
    maximum: float = 300.0
    period: float | None = None
    updated: float = 0.0

    def restart_delay(self, finished: float) -> float:
        """Seconds to wait after a failure at ``finished`` (loop time) before restarting the container."""
        expired = self.period is None or finished - self.updated > 2 * self.maximum
        delay = 0.0 if expired or self.period is None else self.period
        self.period = self.initial if expired or self.period is None else min(2 * self.period, self.maximum)
        self.updated = finished + delay
        return delay


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration.String`` prints it (``10s``, ``5m0s``, ``1m20s``, ``200ms``), as in
    kubelet's back-off message."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{round(seconds * 1000, 6):g}ms"
    minutes, rest = divmod(round(seconds, 9), 60)
    hours, minutes = divmod(int(minutes), 60)
    text = f"{rest:g}s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    return f"{minutes}m{text}" if minutes else text


class NotMounted(Exception):
    """A volume the container mounts cannot be set up yet (kubelet's ``FailedMount``); retried later."""


def _decoded(data: Mapping[str, Any]) -> dict[str, bytes]:
    out = {}
    for key, value in data.items():
        try:
            out[key] = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            continue
    return out


def credentials(
    store: Store, pod: Mapping[str, Any], container: Mapping[str, Any], token_for: TokenSource
) -> tuple[str | None, dict[str, dict[str, bytes]]]:
    """The bearer token the container finds at :data:`SERVICE_ACCOUNT_PATH` and the files of its Secret volumes.

    The token is the one in the volume mounted there (a Secret's ``token`` key, or a projected service-account
    token); with nothing mounted there, the pod's ``serviceAccountName``'s token unless the pod opts out of
    automounting; None when there is no token. Raises :class:`NotMounted` when a non-optional Secret is missing.
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    namespace = str(meta.get("namespace") or "default")
    service_account = str(spec.get("serviceAccountName") or "default")
    volumes = {str(v.get("name")): v for v in spec.get("volumes") or ()}
    mounts = {str(m.get("name")): str(m.get("mountPath")) for m in container.get("volumeMounts") or ()}
    files: dict[str, dict[str, bytes]] = {}
    for name in mounts:
        source = (volumes.get(name) or {}).get("secret")
        if not isinstance(source, Mapping):
            continue
        secret = store.get(_SECRETS, namespace, str(source.get("secretName")))
        if secret is None and not source.get("optional"):
            raise NotMounted(f'secret "{source.get("secretName")}" not found')
        files[name] = _decoded((secret or {}).get("data") or {})
    mounted = next((name for name, path in mounts.items() if path.rstrip("/") == SERVICE_ACCOUNT_PATH), None)
    if mounted is None:
        if spec.get("automountServiceAccountToken") is False:
            return None, files
        return token_for(namespace, service_account), files
    if mounted in files:
        token = files[mounted].get("token")
        if token is None:
            raise NotMounted(f"volume {mounted!r} has no token yet")
        return token.decode(errors="replace").strip(), files
    projected = (volumes.get(mounted) or {}).get("projected") or {}
    if any("serviceAccountToken" in s for s in projected.get("sources") or ()):
        return token_for(namespace, service_account), files
    return None, files


_CONFIGMAPS = ("", "configmaps")


def with_env_refs(store: Store, pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any]:
    """``container`` with its ``env`` entries taken from ConfigMap and Secret keys (``configMapKeyRef``,
    ``secretKeyRef``) turned into plain values, as the kubelet reads them when it starts the container.

    A missing object or key that is not ``optional`` raises :class:`NotMounted`, so the container waits and is
    retried, as the kubelet's ``CreateContainerConfigError`` does; an optional one leaves the variable unset.
    """
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    env: list[Any] = []
    for entry in container.get("env") or ():
        source = entry.get("valueFrom") or {}
        kind, ref = ("ConfigMap", source.get("configMapKeyRef")) if source.get("configMapKeyRef") else (
            "Secret", source.get("secretKeyRef"))  # fmt: skip
        if not isinstance(ref, Mapping):
            env.append(entry)
            continue
        name, key = str(ref.get("name") or ""), str(ref.get("key") or "")
        obj = store.get(_CONFIGMAPS if kind == "ConfigMap" else _SECRETS, namespace, name)
        data = (obj or {}).get("data") or {}
        value = data.get(key) if kind == "ConfigMap" else _decoded(data).get(key, b"").decode(errors="replace")
        if obj is None or key not in data:
            if ref.get("optional"):
                continue
            missing = (
                f'{kind.lower()} "{name}" not found'
                if obj is None
                else f"couldn't find key {key} in {kind} {namespace}/{name}"
            )
            raise NotMounted(missing)
        env.append({"name": entry.get("name"), "value": str(value)})
    return {**container, "env": env}
