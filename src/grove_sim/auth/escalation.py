"""RBAC's escalation prevention: nobody grants, through a role or a binding, permissions they do not hold.

As kube-apiserver's RBAC storage does, on every create or update of a Role or ClusterRole the writer must be in
``system:masters``, be allowed ``escalate`` on it, or already hold every permission its rules grant (in the Role's
namespace; cluster-wide for a ClusterRole). Of a RoleBinding or ClusterRoleBinding, the writer must be in
``system:masters``, be allowed ``bind`` on the role it references, or hold every permission of that role. The refusal
is upstream's 403 listing the missing permissions (``ConfirmNoEscalation``, rules broken down per verb, resource and
name, then merged per resource as ``CompactRules`` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from grove_sim.auth.attributes import Attributes
from grove_sim.auth.authentication import UserInfo
from grove_sim.auth.rbac import MASTERS, RBAC_GROUP, RBACAuthorizer
from grove_sim.machinery import errors

__all__ = ["ESCALATION_KINDS", "check_escalation", "covers"]

ESCALATION_KINDS: Final = frozenset({"roles", "clusterroles", "rolebindings", "clusterrolebindings"})

_Rule = Mapping[str, Any]


def _list(rule: _Rule, key: str) -> list[str]:
    values = rule.get(key)
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def _breakdown(rule: _Rule) -> list[dict[str, list[str]]]:
    """One rule per (group, resource, verb[, name]) and per (URL, verb): upstream's ``BreakdownRule``."""
    parts: list[dict[str, list[str]]] = []
    names = _list(rule, "resourceNames")
    for group in _list(rule, "apiGroups"):
        for resource in _list(rule, "resources"):
            for verb in _list(rule, "verbs"):
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                parts += [{**base, "resourceNames": [n]} for n in names] if names else [base]
    for url in _list(rule, "nonResourceURLs"):
        parts += [{"nonResourceURLs": [url], "verbs": [verb]} for verb in _list(rule, "verbs")]
    return parts


def _has_all(owner: list[str], wanted: list[str]) -> bool:
    return all(value in owner for value in wanted)


def _resources_covered(owner: list[str], wanted: list[str]) -> bool:
    if "*" in owner or _has_all(owner, wanted):
        return True
    return all("/" in w and f"*/{w.split('/', 1)[1]}" in owner for w in wanted)


def _url_covered(owner: list[str], url: str) -> bool:
    return any(o == url or (o.endswith("*") and url.startswith(o.rstrip("*"))) for o in owner)


def _rule_covers(owner: _Rule, part: dict[str, list[str]]) -> bool:
    """Upstream's ``ruleCovers``: every verb, group, resource, name and URL of ``part`` is one of ``owner``'s."""
    verbs = _list(owner, "verbs")
    groups = _list(owner, "apiGroups")
    owner_names = _list(owner, "resourceNames")
    wanted_names = part.get("resourceNames", [])
    return (
        ("*" in verbs or _has_all(verbs, part["verbs"]))
        and ("*" in groups or _has_all(groups, part.get("apiGroups", [])))
        and _resources_covered(_list(owner, "resources"), part.get("resources", []))
        and all(_url_covered(_list(owner, "nonResourceURLs"), url) for url in part.get("nonResourceURLs", []))
        and (not owner_names or (bool(wanted_names) and _has_all(owner_names, wanted_names)))
    )


def covers(owned: Iterable[_Rule], granted: Iterable[_Rule]) -> list[dict[str, list[str]]]:
    """The broken-down parts of ``granted`` that no rule of ``owned`` covers (empty: all covered)."""
    owned = list(owned)
    return [part for rule in granted for part in _breakdown(rule) if not any(_rule_covers(o, part) for o in owned)]


def _compact(parts: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """Merge the verbs of parts that differ only in verb (upstream's ``CompactRules``)."""
    merged: dict[tuple[tuple[str, ...], ...], dict[str, list[str]]] = {}
    for part in parts:
        key = tuple(tuple(part.get(k, [])) for k in ("apiGroups", "resources", "resourceNames", "nonResourceURLs"))
        if key in merged:
            merged[key]["verbs"] = [*merged[key]["verbs"], *part["verbs"]]
        else:
            merged[key] = {k: list(v) for k, v in part.items()}
    return list(merged.values())


def _go_strings(values: list[str]) -> str:
    """Go's ``%q`` of a ``[]string``."""
    return "[" + " ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def _compact_string(part: dict[str, list[str]]) -> str:
    fields = [
        ("APIGroups", part.get("apiGroups")),
        ("Resources", part.get("resources")),
        ("NonResourceURLs", part.get("nonResourceURLs")),
        ("ResourceNames", part.get("resourceNames")),
        ("Verbs", part.get("verbs")),
    ]
    return "{" + ", ".join(f"{label}:{_go_strings(values)}" for label, values in fields if values) + "}"


def _confirm_no_escalation(
    authorizer: RBACAuthorizer, user: UserInfo, namespace: str, granted: list[Any], plural: str, name: str
) -> None:
    owned, incomplete = authorizer.rules_for(user, namespace)
    missing = covers(owned, [r for r in granted if isinstance(r, dict)])
    if not missing:
        return
    lines = sorted({_compact_string(part) for part in _compact(missing)})
    why = (
        f'user "{user.username}" (groups={_go_strings(list(user.groups))}) is attempting to grant RBAC permissions '
        "not currently held:\n" + "\n".join(lines)
    )
    if incomplete:
        why += "; resolution errors: [a referenced role was not found]"
    raise errors.forbidden(RBAC_GROUP, plural, name, why)


def check_escalation(
    authorizer: RBACAuthorizer, user: UserInfo, plural: str, namespace: str, obj: dict[str, Any]
) -> None:
    """Raise upstream's 403 (or the referenced role's 404) when writing ``obj`` would escalate ``user``'s rights."""
    if MASTERS in user.groups:
        return
    name = str((obj.get("metadata") or {}).get("name") or "")
    if plural in ("roles", "clusterroles"):
        escalate = Attributes(user, "escalate", group=RBAC_GROUP, resource=plural, namespace=namespace, name=name)
        if not authorizer.authorize(escalate).allowed:
            rules = obj.get("rules")
            _confirm_no_escalation(authorizer, user, namespace, rules if isinstance(rules, list) else [], plural, name)
        return
    ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
    assert isinstance(ref, dict)
    kind, role_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    role_plural = "clusterroles" if kind == "ClusterRole" else "roles"
    role_namespace = "" if kind == "ClusterRole" else namespace
    bind = Attributes(user, "bind", group=RBAC_GROUP, resource=role_plural, namespace=namespace, name=role_name)
    if authorizer.authorize(bind).allowed:
        return
    rules = authorizer.role_rules(kind, role_name, role_namespace)
    if rules is None:
        raise errors.not_found(RBAC_GROUP, role_plural, role_name)
    _confirm_no_escalation(authorizer, user, namespace, rules, plural, name)
