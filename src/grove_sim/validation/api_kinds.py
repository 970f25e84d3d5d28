"""Built-in kinds outside core/v1 that grove-sim serves: Leases, PriorityClasses, RBAC roles and their bindings,
HorizontalPodAutoscalers (autoscaling/v2).

Only what a client can get wrong in practice: lease durations, reserved ``system-`` priority classes and the
user-definable maximum, RBAC rules that name verbs, groups and resources, role references and subjects (a
RoleBinding's ``roleRef`` never changes), and an HPA's target, replica bounds and metric types.
"""

from __future__ import annotations

from typing import Any, Final

from grove_sim.validation.field import (
    Cause,
    forbidden,
    get_int,
    get_list,
    get_map,
    get_str,
    invalid,
    not_supported,
    required,
)
from grove_sim.validation.meta import PATH_SEGMENT_NAMES

__all__ = [
    "validate_cluster_role",
    "validate_cluster_role_binding",
    "validate_hpa",
    "validate_lease",
    "validate_priority_class",
    "validate_priority_class_update",
    "validate_role",
    "validate_role_binding",
    "validate_role_binding_update",
]

_RBAC: Final = "rbac.authorization.k8s.io"
_SYSTEM_CLASSES: Final = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
_HIGHEST_USER_PRIORITY: Final = 1_000_000_000
_METRIC_TYPES: Final = ("Object", "Pods", "Resource", "External", "ContainerResource")
_TARGET_TYPES: Final = ("Utilization", "Value", "AverageValue")


def validate_lease(lease: dict[str, Any]) -> list[Cause]:
    """``ValidateLeaseSpec``: a positive duration, non-negative transitions."""
    spec = get_map(lease, "spec", "")
    causes: list[Cause] = []
    duration = get_int(spec, "leaseDurationSeconds", "spec")
    if duration is not None and duration <= 0:
        causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = get_int(spec, "leaseTransitions", "spec")
    if transitions is not None and transitions < 0:
        causes.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return causes


def validate_priority_class(priority_class: dict[str, Any]) -> list[Cause]:
    """``ValidatePriorityClass``: ``system-`` names are reserved; user classes stay below one billion."""
    name = str((priority_class.get("metadata") or {}).get("name") or "")
    value = get_int(priority_class, "value", "") or 0
    causes: list[Cause] = []
    if name.startswith("system-"):
        known = _SYSTEM_CLASSES.get(name)
        why = (
            f"{name} is not a known system priority class"
            if known is None
            else f"value of {name} PriorityClass must be {known}"
            if known != value
            else f"globalDefault of {name} PriorityClass must be false"
            if priority_class.get("globalDefault")
            else ""
        )
        if why:
            detail = f"priority class names with 'system-' prefix are reserved for system use only. error: {why}"
            causes.append(forbidden("metadata.name", detail))
    elif value > _HIGHEST_USER_PRIORITY:
        causes.append(
            forbidden("value", f"maximum allowed value of a user defined priority is {_HIGHEST_USER_PRIORITY}")
        )
    policy = get_str(priority_class, "preemptionPolicy", "")
    if priority_class.get("preemptionPolicy") is not None and policy not in ("PreemptLowerPriority", "Never"):
        causes.append(not_supported("preemptionPolicy", policy, ("PreemptLowerPriority", "Never")))
    return causes


def validate_priority_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``value`` and ``preemptionPolicy`` never change."""
    causes: list[Cause] = []
    for key in ("value", "preemptionPolicy"):
        if new.get(key) != old.get(key):
            causes.append(invalid(key, new.get(key), "field is immutable"))
    return causes


def validate_role(role: dict[str, Any]) -> list[Cause]:
    """``ValidateRole``: each rule names verbs, and API groups and resources (a Role has no non-resource URLs)."""
    return _policy_rules(role, namespaced=True)


def validate_cluster_role(role: dict[str, Any]) -> list[Cause]:
    """``ValidateClusterRole``: as a Role's rules, but a rule may name non-resource URLs instead of resources."""
    return _policy_rules(role, namespaced=False)


def _policy_rules(role: dict[str, Any], *, namespaced: bool) -> list[Cause]:
    """``ValidatePolicyRule`` for every rule."""
    causes: list[Cause] = []
    for index, rule in enumerate(get_list(role, "rules", "")):
        at = f"rules[{index}]"
        if not get_list(rule, "verbs", at, str):
            causes.append(required(f"{at}.verbs", "verbs must contain at least one value"))
        urls = get_list(rule, "nonResourceURLs", at, str)
        if urls:
            if namespaced:
                causes.append(
                    invalid(f"{at}.nonResourceURLs", urls, "namespaced rules cannot apply to non-resource URLs")
                )
            elif any(get_list(rule, key, at, str) for key in ("apiGroups", "resources", "resourceNames")):
                detail = "rules cannot apply to both regular resources and non-resource URLs"
                causes.append(invalid(f"{at}.nonResourceURLs", urls, detail))
            continue
        if not get_list(rule, "apiGroups", at, str):
            causes.append(required(f"{at}.apiGroups", "resource rules must supply at least one api group"))
        if not get_list(rule, "resources", at, str):
            causes.append(required(f"{at}.resources", "resource rules must supply at least one resource"))
    return causes


def _go_role_ref(ref: dict[str, Any]) -> dict[str, Any]:
    """The internal ``rbac.RoleRef`` as upstream prints it (Go field names)."""
    return {"APIGroup": ref.get("apiGroup") or "", "Kind": ref.get("kind") or "", "Name": ref.get("name") or ""}


def validate_role_binding(binding: dict[str, Any]) -> list[Cause]:
    """``ValidateRoleBinding``: a Role or ClusterRole of the RBAC group, and well-formed subjects."""
    return _binding(binding, ("Role", "ClusterRole"), namespaced=True)


def validate_cluster_role_binding(binding: dict[str, Any]) -> list[Cause]:
    """``ValidateClusterRoleBinding``: a ClusterRole, and ServiceAccount subjects that name their namespace."""
    return _binding(binding, ("ClusterRole",), namespaced=False)


def _binding(binding: dict[str, Any], kinds: tuple[str, ...], *, namespaced: bool) -> list[Cause]:
    ref = get_map(binding, "roleRef", "")
    causes: list[Cause] = []
    group = get_str(ref, "apiGroup", "roleRef")
    if group != _RBAC:
        causes.append(not_supported("roleRef.apiGroup", group, (_RBAC,)))
    kind = get_str(ref, "kind", "roleRef")
    if kind not in kinds:
        causes.append(not_supported("roleRef.kind", kind, kinds))
    name = get_str(ref, "name", "roleRef")
    if not name:
        causes.append(required("roleRef.name"))
    else:
        causes += [invalid("roleRef.name", name, m) for m in PATH_SEGMENT_NAMES.errors(name, False)]
    for index, subject in enumerate(get_list(binding, "subjects", "")):
        causes += _subject(subject, f"subjects[{index}]", namespaced=namespaced)
    return causes


def _subject(subject: dict[str, Any], path: str, *, namespaced: bool) -> list[Cause]:
    """``ValidateRoleBindingSubject``."""
    causes: list[Cause] = []
    name = get_str(subject, "name", path)
    if not name:
        causes.append(required(f"{path}.name"))
    kind = get_str(subject, "kind", path)
    group = get_str(subject, "apiGroup", path)
    if kind == "ServiceAccount":
        if group:
            causes.append(not_supported(f"{path}.apiGroup", group, ("",)))
        if not namespaced and not get_str(subject, "namespace", path):
            causes.append(required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if group != _RBAC:
            causes.append(not_supported(f"{path}.apiGroup", group, (_RBAC,)))
    else:
        causes.append(not_supported(f"{path}.kind", kind, ("ServiceAccount", "User", "Group")))
    return causes


def validate_role_binding_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """A RoleBinding's ``roleRef`` never changes."""
    before, after = old.get("roleRef") or {}, new.get("roleRef") or {}
    return [] if before == after else [invalid("roleRef", _go_role_ref(after), "cannot change roleRef")]


def validate_hpa(hpa: dict[str, Any]) -> list[Cause]:
    """``ValidateHorizontalPodAutoscaler`` (autoscaling/v2): target, replica bounds, metric types."""
    spec = get_map(hpa, "spec", "")
    causes: list[Cause] = []
    target = get_map(spec, "scaleTargetRef", "spec")
    for key in ("kind", "name"):
        value = get_str(target, key, "spec.scaleTargetRef")
        if not value:
            causes.append(required(f"spec.scaleTargetRef.{key}"))
        else:
            causes += [invalid(f"spec.scaleTargetRef.{key}", value, m) for m in PATH_SEGMENT_NAMES.errors(value, False)]
    minimum = get_int(spec, "minReplicas", "spec")
    if minimum is not None and minimum < 1:
        causes.append(invalid("spec.minReplicas", minimum, "must be greater than or equal to 1"))
    maximum = get_int(spec, "maxReplicas", "spec") or 0
    if maximum < 1:
        causes.append(invalid("spec.maxReplicas", maximum, "must be greater than 0"))
    if minimum is not None and maximum < minimum:
        causes.append(invalid("spec.maxReplicas", maximum, "must be greater than or equal to `minReplicas`"))
    for index, metric in enumerate(get_list(spec, "metrics", "spec")):
        causes += _metric(metric, f"spec.metrics[{index}]")
    return causes


def _metric(metric: dict[str, Any], path: str) -> list[Cause]:
    kind = get_str(metric, "type", path)
    if not kind:
        return [required(f"{path}.type", "must specify a metric source type")]
    if kind not in _METRIC_TYPES:
        return [not_supported(f"{path}.type", kind, _METRIC_TYPES)]
    if kind != "Resource":
        return []
    source = get_map(metric, "resource", path)
    if not source:
        return [required(f"{path}.resource", "must populate information for the given metric source")]
    causes: list[Cause] = []
    if not get_str(source, "name", f"{path}.resource"):
        causes.append(required(f"{path}.resource.name", "must specify a resource name"))
    target = get_map(source, "target", f"{path}.resource")
    target_type = get_str(target, "type", f"{path}.resource.target")
    if not target_type:
        causes.append(required(f"{path}.resource.target.type", "must specify a metric target type"))
    elif target_type not in _TARGET_TYPES:
        detail = "must be either Utilization, Value, or AverageValue"
        causes.append(invalid(f"{path}.resource.target.type", target_type, detail))
    return causes
