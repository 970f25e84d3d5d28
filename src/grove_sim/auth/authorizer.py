"""The authorization modes grove-sim offers (``--authorization-mode``) and the impersonation check.

``AlwaysAllow`` (the default, as kube-apiserver's ``--authorization-mode=AlwaysAllow``) allows every request; ``RBAC``
is ``grove_sim.auth.rbac``. Both answer the same two questions, so access reviews read the mode in force: may this
user do this (``authorize``), and what may this user do in a namespace (``rules_for``). Impersonation is authorized
as kube-apiserver's impersonation filter does: the real user needs ``impersonate`` on the user (or service account),
on each named group and on the uid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol

from grove_sim.auth.attributes import Attributes, Decision, forbidden
from grove_sim.auth.authentication import UserInfo
from grove_sim.auth.rbac import ALL_RULES, RBACAuthorizer
from grove_sim.storage.store import Store

__all__ = ["MODES", "AlwaysAllow", "Authorizer", "check_impersonation", "new_authorizer"]

MODES: Final = ("AlwaysAllow", "RBAC")
_SA_PREFIX: Final = "system:serviceaccount:"


class Authorizer(Protocol):
    """What the HTTP layer and the access reviews ask of an authorization mode."""

    def authorize(self, attributes: Attributes) -> Decision:
        """Whether the request may proceed, and why."""
        ...

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[dict[str, Any]], bool]:
        """Every rule granted to ``user`` in ``namespace`` and whether that list is incomplete."""
        ...


class AlwaysAllow:
    """Every request is allowed (kube-apiserver's ``AlwaysAllow``)."""

    def authorize(self, attributes: Attributes) -> Decision:
        """Allowed."""
        return Decision(True)

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[dict[str, Any]], bool]:
        """Everything."""
        return list(ALL_RULES), False


def new_authorizer(mode: str, store: Store) -> Authorizer | None:
    """The authorizer of ``mode``; None for ``AlwaysAllow``, which the request path then skips entirely."""
    if mode == "RBAC":
        return RBACAuthorizer(store)
    if mode == "AlwaysAllow":
        return None
    raise ValueError(f"unknown authorization mode {mode!r} (expected one of {', '.join(MODES)})")


def check_impersonation(
    authorizer: Authorizer, user: UserInfo, username: str, groups: Sequence[str], uid: str | None
) -> None:
    """Raise kube-apiserver's 403 unless ``user`` may impersonate ``username``, each of ``groups`` and ``uid``."""
    checks: list[Attributes] = []
    if username.startswith(_SA_PREFIX) and username.count(":") == 3:
        namespace, name = username[len(_SA_PREFIX) :].split(":")
        checks.append(Attributes(user, "impersonate", resource="serviceaccounts", namespace=namespace, name=name))
    else:
        checks.append(Attributes(user, "impersonate", resource="users", name=username))
    checks += [Attributes(user, "impersonate", resource="groups", name=group) for group in groups]
    if uid:
        checks.append(Attributes(user, "impersonate", group="authentication.k8s.io", resource="uids", name=uid))
    for attributes in checks:
        decision = authorizer.authorize(attributes)
        if not decision.allowed:
            raise forbidden(attributes, decision.reason)
