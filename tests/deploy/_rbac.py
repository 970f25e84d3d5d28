"""What a user may do under the rendered RBAC objects, and what it asked for according to grove-sim's audit log.

RBAC's rules as kube-apiserver's authorizer applies them: a ClusterRoleBinding grants its role everywhere, a
RoleBinding only in its namespace; a rule allows a request when its apiGroups, resources (``pods/binding`` for a
subresource) and verbs name it (or ``*``) and, when it lists resourceNames, the request names one of them (so a
create, list or watch never matches such a rule).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Request:
    """One audited resource request."""

    verb: str
    group: str
    resource: str
    """``pods`` or ``pods/binding``."""
    namespace: str
    """"" for a cluster-scoped object or a request across all namespaces."""
    name: str

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else " (cluster-wide)"
        named = f" {self.name}" if self.name else ""
        return f"{self.verb} {self.resource}.{self.group or 'core'}{named}{where}"


@dataclass(frozen=True, slots=True)
class Grant:
    """One (verb, group, resource) a rule grants, with its resourceNames, in one namespace or everywhere ("")."""

    verb: str
    group: str
    resource: str
    names: tuple[str, ...]
    namespace: str
    role: str

    def allows(self, request: Request) -> bool:
        """Whether this grant lets ``request`` through."""
        return (
            self.verb in ("*", request.verb)
            and self.group in ("*", request.group)
            and self.resource in ("*", request.resource)
            and (not self.names or request.name in self.names)
            and (not self.namespace or self.namespace == request.namespace)
        )

    def __str__(self) -> str:
        names = f" {list(self.names)}" if self.names else ""
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.role}: {self.verb} {self.resource}.{self.group or 'core'}{names}{where}"


def _subjects(binding: Obj) -> set[str]:
    users = set()
    for subject in binding.get("subjects") or ():
        if subject.get("kind") == "ServiceAccount":
            users.add(f"system:serviceaccount:{subject['namespace']}:{subject['name']}")
        elif subject.get("kind") == "User":
            users.add(subject["name"])
    return users


def rule_grants(rules: Iterable[Obj], namespace: str, role: str) -> list[Grant]:
    """Every (verb, group, resource) of ``rules``, each a :class:`Grant`."""
    return [
        Grant(verb, group, resource, tuple(rule.get("resourceNames") or ()), namespace, role)
        for rule in rules
        for group in rule.get("apiGroups") or ()
        for resource in rule.get("resources") or ()
        for verb in rule.get("verbs") or ()
    ]


def grants_of(objects: Iterable[Obj], user: str) -> list[Grant]:
    """Everything the rendered bindings grant ``user``."""
    objects = list(objects)
    roles = {(o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"]): o for o in objects}
    grants: list[Grant] = []
    for binding in objects:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding") or user not in _subjects(binding):
            continue
        namespace = (binding["metadata"].get("namespace") or "") if binding["kind"] == "RoleBinding" else ""
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], namespace if ref["kind"] == "Role" else "", ref["name"]))
        assert role is not None, f"{binding['kind']} {binding['metadata']['name']} names a missing {ref}"
        grants += rule_grants(role.get("rules") or (), namespace, f"{ref['kind']} {ref['name']}")
    return grants


def audited(path: Path, user: str) -> tuple[set[Request], set[str]]:
    """The resource requests ``user`` made according to the audit log, and the other URLs it asked for
    (discovery, /version: every authenticated user may read those, through system:discovery)."""
    requests: set[Request] = set()
    others: set[str] = set()
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event["user"]["username"] != user:
            continue
        ref = event.get("objectRef")
        if ref is None:
            others.add(event["requestURI"].split("?")[0])
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        requests.add(
            Request(event["verb"], ref.get("apiGroup") or "", resource, ref.get("namespace") or "", ref.get("name", ""))
        )
    return requests, others


def unselected_reads(path: Path, user: str, resource: str, selector: str) -> list[str]:
    """The list and watch requests of ``user`` for ``resource`` (core group) whose label selector is not
    ``selector``: RBAC cannot narrow a list by label, so only the program keeps itself from reading the rest."""
    found = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if event["user"]["username"] != user or event["verb"] not in ("list", "watch") or ref.get("apiGroup"):
            continue
        if ref.get("resource") == resource and parse_qs(urlsplit(event["requestURI"]).query).get("labelSelector") != [
            selector
        ]:
            found.append(event["requestURI"])
    return found


def denied(requests: Iterable[Request], grants: list[Grant]) -> list[str]:
    """The requests no grant allows, sorted."""
    return sorted({str(r) for r in requests if not any(g.allows(r) for g in grants)})


def unused(requests: Iterable[Request], grants: list[Grant]) -> list[Grant]:
    """The grants no request needed."""
    requests = list(requests)
    return [g for g in grants if not any(g.allows(r) for r in requests)]
