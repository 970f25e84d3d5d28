"""Where the webhook server's certificate comes from, and how it stays valid.

* :class:`SecretCertificates` keeps the CA and serving certificate in one ``kubernetes.io/tls`` Secret (``tls.crt``,
  ``tls.key``, ``ca.crt``, ``ca.key``) that every replica shares: the first to start creates it (create-if-absent;
  a replica that loses the race reads the winner's), and whoever finds it due for renewal or missing a name it
  needs re-issues it with a resourceVersion precondition (a conflict means another replica did: read theirs).
  A renewed CA keeps the previous CA in ``ca.crt`` behind the new one, so servers still presenting a certificate of
  the old CA stay trusted until they reload.
* :class:`FileCertificates` reads ``tls.crt``, ``tls.key`` and (optional) ``ca.crt`` from a directory that
  something else fills (cert-manager, a mounted Secret); without ``ca.crt`` the chain in ``tls.crt`` is the bundle.

:class:`CertificateKeeper` loads the certificate into the server before it starts and checks again every
``interval`` (so a renewal, by this replica or another, reaches every server), calling ``on_change`` with the new
bundle so the CA can be injected into the webhook configurations.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import structlog

from grove_runtime import errors
from grove_runtime.client import Client
from grove_runtime.clock import Clock
from grove_runtime.resources import SECRETS
from grove_runtime.webhook import certs
from grove_runtime.webhook.certs import CertBundle
from grove_runtime.webhook.server import WebhookServer

__all__ = ["CertificateKeeper", "CertificateSource", "FileCertificates", "SecretCertificates"]

log = structlog.get_logger("grove_runtime.webhook")

CHECK_INTERVAL = 600.0
"""Seconds between checks of the certificate (renewal is due with a third of its lifetime left)."""
_ATTEMPTS = 5


class CertificateSource(Protocol):
    """Gives the current certificate, renewing it first when that is this source's job."""

    async def load(self) -> CertBundle:
        """The bundle to serve with now."""
        ...


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(value: Any) -> bytes | None:
    try:
        return base64.b64decode(str(value), validate=True) if value else None
    except ValueError:
        return None


class SecretCertificates:
    """The certificate in a Secret shared by replicas; created, renewed and widened to new names here."""

    def __init__(
        self,
        client: Client,
        namespace: str,
        name: str,
        names: Sequence[str],
        clock: Clock,
        *,
        labels: Mapping[str, str] | None = None,
        common_name: str = "webhook-ca",
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.names = list(dict.fromkeys(names))
        self.clock = clock
        self.labels = dict(labels or {})
        self.common_name = common_name

    def _secret(self, bundle: CertBundle, resource_version: str | None = None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.labels:
            metadata["labels"] = self.labels
        if resource_version:
            metadata["resourceVersion"] = resource_version
        data = {"tls.crt": _b64(bundle.cert), "tls.key": _b64(bundle.key), "ca.crt": _b64(bundle.ca_cert)}
        if bundle.ca_key is not None:
            data["ca.key"] = _b64(bundle.ca_key)
        return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": metadata, "data": data}

    def _renewed(self, found: dict[str, Any]) -> CertBundle | None:
        """The bundle that must replace the Secret's, or None when it is still good."""
        data = found.get("data") or {}
        ca_cert, ca_key = _unb64(data.get("ca.crt")), _unb64(data.get("ca.key"))
        cert, key = _unb64(data.get("tls.crt")), _unb64(data.get("tls.key"))
        now = self.clock.now()
        if ca_cert is None or ca_key is None or certs.renewal_due(ca_cert, now):
            fresh = certs.issue(self.names, now, common_name=self.common_name)
            previous = ca_cert if ca_cert is not None and not certs.expired(ca_cert, now) else b""
            return CertBundle(fresh.ca_cert + previous, fresh.ca_key, fresh.cert, fresh.key)
        if cert is None or key is None or certs.renewal_due(cert, now) or not certs.covers(cert, self.names):
            names = list(dict.fromkeys([*self.names, *(certs.names_of(cert) if cert else [])]))
            cert, key = certs.new_serving_cert(ca_cert, ca_key, names, now)
            return CertBundle(ca_cert, ca_key, cert, key)
        return None

    async def load(self) -> CertBundle:
        """The shared certificate, made or renewed first when needed."""
        for _ in range(_ATTEMPTS):
            try:
                found = await self.client.get(SECRETS, self.name, self.namespace)
            except errors.NotFound:
                bundle = certs.issue(self.names, self.clock.now(), common_name=self.common_name)
                try:
                    await self.client.create(SECRETS, self._secret(bundle), self.namespace)
                except errors.AlreadyExists:
                    continue
                log.info("webhook certificate created", namespace=self.namespace, name=self.name)
                return bundle
            renewed = self._renewed(found)
            if renewed is None:
                return _bundle_of(found)
            version = str(found["metadata"].get("resourceVersion") or "")
            try:
                await self.client.update(SECRETS, {**found, **self._secret(renewed, version)})
            except errors.Conflict:
                continue
            log.info("webhook certificate renewed", namespace=self.namespace, name=self.name)
            return renewed
        raise errors.Conflict(f"secret {self.namespace}/{self.name} kept changing while being renewed")


def _bundle_of(secret: Mapping[str, Any]) -> CertBundle:
    data = secret.get("data") or {}
    parts = [_unb64(data.get(k)) for k in ("ca.crt", "ca.key", "tls.crt", "tls.key")]
    ca_cert, ca_key, cert, key = parts
    if ca_cert is None or cert is None or key is None:
        raise ValueError(f"secret {secret.get('metadata', {}).get('name')} lacks a certificate")
    return CertBundle(ca_cert, ca_key, cert, key)


class FileCertificates:
    """``tls.crt``/``tls.key``/``ca.crt`` in a directory, read on every check (renewed by whoever writes them)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    async def load(self) -> CertBundle:
        """The files' current contents; raises ``OSError`` when a required file is missing."""
        cert = (self.directory / "tls.crt").read_bytes()
        key = (self.directory / "tls.key").read_bytes()
        ca_path = self.directory / "ca.crt"
        return CertBundle(ca_path.read_bytes() if ca_path.exists() else cert, None, cert, key)


class CertificateKeeper:
    """Keeps the server's certificate current and tells ``on_change`` whenever the bundle changes."""

    def __init__(
        self,
        source: CertificateSource,
        server: WebhookServer,
        clock: Clock,
        *,
        on_change: Callable[[CertBundle], Awaitable[None]] | None = None,
        interval: float = CHECK_INTERVAL,
    ) -> None:
        self.source = source
        self.server = server
        self.clock = clock
        self.on_change = on_change
        self.interval = interval
        self.current: CertBundle | None = None

    async def refresh(self) -> CertBundle:
        """Load (renewing if due) and, when it changed, serve it and report it."""
        bundle = await self.source.load()
        if bundle != self.current:
            self.server.load_certificate(bundle.cert, bundle.key)
            self.current = bundle
            if self.on_change is not None:
                await self.on_change(bundle)
        return bundle

    async def run(self) -> None:
        """Check every ``interval`` until cancelled; a failed check is logged and retried next time."""
        while True:
            await self.clock.sleep(self.interval)
            try:
                await self.refresh()
            except (errors.ApiError, OSError, ValueError) as exc:
                log.warning("webhook certificate check failed", error=str(exc))
