"""Bearer tokens to users, as kube-apiserver's token authenticators resolve them.

Three kinds of caller, in kube-apiserver's terms:

* the cluster admin: the token ``grove-sim up`` writes into its kubeconfig is a static token (``--token-auth-file``)
  for ``kubernetes-admin`` in group ``system:masters``;
* service accounts: the tokens the token controller mints into ``kubernetes.io/service-account-token`` Secrets
  (legacy service-account tokens) resolve to ``system:serviceaccount:<namespace>:<name>`` with the
  service-account groups, for as long as the Secret holds the token and the ServiceAccount it names exists with the
  uid the Secret recorded; tokens the TokenRequest stand-in issued for a pod's projected volume (bound tokens)
  resolve to their service account for as long as it exists;
* a request without credentials is ``system:anonymous`` (anonymous auth is on, as by default).

Any other token, or another scheme (``Basic``), is a 401 ``Unauthorized``, as kube-apiserver answers.

**Impersonation** (``Impersonate-User``, ``Impersonate-Group``, ``Impersonate-Uid`` headers; ``kubectl --as``,
``--as-group``) replaces the authenticated user afterwards, as kube-apiserver's impersonation filter does; with no
authorizer every caller may impersonate (``AlwaysAllow``). kubectl sends no bearer token over plain HTTP, so
``--as`` is how a kubectl command against grove-sim acts as a particular user.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grove_sim.storage.store import Event, Store

__all__ = [
    "ADMIN",
    "ANONYMOUS",
    "SA_TOKEN_TYPE",
    "Authenticator",
    "Unauthorized",
    "UserInfo",
    "impersonated",
    "service_account_user",
]

SA_TOKEN_TYPE = "kubernetes.io/service-account-token"
_SECRETS = ("", "secrets")
_SERVICE_ACCOUNTS = ("", "serviceaccounts")
_SA_NAME = "kubernetes.io/service-account.name"
_SA_UID = "kubernetes.io/service-account.uid"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated user (``authentication.k8s.io/v1`` UserInfo)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form admission reviews and self-subject reviews carry."""
        out: dict[str, Any] = {"username": self.username}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {key: list(values) for key, values in self.extra.items()}
        return out


ADMIN = UserInfo("kubernetes-admin", groups=("system:masters", "system:authenticated"))
ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))


def impersonated(username: str, groups: Sequence[str] = (), uid: str = "") -> UserInfo:
    """The user an impersonation request becomes: a service account gets its groups, everyone but anonymous
    ``system:authenticated``."""
    prefix = "system:serviceaccount:"
    all_groups = list(groups)
    if username.startswith(prefix) and not all_groups:
        namespace = username[len(prefix) :].split(":", 1)[0]
        all_groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    if username != ANONYMOUS.username and "system:authenticated" not in all_groups:
        all_groups.append("system:authenticated")
    return UserInfo(username, uid=uid, groups=tuple(all_groups))


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """The user a service account's token authenticates as."""
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        uid=uid,
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


class Unauthorized(Exception):
    """The request carried credentials that identify nobody (kube-apiserver answers 401)."""


def _token_of(secret: dict[str, Any]) -> str | None:
    encoded = (secret.get("data") or {}).get("token")
    if not isinstance(encoded, str) or not encoded:
        return None
    try:
        return base64.b64decode(encoded, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


class Authenticator:
    """Resolves the ``Authorization`` header of a request to a :class:`UserInfo`.

    Service-account tokens are indexed from the store's Secret events, so a lookup is one dict access plus the
    checks kube-apiserver's legacy-token authenticator makes (the Secret still holds the token; the ServiceAccount
    exists and is the one the Secret was minted for).
    """

    def __init__(
        self,
        store: Store,
        *,
        static_tokens: Mapping[str, UserInfo] | None = None,
        bound_tokens: Callable[[str], tuple[str, str] | None] | None = None,
    ) -> None:
        self._store = store
        self._static = dict(static_tokens or {})
        self._bound_tokens = bound_tokens
        self._by_token: dict[str, tuple[str, str]] = {}
        self._by_secret: dict[tuple[str, str], str] = {}
        for secret in store.list(_SECRETS):
            self._index(secret)
        store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.key != _SECRETS:
            return
        meta = event.obj.get("metadata") or {}
        ref = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        previous = self._by_secret.pop(ref, None)
        if previous is not None:
            self._by_token.pop(previous, None)
        if event.type != "DELETED":
            self._index(event.obj)

    def _index(self, secret: dict[str, Any]) -> None:
        if secret.get("type") != SA_TOKEN_TYPE:
            return
        token = _token_of(secret)
        if token is None:
            return
        meta = secret.get("metadata") or {}
        ref = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self._by_secret[ref] = token
        self._by_token[token] = ref

    def authenticate(
        self,
        authorization: str | None,
        impersonate_user: str | None = None,
        impersonate_groups: Sequence[str] = (),
        impersonate_uid: str | None = None,
    ) -> UserInfo:
        """The user of a request's headers (see the module doc); raises :class:`Unauthorized`."""
        user = self._authenticated(authorization)
        if not impersonate_user:
            return user
        return impersonated(impersonate_user, impersonate_groups, impersonate_uid or "")

    def _authenticated(self, authorization: str | None) -> UserInfo:
        if not authorization:
            return ANONYMOUS
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized()
        user = self._static.get(token)
        if user is not None:
            return user
        user = self._service_account(token) or self._bound(token)
        if user is None:
            raise Unauthorized()
        return user

    def _bound(self, token: str) -> UserInfo | None:
        bound = self._bound_tokens(token) if self._bound_tokens is not None else None
        if bound is None:
            return None
        namespace, sa_name = bound
        return self._live_account(namespace, sa_name, expected_uid=None)

    def _service_account(self, token: str) -> UserInfo | None:
        ref = self._by_token.get(token)
        if ref is None:
            return None
        namespace, secret_name = ref
        secret = self._store.get(_SECRETS, namespace, secret_name)
        if secret is None or secret["metadata"].get("deletionTimestamp") or _token_of(secret) != token:
            return None
        annotations = secret["metadata"].get("annotations") or {}
        sa_name = str(annotations.get(_SA_NAME) or "default")
        return self._live_account(namespace, sa_name, expected_uid=annotations.get(_SA_UID) or None)

    def _live_account(self, namespace: str, sa_name: str, *, expected_uid: str | None) -> UserInfo | None:
        account = self._store.get(_SERVICE_ACCOUNTS, namespace, sa_name)
        if account is None or account["metadata"].get("deletionTimestamp"):
            return None
        uid = str(account["metadata"].get("uid") or "")
        if expected_uid is not None and expected_uid != uid:
            return None
        return service_account_user(namespace, sa_name, uid)
