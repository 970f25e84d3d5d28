"""The token controller: fills ``kubernetes.io/service-account-token`` Secrets and creates default ServiceAccounts.

Grove creates such Secrets for its init containers and reads ``data.token``, ``data.ca.crt`` and
``data.namespace`` back, so the simulator populates them (base64, as the real controller does) as soon as the
Secret appears. Each active namespace also gets its ``default`` ServiceAccount, like a real cluster.

It also stands in for the TokenRequest API the kubelet uses: :meth:`TokenController.token_for` gives a service
account's token (its token Secret's, else a freshly issued one, as for a projected volume), and
:meth:`TokenController.issued_to` says which service account an issued token was bound to, so the authenticator
accepts it as kube-apiserver accepts a bound token.
"""

from __future__ import annotations

import base64
import secrets as pysecrets

from grove_sim.auth.authentication import SA_TOKEN_TYPE
from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.registry.core import Core, clone
from grove_sim.storage.store import Event, ObjectRef

__all__ = ["SA_TOKEN_TYPE", "SIM_CA_PEM", "TokenController"]

SIM_CA_PEM = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBszCCAVmgAwIBAgIUZ3JvdmUtc2ltLWNhLTAwMDAwMDAwMDAwMDAwCgYIKoZIzj0EAwIwFTETMBEGA1UEAwwKZ3Jvdm\n"
    "Utc2ltMB4XDTI2MDEwMTAwMDAwMFoXDTM2MDEwMTAwMDAwMFowFTETMBEGA1UEAwwKZ3JvdmUtc2ltMFkwEwYHKoZIzj0C\n"
    "-----END CERTIFICATE-----\n"
)
_SECRETS = ("", "secrets")
_NAMESPACES = ("", "namespaces")
_SA = ("", "serviceaccounts")
_SA_ANNOTATION = "kubernetes.io/service-account.name"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _issue(namespace: str, sa_name: str) -> str:
    return f"grove-sim.{namespace}.{sa_name}.{pysecrets.token_urlsafe(24)}"


class TokenController:
    """Populates token Secrets; optionally ensures a ``default`` ServiceAccount per namespace."""

    def __init__(self, core: Core, *, default_service_accounts: bool = True) -> None:
        self._core = core
        self._default_sa = default_service_accounts
        self.queue: WorkQueue[ObjectRef] = WorkQueue("tokens", self._process)
        self._bound: dict[str, tuple[str, str]] = {}
        self._issued: dict[tuple[str, str], str] = {}
        core.store.add_listener(self._on_event)

    def issued_to(self, token: str) -> tuple[str, str] | None:
        """The (namespace, service account) a token issued by :meth:`token_for` is bound to; None for any other."""
        return self._bound.get(token)

    def token_for(self, namespace: str, sa_name: str) -> str:
        """A token of the service account: from a populated token Secret of it if there is one, else issued (once)
        as the TokenRequest API would for a projected volume."""
        for secret in self._core.store.list(_SECRETS, namespace):
            annotations = secret["metadata"].get("annotations") or {}
            token = (secret.get("data") or {}).get("token")
            if secret.get("type") == SA_TOKEN_TYPE and token and annotations.get(_SA_ANNOTATION, "default") == sa_name:
                return base64.b64decode(token).decode()
        key = (namespace, sa_name)
        if key not in self._issued:
            self._issued[key] = _issue(namespace, sa_name)
            self._bound[self._issued[key]] = key
        return self._issued[key]

    def _on_event(self, event: Event) -> None:
        if event.type == "DELETED":
            if event.key == _SA:  # its issued token dies with it (and must not stay in memory forever)
                meta = event.obj["metadata"]
                token = self._issued.pop((meta.get("namespace", ""), meta["name"]), None)
                self._bound.pop(token or "", None)
            return
        meta = event.obj["metadata"]
        if event.key == _SECRETS and event.obj.get("type") == SA_TOKEN_TYPE:
            if not (event.obj.get("data") or {}).get("token"):
                self.queue.add((_SECRETS, meta["namespace"], meta["name"]))
        elif event.key == _NAMESPACES and event.type == "ADDED" and self._default_sa:
            self.queue.add((_NAMESPACES, "", meta["name"]))

    def _process(self, ref: ObjectRef) -> None:
        core = self._core
        obj = core.store.get(*ref)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        if ref[0] == _NAMESPACES:
            name = ref[2]
            info = core.registry.get("", "v1", "serviceaccounts")
            if info is not None and core.store.get(_SA, name, "default") is None:
                try:
                    core.create(info, name, {"metadata": {"name": "default"}})
                except errors.ApiError as exc:
                    if exc.code not in (403, 404, 409):
                        raise
            return
        info = core.registry.get("", "v1", "secrets")
        assert info is not None
        new = clone(obj)
        namespace = ref[1]
        annotations = new["metadata"].setdefault("annotations", {})
        sa_name = annotations.get(_SA_ANNOTATION, "default")
        sa = core.store.get(_SA, namespace, sa_name)
        if sa is not None:
            annotations["kubernetes.io/service-account.uid"] = sa["metadata"]["uid"]
        token = _issue(namespace, sa_name)
        new["data"] = {
            **(new.get("data") or {}),
            "token": _b64(token),
            "ca.crt": _b64(SIM_CA_PEM),
            "namespace": _b64(namespace),
        }
        core.replace(info, obj, new)
