"""What the real apiserver's registry strategies do to objects before they are stored.

``PrepareForCreate``/``PrepareForUpdate`` (server-owned defaults such as pod phase, namespace finalizers, CRD
conditions, cluster IPs) and the light validation clients rely on: name rules, pods need containers, pod spec
immutability where schedulers depend on it, and, for custom resources, structural-schema defaulting, pruning and
validation through ``grove_sim.schema.structural``. Every rejection is a list of (field, reason, detail) causes
that the core turns into one 422 ``Status``.
"""

from __future__ import annotations

import copy
import re
import uuid
from typing import Any, Final

from grove_sim.registry.resources import ResourceInfo

__all__ = [
    "Cause",
    "custom_resource_causes",
    "name_causes",
    "new_uid",
    "pod_update_causes",
    "prepare_create",
    "validate_builtin",
]

Cause = tuple[str, str, str]
"""(field, reason, detail) of one ``field.Error``."""

_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_LABEL_1035: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_LABEL_1035_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
    "and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
    "'[a-z]([-a-z0-9]*[a-z0-9])?')"
)

_POD_UPDATE_FORBIDDEN: Final = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
    "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing "
    "tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)

# Pod spec fields an update may change (upstream ValidatePodUpdate), besides removing scheduling gates.
_POD_MUTABLE: Final = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates")


def name_causes(info: ResourceInfo, name: str) -> list[Cause]:
    """Name rules: DNS-1123 label for namespaces, DNS-1035 label for services, DNS-1123 subdomain otherwise."""
    if not name:
        return [("metadata.name", "FieldValueRequired", "Required value: name or generateName is required")]
    if info.group == "rbac.authorization.k8s.io":
        return _path_segment_causes(name)
    if info.key == ("", "namespaces"):
        pattern, message, limit = _LABEL, _LABEL_MSG, 63
    elif info.key == ("", "services"):
        pattern, message, limit = _LABEL_1035, _LABEL_1035_MSG, 63
    else:
        pattern, message, limit = _SUBDOMAIN, _SUBDOMAIN_MSG, 253
    if len(name) > limit:
        return [
            ("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": must be no more than {limit} characters')
        ]
    if not pattern.match(name):
        return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {message}')]
    return []


def _path_segment_causes(name: str) -> list[Cause]:
    """RBAC names are path segments (upstream ValidatePathSegmentName): colons are fine, as in `system:node`."""
    if name in (".", ".."):
        return [("metadata.name", "FieldValueInvalid", f"Invalid value: \"{name}\": may not be '{name}'")]
    for bad in ("/", "%"):
        if bad in name:
            return [("metadata.name", "FieldValueInvalid", f"Invalid value: \"{name}\": may not contain '{bad}'")]
    return []


def _condition(type_: str, status: str, now: str, reason: str = "", message: str = "") -> dict[str, Any]:
    cond: dict[str, Any] = {"type": type_, "status": status, "lastTransitionTime": now}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def _qos(pod: dict[str, Any]) -> str:
    containers = list((pod.get("spec") or {}).get("containers") or [])
    requests_any = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        requests_any = requests_any or bool(limits) or bool(requests)
        for res in ("cpu", "memory"):
            if res not in limits or (res in requests and requests[res] != limits[res]):
                guaranteed = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def prepare_create(info: ResourceInfo, obj: dict[str, Any], now: str, service_ips: list[int]) -> None:
    """Server-owned fields of a new object (in place): status resets and per-kind defaults."""
    key = info.key
    if info.has_status and key not in (("", "nodes"), ("apiextensions.k8s.io", "customresourcedefinitions")):
        obj.pop("status", None)
    if key == ("", "pods"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        for container in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
            if isinstance(container, dict):
                container.setdefault("imagePullPolicy", "IfNotPresent")
                container.setdefault("terminationMessagePath", "/dev/termination-log")
                container.setdefault("terminationMessagePolicy", "File")
                container.setdefault("resources", {})
        status: dict[str, Any] = {"phase": "Pending", "qosClass": _qos(obj)}
        if spec.get("schedulingGates"):
            status["conditions"] = [
                _condition(
                    "PodScheduled",
                    "False",
                    now,
                    "SchedulingGated",
                    "Scheduling is blocked due to non-empty scheduling gates",
                )
            ]
        obj["status"] = status
    elif key == ("", "namespaces"):
        obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
        obj["status"] = {"phase": "Active"}
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    elif key == ("", "services"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if not spec.get("clusterIP"):
            service_ips[0] += 1
            n = service_ips[0]
            spec["clusterIP"] = f"10.96.{(n >> 8) & 255}.{n & 255}"
        spec["clusterIPs"] = [spec["clusterIP"]]
        obj["status"] = {"loadBalancer": {}}
    elif key == ("", "serviceaccounts") or key == ("", "secrets"):
        if key == ("", "secrets"):
            obj.setdefault("type", "Opaque")
    elif key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        names = copy.deepcopy((obj.get("spec") or {}).get("names") or {})
        names.setdefault("singular", str(names.get("kind", "")).lower())
        names.setdefault("listKind", f"{names.get('kind', '')}List")
        obj["status"] = {
            "acceptedNames": names,
            "conditions": [
                _condition("NamesAccepted", "True", now, "NoConflicts", "no conflicts found"),
                _condition("Established", "True", now, "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "storedVersions": [v["name"] for v in (obj.get("spec") or {}).get("versions") or [] if v.get("storage")],
        }


def validate_builtin(info: ResourceInfo, obj: dict[str, Any]) -> list[Cause]:
    """The handful of built-in validations clients rely on."""
    causes: list[Cause] = []
    if info.key == ("", "pods"):
        spec = obj.get("spec") or {}
        containers = spec.get("containers")
        if not containers:
            causes.append(("spec.containers", "FieldValueRequired", "Required value"))
        seen: set[str] = set()
        for group in ("initContainers", "containers"):
            for i, container in enumerate(spec.get(group) or []):
                name = container.get("name") if isinstance(container, dict) else None
                path = f"spec.{group}[{i}]"
                if not name:
                    causes.append((f"{path}.name", "FieldValueRequired", "Required value"))
                elif name in seen:
                    causes.append((f"{path}.name", "FieldValueDuplicate", f'Duplicate value: "{name}"'))
                else:
                    seen.add(name)
                if isinstance(container, dict) and not container.get("image"):
                    causes.append((f"{path}.image", "FieldValueRequired", "Required value"))
    elif info.key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
        if obj["metadata"].get("name") != expected:
            causes.append(
                (
                    "metadata.name",
                    "FieldValueInvalid",
                    f'Invalid value: "{obj["metadata"].get("name")}": must be spec.names.plural+"."+spec.group',
                )
            )
        if not names.get("kind"):
            causes.append(("spec.names.kind", "FieldValueRequired", "Required value"))
        if not spec.get("versions"):
            causes.append(
                (
                    "spec.versions",
                    "FieldValueInvalid",
                    "Invalid value: null: must have exactly one version marked as storage version",
                )
            )
    return causes


def _strip_images(containers: Any) -> Any:
    if not isinstance(containers, list):
        return containers
    return [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c for c in containers]


def pod_update_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """Pod spec immutability: nodeName only via binding, scheduling gates only removed, most fields frozen."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    causes: list[Cause] = []
    if old_spec.get("nodeName") != new_spec.get("nodeName"):
        causes.append(
            (
                "spec.nodeName",
                "FieldValueForbidden",
                _POD_UPDATE_FORBIDDEN,
            )
        )
        return causes
    old_gates = [g.get("name") for g in old_spec.get("schedulingGates") or []]
    new_gates = [g.get("name") for g in new_spec.get("schedulingGates") or []]
    if any(g not in old_gates for g in new_gates):
        causes.append(
            (
                "spec.schedulingGates",
                "FieldValueForbidden",
                "Forbidden: only deletion is allowed, but found new scheduling gate '"
                + next(g for g in new_gates if g not in old_gates)
                + "'",
            )
        )
    frozen_old = {k: v for k, v in old_spec.items() if k not in _POD_MUTABLE}
    frozen_new = {k: v for k, v in new_spec.items() if k not in _POD_MUTABLE}
    for key in ("containers", "initContainers"):
        frozen_old[key] = _strip_images(frozen_old.get(key))
        frozen_new[key] = _strip_images(frozen_new.get(key))
    if frozen_old != frozen_new:
        causes.append(
            (
                "spec",
                "FieldValueForbidden",
                _POD_UPDATE_FORBIDDEN,
            )
        )
    return causes


def custom_resource_causes(
    info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None
) -> tuple[list[Cause], list[str]]:
    """Default, prune and validate a custom resource in place; returns (causes, pruned field paths)."""
    if info.schema is None:
        return [], []
    info.schema.apply_defaults(obj)
    pruned = info.schema.prune(obj)
    causes: list[Cause] = []
    for error in info.schema.validate(obj, old):
        prefix = f"{error.field}: "
        detail = error.message[len(prefix) :] if error.message.startswith(prefix) else error.message
        causes.append((error.field, error.reason, detail))
    return causes, pruned


def new_uid() -> str:
    """A fresh object uid."""
    return str(uuid.uuid4())
