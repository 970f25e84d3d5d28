"""Pod spec validation: ``ValidatePodSpec`` and what ``ValidatePodCreate`` adds, as kube-apiserver does it.

The spec rules beyond containers and volumes (``grove_sim.validation.containers``): restart and DNS policies, node
selector labels, tolerations, scheduling gates and readiness gates, topology spread constraints, hostname and
subdomain (DNS-1123 labels), service account, node and priority class names, and ``activeDeadlineSeconds``. The
rules form a table of sections by the spec fields each reads, so that a write can have only the rules on the fields
it changed checked: a known-valid spec's per-pod fields, an update's changed fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from grove_sim.validation.containers import validate_containers, validate_init_containers, validate_volumes
from grove_sim.validation.field import (
    Cause,
    changed_keys,
    duplicate,
    enum_causes,
    forbidden,
    get_int,
    get_list,
    get_map,
    get_str,
    get_str_map,
    invalid,
    not_supported,
    required,
)
from grove_sim.validation.meta import SUBDOMAIN_NAMES, validate_labels
from grove_sim.validation.names import DNS1123_LABEL, DNS1123_SUBDOMAIN, LABEL_VALUE, QUALIFIED_NAME, inclusive_range

__all__ = [
    "PER_POD_FIELDS",
    "validate_pod",
    "validate_pod_changes",
    "validate_pod_create",
    "validate_pod_per_pod_fields",
    "validate_pod_spec",
    "validate_tolerations",
]

_MAX_INT32: Final = 2**31 - 1
_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_OPERATORS: Final = ("Equal", "Exists")
_UNSATISFIABLE: Final = ("DoNotSchedule", "ScheduleAnyway")
PER_POD_FIELDS: Final = frozenset({"hostname", "subdomain", "nodeName"})
"""Pod spec fields that differ between the replicas of one workload (everything else comes from its template)."""


def _qualified(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, m) for m in QUALIFIED_NAME.errors(value)]


def _subdomain_field(spec: dict[str, Any], key: str) -> list[Cause]:
    value = spec.get(key)
    if not value or (value.__class__ is str and value in DNS1123_SUBDOMAIN.valid):
        return []
    value = get_str(spec, key, "spec")
    return [invalid(f"spec.{key}", value, m) for m in SUBDOMAIN_NAMES.errors(value, False)]


def _label_field(spec: dict[str, Any], key: str) -> list[Cause]:
    value = spec.get(key)
    if not value or (value.__class__ is str and value in DNS1123_LABEL.valid):
        return []
    value = get_str(spec, key, "spec")
    return [invalid(f"spec.{key}", value, m) for m in DNS1123_LABEL.errors(value)]


def _enum(spec: dict[str, Any], key: str, supported: tuple[str, ...]) -> list[Cause]:
    return [] if spec.get(key) in supported else enum_causes(spec, key, "spec", supported)


def validate_tolerations(tolerations: list[dict[str, Any]], path: str) -> list[Cause]:
    """``ValidateTolerations``."""
    causes: list[Cause] = []
    keys = QUALIFIED_NAME.valid
    for index, toleration in enumerate(tolerations):
        key = toleration.get("key")
        if (
            key.__class__ is str
            and key in keys
            and toleration.get("operator") == "Exists"
            and not toleration.get("value")
            and toleration.get("effect") in _EFFECTS
            and toleration.get("tolerationSeconds") is None
        ):
            continue
        at = f"{path}[{index}]"
        key = get_str(toleration, "key", path)
        operator = get_str(toleration, "operator", path)
        effect = get_str(toleration, "effect", path)
        value = get_str(toleration, "value", path)
        if key:
            causes += _qualified(key, f"{at}.key")
        elif operator != "Exists":
            detail = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
            causes.append(invalid(f"{at}.operator", operator, detail))
        if get_int(toleration, "tolerationSeconds", path) is not None and effect != "NoExecute":
            causes.append(invalid(f"{at}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):
            messages = LABEL_VALUE.errors(value)
            if messages:
                causes.append(invalid(f"{at}.operator", value, ";".join(messages)))
        elif operator == "Exists":
            if value:
                causes.append(invalid(f"{at}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            causes.append(not_supported(f"{at}.operator", operator, _OPERATORS))
        if effect and effect not in _EFFECTS:
            causes.append(not_supported(f"{at}.effect", effect, _EFFECTS))
    return causes


def _scheduling_gates(gates: list[dict[str, Any]], path: str) -> list[Cause]:
    """``validateSchedulingGates``: qualified names, no duplicates."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for index, gate in enumerate(gates):
        name = get_str(gate, "name", path)
        causes += _qualified(name, f"{path}[{index}]")
        if name in seen:
            causes.append(duplicate(f"{path}[{index}]", name))
        seen.add(name)
    return causes


def _readiness_gates(gates: list[dict[str, Any]], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for index, gate in enumerate(gates):
        causes += _qualified(get_str(gate, "conditionType", path), f"{path}[{index}].conditionType")
    return causes


def _topology_spread(constraints: list[dict[str, Any]], path: str) -> list[Cause]:
    """The core of ``validateTopologySpreadConstraints``: skew, key and the unsatisfiable action."""
    causes: list[Cause] = []
    keys: set[tuple[str, str]] = set()
    for index, constraint in enumerate(constraints):
        at = f"{path}[{index}]"
        skew = get_int(constraint, "maxSkew", path) or 0
        if skew <= 0:
            causes.append(invalid(f"{at}.maxSkew", skew, "must be greater than zero"))
        key = get_str(constraint, "topologyKey", path)
        if not key:
            causes.append(required(f"{at}.topologyKey", "can not be empty"))
        else:
            causes += _qualified(key, f"{at}.topologyKey")
        action = get_str(constraint, "whenUnsatisfiable", path)
        if action not in _UNSATISFIABLE:
            causes.append(not_supported(f"{at}.whenUnsatisfiable", action, _UNSATISFIABLE))
        elif (key, action) in keys:
            causes.append(duplicate(f"{at}.{{topologyKey, whenUnsatisfiable}}", f"{key}, {action}"))
        keys.add((key, action))
    return causes


def _grace_period(spec: dict[str, Any]) -> list[Cause]:
    return [required("spec.terminationGracePeriodSeconds")] if spec.get("terminationGracePeriodSeconds") is None else []


def _containers_and_volumes(spec: dict[str, Any]) -> list[Cause]:
    volumes, causes = validate_volumes(get_list(spec, "volumes", "spec"), "spec.volumes")
    containers = get_list(spec, "containers", "spec")
    causes += validate_containers(containers, volumes, "spec.containers")
    if spec.get("initContainers"):
        init = get_list(spec, "initContainers", "spec")
        causes += validate_init_containers(init, containers, volumes, "spec.initContainers")
    return causes


def _node_selector(spec: dict[str, Any]) -> list[Cause]:
    selector = spec.get("nodeSelector")
    return validate_labels(get_str_map(spec, "nodeSelector", "spec"), "spec.nodeSelector") if selector else []


def _listed(
    key: str, check: Callable[[list[dict[str, Any]], str], list[Cause]]
) -> Callable[[dict[str, Any]], list[Cause]]:
    def section(spec: dict[str, Any]) -> list[Cause]:
        return check(get_list(spec, key, "spec"), f"spec.{key}") if spec.get(key) else []

    return section


def _deadline(spec: dict[str, Any]) -> list[Cause]:
    deadline = get_int(spec, "activeDeadlineSeconds", "spec")
    if deadline is not None and not 1 <= deadline <= _MAX_INT32:
        return [invalid("spec.activeDeadlineSeconds", deadline, inclusive_range(1, _MAX_INT32))]
    return []


def _preemption(spec: dict[str, Any]) -> list[Cause]:
    return _enum(spec, "preemptionPolicy", _PREEMPTION_POLICIES) if spec.get("preemptionPolicy") is not None else []


Section = tuple[frozenset[str], Callable[[dict[str, Any]], list[Cause]]]
_SECTIONS: Final[tuple[Section, ...]] = (
    (frozenset({"terminationGracePeriodSeconds"}), _grace_period),
    (frozenset({"volumes", "containers", "initContainers"}), _containers_and_volumes),
    (frozenset({"restartPolicy"}), lambda spec: _enum(spec, "restartPolicy", _RESTART_POLICIES)),
    (frozenset({"dnsPolicy"}), lambda spec: _enum(spec, "dnsPolicy", _DNS_POLICIES)),
    (frozenset({"nodeSelector"}), _node_selector),
    (frozenset({"readinessGates"}), _listed("readinessGates", _readiness_gates)),
    (frozenset({"schedulingGates"}), _listed("schedulingGates", _scheduling_gates)),
    (frozenset({"topologySpreadConstraints"}), _listed("topologySpreadConstraints", _topology_spread)),
    (frozenset({"serviceAccountName"}), lambda spec: _subdomain_field(spec, "serviceAccountName")),
    (frozenset({"nodeName"}), lambda spec: _subdomain_field(spec, "nodeName")),
    (frozenset({"activeDeadlineSeconds"}), _deadline),
    (frozenset({"hostname"}), lambda spec: _label_field(spec, "hostname")),
    (frozenset({"subdomain"}), lambda spec: _label_field(spec, "subdomain")),
    (frozenset({"tolerations"}), _listed("tolerations", validate_tolerations)),
    (frozenset({"priorityClassName"}), lambda spec: _subdomain_field(spec, "priorityClassName")),
    (frozenset({"preemptionPolicy"}), _preemption),
)
"""``ValidatePodSpec``'s rules by the spec fields each one reads, in upstream's order."""


def validate_pod_spec(spec: dict[str, Any], only: frozenset[str] | set[str] | None = None) -> list[Cause]:
    """``ValidatePodSpec`` for the rules above; with ``only``, just the rules reading those fields (the rest of the
    spec being known valid)."""
    causes: list[Cause] = []
    for fields, check in _SECTIONS:
        if only is None or not fields.isdisjoint(only):
            causes += check(spec)
    return causes


def validate_pod_per_pod_fields(pod: dict[str, Any]) -> list[Cause]:
    """The rules on ``PER_POD_FIELDS``, the fields that tell apart the pods of one template: what remains to check
    of a pod whose spec otherwise equals one already admitted."""
    return validate_pod_spec(get_map(pod, "spec", ""), PER_POD_FIELDS)


def validate_pod_changes(pod: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """The spec rules on the fields an update changed: the stored pod was valid, so the others still are."""
    spec = get_map(pod, "spec", "")
    return validate_pod_spec(spec, changed_keys(spec, old.get("spec") or {}))


def validate_pod(pod: dict[str, Any]) -> list[Cause]:
    """``validatePodMetadataAndSpec`` minus metadata (validated for every kind by the caller): create and update."""
    return validate_pod_spec(get_map(pod, "spec", ""))


def validate_pod_create(pod: dict[str, Any]) -> list[Cause]:
    """What ``ValidatePodCreate`` adds: no ephemeral containers, no node while scheduling gates remain."""
    spec = get_map(pod, "spec", "")
    causes: list[Cause] = []
    if spec.get("ephemeralContainers"):
        causes.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        causes.append(forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return causes
