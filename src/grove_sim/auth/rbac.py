"""RBAC authorization as kube-apiserver's ``--authorization-mode=RBAC`` evaluates it.

A request is allowed when a rule of a role bound to the user allows it: ClusterRoleBindings apply everywhere,
RoleBindings in their namespace (naming a Role of that namespace or a ClusterRole); subjects are Users, Groups and
ServiceAccounts (a RoleBinding's ServiceAccount subject without a namespace means the binding's). Members of
``system:masters`` are allowed everything before RBAC is asked, as kube-apiserver's privileged-group authorizer
does. Nothing is ever denied explicitly: no rule, no access.

Bindings are indexed by subject from the store's events, so resolving a user's rules looks up the user's name, each
group and (for a service account) the account, instead of scanning every binding; roles are read by name. The rules
a user has in a namespace are compiled to sets and kept until any role or binding changes, so a decision is a dict
lookup and a few set lookups per rule. The same walk
answers ``SelfSubjectRulesReview`` (``rules_for``), so ``kubectl auth can-i --list`` shows what is enforced.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from grove_sim.auth.attributes import Attributes, CompiledRule, Decision, compile_rule
from grove_sim.auth.authentication import UserInfo
from grove_sim.storage.store import Event, Store

__all__ = ["ALL_RULES", "MASTERS", "RBACAuthorizer", "RuleSource", "SubjectKey"]

MASTERS: Final = "system:masters"
RBAC_GROUP: Final = "rbac.authorization.k8s.io"
_ROLES: Final = (RBAC_GROUP, "roles")
_CLUSTER_ROLES: Final = (RBAC_GROUP, "clusterroles")
_ROLE_BINDINGS: Final = (RBAC_GROUP, "rolebindings")
_CLUSTER_ROLE_BINDINGS: Final = (RBAC_GROUP, "clusterrolebindings")
_BINDING_KEYS: Final = frozenset({_ROLE_BINDINGS, _CLUSTER_ROLE_BINDINGS})
_RBAC_KEYS: Final = _BINDING_KEYS | {_ROLES, _CLUSTER_ROLES}
_CACHE_LIMIT: Final = 4096
_SA_PREFIX: Final = "system:serviceaccount:"
ALL_RULES: Final = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)
"""What a privileged user (or any user under AlwaysAllow) may do: everything."""

SubjectKey = tuple[str, str, str]
"""(kind, namespace, name): ``("User", "", "alice")``, ``("Group", "", "devs")``, ``("ServiceAccount", ns, name)``."""

_BindingRef = tuple[str, str]
_Resolved = tuple[list[tuple[str, CompiledRule]], list[str]]
"""A user's compiled rules in a namespace, each with the reason that names where it came from, and the missing
roles met."""
"""(namespace, name) of a binding ("" namespace for a ClusterRoleBinding)."""


@dataclass(frozen=True, slots=True)
class RuleSource:
    """Where a rule came from, worded as RBAC's describers word it in ``RBAC: allowed by ...``."""

    binding_kind: str
    binding: str
    role_kind: str
    role: str
    subject: str

    def __str__(self) -> str:
        return f'{self.binding_kind} "{self.binding}" of {self.role_kind} "{self.role}" to {self.subject}'


def subject_keys(user: UserInfo) -> list[SubjectKey]:
    """The subject keys a user matches: its name, each group, and its service account if it is one."""
    keys: list[SubjectKey] = [("User", "", user.username)]
    keys += [("Group", "", group) for group in user.groups]
    if user.username.startswith(_SA_PREFIX):
        namespace, sep, name = user.username[len(_SA_PREFIX) :].partition(":")
        if sep and namespace and name and ":" not in name:
            keys.append(("ServiceAccount", namespace, name))
    return keys


def _subject_key(subject: Any, binding_namespace: str) -> SubjectKey | None:
    if not isinstance(subject, dict):
        return None
    kind, name = str(subject.get("kind") or ""), str(subject.get("name") or "")
    if kind in ("User", "Group"):
        return (kind, "", name)
    if kind == "ServiceAccount":
        namespace = str(subject.get("namespace") or binding_namespace)
        return (kind, namespace, name) if namespace else None
    return None


def _describe(key: SubjectKey) -> str:
    kind, namespace, name = key
    return f'{kind} "{namespace}/{name}"' if kind == "ServiceAccount" else f'{kind} "{name}"'


class RBACAuthorizer:
    """Decides requests from the Roles, ClusterRoles and bindings in the store (see the module doc)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._cluster: dict[SubjectKey, set[str]] = {}
        self._namespaced: dict[tuple[str, SubjectKey], set[str]] = {}
        self._indexed: dict[tuple[tuple[str, str], _BindingRef], list[SubjectKey]] = {}
        self._resolved: dict[tuple[str, tuple[str, ...], str], _Resolved] = {}
        for key in _BINDING_KEYS:
            for binding in store.list(key):
                self._index(key, binding)
        store.add_listener(self._on_event)

    # ------------------------------------------------------------------------------------------------ the index

    def _on_event(self, event: Event) -> None:
        if event.key not in _RBAC_KEYS:
            return
        self._resolved.clear()
        if event.key not in _BINDING_KEYS:
            return
        self._unindex(event.key, event.obj)
        if event.type != "DELETED":
            self._index(event.key, event.obj)

    def _ref(self, binding: dict[str, Any]) -> _BindingRef:
        meta = binding.get("metadata") or {}
        return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def _bucket(self, key: tuple[str, str], namespace: str, subject: SubjectKey) -> set[str]:
        if key == _CLUSTER_ROLE_BINDINGS:
            return self._cluster.setdefault(subject, set())
        return self._namespaced.setdefault((namespace, subject), set())

    def _index(self, key: tuple[str, str], binding: dict[str, Any]) -> None:
        namespace, name = ref = self._ref(binding)
        subjects = binding.get("subjects")
        keys = [k for s in subjects if (k := _subject_key(s, namespace))] if isinstance(subjects, list) else []
        for subject in keys:
            self._bucket(key, namespace, subject).add(name)
        self._indexed[(key, ref)] = keys

    def _unindex(self, key: tuple[str, str], binding: dict[str, Any]) -> None:
        namespace, name = ref = self._ref(binding)
        for subject in self._indexed.pop((key, ref), []):
            bucket = self._bucket(key, namespace, subject)
            bucket.discard(name)
            if not bucket:
                if key == _CLUSTER_ROLE_BINDINGS:
                    self._cluster.pop(subject, None)
                else:
                    self._namespaced.pop((namespace, subject), None)

    # ---------------------------------------------------------------------------------------------- evaluation

    def _role_rules(self, ref: Any, namespace: str) -> tuple[str, str, list[Any] | None]:
        """(kind, name, rules) of a roleRef; rules None when the role does not exist."""
        ref = ref if isinstance(ref, dict) else {}
        kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        if kind == "ClusterRole":
            role = self._store.get(_CLUSTER_ROLES, "", name)
        elif kind == "Role" and namespace:
            role = self._store.get(_ROLES, namespace, name)
        else:
            role = None
        if role is None:
            return kind, name, None
        rules = role.get("rules")
        return kind, name, rules if isinstance(rules, list) else []

    def role_rules(self, kind: str, name: str, namespace: str) -> list[Any] | None:
        """The rules of the Role (in ``namespace``) or ClusterRole ``name``; None when it does not exist."""
        return self._role_rules({"kind": kind, "name": name}, namespace)[2]

    def visit(self, user: UserInfo, namespace: str) -> Iterator[tuple[RuleSource, dict[str, Any] | None, str]]:
        """Every (source, rule, error) that applies to ``user`` in ``namespace`` ("" = cluster scope only), in
        RBAC's order: ClusterRoleBindings, then the namespace's RoleBindings; a missing role yields an error."""
        keys = subject_keys(user)
        for subject in keys:
            for name in sorted(self._cluster.get(subject, ())):
                binding = self._store.get(_CLUSTER_ROLE_BINDINGS, "", name)
                if binding is not None:
                    yield from self._rules_of("ClusterRoleBinding", name, binding, "", subject)
        if not namespace:
            return
        for subject in keys:
            for name in sorted(self._namespaced.get((namespace, subject), ())):
                binding = self._store.get(_ROLE_BINDINGS, namespace, name)
                if binding is not None:
                    yield from self._rules_of("RoleBinding", f"{name}/{namespace}", binding, namespace, subject)

    def _rules_of(
        self, binding_kind: str, binding_name: str, binding: dict[str, Any], namespace: str, subject: SubjectKey
    ) -> Iterator[tuple[RuleSource, dict[str, Any] | None, str]]:
        kind, name, rules = self._role_rules(binding.get("roleRef"), namespace)
        source = RuleSource(binding_kind, binding_name, kind, name, _describe(subject))
        if rules is None:
            plural = "clusterrole" if kind == "ClusterRole" else "role"
            yield source, None, f'{plural}.{RBAC_GROUP} "{name}" not found'
            return
        for rule in rules:
            if isinstance(rule, dict):
                yield source, rule, ""

    def _resolve(self, user: UserInfo, namespace: str) -> _Resolved:
        """The user's compiled rules in ``namespace``, cached until any role or binding changes."""
        key = (user.username, user.groups, namespace)
        resolved = self._resolved.get(key)
        if resolved is None:
            rules: list[tuple[str, CompiledRule]] = []
            problems: list[str] = []
            for source, rule, error in self.visit(user, namespace):
                if rule is not None:
                    rules.append((f"RBAC: allowed by {source}", compile_rule(rule)))
                if error:
                    problems.append(error)
            if len(self._resolved) >= _CACHE_LIMIT:
                self._resolved.clear()
            resolved = self._resolved[key] = (rules, problems)
        return resolved

    def authorize(self, attributes: Attributes) -> Decision:
        """Allowed when ``system:masters`` or a bound rule allows it; otherwise no opinion, with the errors met."""
        if MASTERS in attributes.user.groups:
            return Decision(True)
        rules, problems = self._resolve(attributes.user, attributes.namespace)
        for reason, rule in rules:
            if rule.allows(attributes):
                return Decision(True, reason)
        if not problems:
            return Decision(False)
        joined = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        return Decision(False, f"RBAC: {joined}")

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[dict[str, Any]], bool]:
        """Every rule that applies to ``user`` in ``namespace`` and whether the list is incomplete (a missing role)."""
        if MASTERS in user.groups:
            return list(ALL_RULES), False
        rules: list[dict[str, Any]] = []
        incomplete = False
        for _source, rule, error in self.visit(user, namespace):
            if rule is not None:
                rules.append(rule)
            incomplete = incomplete or bool(error)
        return rules, incomplete
