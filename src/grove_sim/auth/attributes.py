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

__all__ = ["Attributes", "CompiledRule", "Decision", "compile_rule", "forbidden", "rule_allows"]


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


def _strings(rule: Mapping[str, Any], key: str) -> frozenset[str]:
    values = rule.get(key)
    return frozenset(v for v in values if isinstance(v, str)) if isinstance(values, list) else frozenset()


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """A ``PolicyRule`` as sets, so matching a request is a few set lookups (RBAC's ``RuleAllows``)."""

    verbs: frozenset[str]
    groups: frozenset[str]
    resources: frozenset[str]
    names: frozenset[str]
    urls: tuple[str, ...]

    def allows(self, attributes: Attributes) -> bool:
        """Whether this rule allows the request."""
        if attributes.verb not in self.verbs and "*" not in self.verbs:
            return False
        if not attributes.resource_request:
            path = attributes.path
            return any(
                url == "*" or url == path or (url.endswith("*") and path.startswith(url.rstrip("*")))
                for url in self.urls
            )
        if attributes.group not in self.groups and "*" not in self.groups:
            return False
        resources = self.resources
        sub = attributes.subresource
        if not ("*" in resources or attributes.combined_resource in resources or (sub and f"*/{sub}" in resources)):
            return False
        return not self.names or attributes.name in self.names


def compile_rule(rule: Mapping[str, Any]) -> CompiledRule:
    """The set form of a ``PolicyRule`` dict."""
    return CompiledRule(
        verbs=_strings(rule, "verbs"),
        groups=_strings(rule, "apiGroups"),
        resources=_strings(rule, "resources"),
        names=_strings(rule, "resourceNames"),
        urls=tuple(sorted(_strings(rule, "nonResourceURLs"))),
    )


def rule_allows(attributes: Attributes, rule: Mapping[str, Any]) -> bool:
    """Whether one ``PolicyRule`` allows the request (RBAC's ``RuleAllows``)."""
    return compile_rule(rule).allows(attributes)


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
