"""The other core/v1 kinds grove-sim serves: Namespaces, Nodes and Events (ServiceAccounts need only metadata).

Namespace finalizers are qualified names; node taints have a qualified key, a label value and a supported effect,
once per (key, effect); a ``v1`` Event without ``eventTime`` belongs to its involved object's namespace (the legacy
checks of ``ValidateEventCreate``), an ``events.k8s.io/v1`` Event needs ``eventTime`` and a Normal or Warning type.
"""

from __future__ import annotations

from typing import Any, Final

from grove_sim.validation.field import (
    Cause,
    duplicate,
    get_list,
    get_map,
    get_str,
    invalid,
    not_supported,
    required,
)
from grove_sim.validation.names import DNS1123_SUBDOMAIN, LABEL_VALUE, QUALIFIED_NAME

__all__ = ["validate_event", "validate_events_v1_event", "validate_namespace", "validate_node"]

_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def validate_namespace(namespace: dict[str, Any]) -> list[Cause]:
    """``ValidateNamespace`` beyond metadata: ``spec.finalizers`` are qualified names."""
    path = "spec.finalizers"
    causes: list[Cause] = []
    for index, name in enumerate(get_list(get_map(namespace, "spec", ""), "finalizers", path, str)):
        causes += [invalid(f"{path}[{index}]", name, m) for m in QUALIFIED_NAME.errors(name)]
    return causes


def validate_node(node: dict[str, Any]) -> list[Cause]:
    """``ValidateNode`` for taints."""
    path = "spec.taints"
    causes: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for index, taint in enumerate(get_list(get_map(node, "spec", ""), "taints", path)):
        at = f"{path}[{index}]"
        key = get_str(taint, "key", path)
        causes += [invalid(f"{at}.key", key, m) for m in QUALIFIED_NAME.errors(key)]
        value = get_str(taint, "value", path)
        causes += [invalid(f"{at}.value", value, m) for m in LABEL_VALUE.errors(value)]
        effect = get_str(taint, "effect", path)
        if not effect:
            causes.append(required(f"{at}.effect"))
        elif effect not in _EFFECTS:
            causes.append(not_supported(f"{at}.effect", effect, _EFFECTS))
        if (key, effect) in seen:
            causes.append(duplicate(at, f"{key}={value}:{effect}"))
        seen.add((key, effect))
    return causes


def validate_event(event: dict[str, Any]) -> list[Cause]:
    """The legacy (``v1``) Event checks: the involved object's namespace is the Event's own."""
    namespace = (event.get("metadata") or {}).get("namespace") or ""
    involved = get_map(event, "involvedObject", "")
    involved_namespace = get_str(involved, "namespace", "involvedObject")
    causes: list[Cause] = []
    if not event.get("eventTime"):
        matches = namespace in ("", "default") if not involved_namespace else namespace == involved_namespace
        if not matches:
            causes.append(invalid("involvedObject.namespace", involved_namespace, "does not match event.namespace"))
    causes += [invalid("namespace", namespace, m) for m in DNS1123_SUBDOMAIN.errors(namespace)] if namespace else []
    return causes


def validate_events_v1_event(event: dict[str, Any]) -> list[Cause]:
    """The strict checks an ``events.k8s.io/v1`` Event adds: ``eventTime`` set, ``type`` Normal or Warning."""
    causes: list[Cause] = []
    if not event.get("eventTime"):
        causes.append(required("eventTime"))
    kind = get_str(event, "type", "")
    if kind not in ("Normal", "Warning"):
        causes.append(invalid("type", "", f"has invalid value: {kind}"))
    return causes
