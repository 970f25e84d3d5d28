"""What an authorizer decides on: a request's attributes, RBAC's rule matching and kube-apiserver's 403 wording.

``Attributes`` is kube-apiserver's ``authorizer.Attributes``: the user, the verb, and either the resource coordinates
(group, resource, subresource, namespace, name) or a non-resource path. ``rule_allows`` is RBAC's ``RuleAllows``
(``*`` for verbs, groups and resources; ``resource/subresource`` and ``*/subresource``; resourceNames; non-resource
URLs with a trailing ``*``), and ``forbidden`` builds the Status the authorization filter answers with, word for word.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grove_sim.auth.authentication import UserInfo
from grove_sim.machinery import errors

__all__ = ["Attributes", "Decision", "forbidden", "rule_allows"]


@dataclass(frozen=True, slots=True)
class Attributes:
    """One request as an authorizer sees it (``authorizer.AttributesRecord``)."""

    user: UserInfo
    verb: str
    resource_request: bool = True
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def combined_resource(self) -> str:
        """``resource/subresource`` as rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorizer's answer and its reason (``RBAC: allowed by ...`` or why nothing allowed it)."""

    allowed: bool
    reason: str = ""


def _strings(rule: Mapping[str, Any], key: str) -> list[str]:
    values = rule.get(key)
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def _resource_matches(resources: list[str], combined: str, subresource: str) -> bool:
    for resource in resources:
        if resource == "*" or resource == combined:
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def _url_matches(urls: list[str], path: str) -> bool:
    for url in urls:
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attributes: Attributes, rule: Mapping[str, Any]) -> bool:
    """Whether one ``PolicyRule`` allows the request (RBAC's ``RuleAllows``)."""
    verbs = _strings(rule, "verbs")
    if "*" not in verbs and attributes.verb not in verbs:
        return False
    if not attributes.resource_request:
        return _url_matches(_strings(rule, "nonResourceURLs"), attributes.path)
    groups = _strings(rule, "apiGroups")
    if "*" not in groups and attributes.group not in groups:
        return False
    if not _resource_matches(_strings(rule, "resources"), attributes.combined_resource, attributes.subresource):
        return False
    names = _strings(rule, "resourceNames")
    return not names or attributes.name in names


def forbidden(attributes: Attributes, reason: str = "") -> errors.ApiError:
    """The 403 kube-apiserver's authorization filter answers (``responsewriters.ForbiddenStatusError``)."""
    user = attributes.user.username
    if not attributes.resource_request:
        text = f'User "{user}" cannot {attributes.verb} path "{attributes.path}"'
    elif attributes.namespace:
        text = (
            f'User "{user}" cannot {attributes.verb} resource "{attributes.combined_resource}" in API group '
            f'"{attributes.group}" in the namespace "{attributes.namespace}"'
        )
    else:
        text = (
            f'User "{user}" cannot {attributes.verb} resource "{attributes.combined_resource}" in API group '
            f'"{attributes.group}" at the cluster scope'
        )
    if reason:
        text = f"{text}: {reason}"
    if not attributes.resource_request or not attributes.resource:
        return errors.ApiError(403, "Forbidden", f"forbidden: {text}")
    qualified = f"{attributes.resource}.{attributes.group}" if attributes.group else attributes.resource
    details: dict[str, Any] = {"kind": attributes.resource}
    if attributes.group:
        details["group"] = attributes.group
    if attributes.name:
        details["name"] = attributes.name
        return errors.ApiError(403, "Forbidden", f'{qualified} "{attributes.name}" is forbidden: {text}', details)
    return errors.ApiError(403, "Forbidden", f"{qualified} is forbidden: {text}", details)
