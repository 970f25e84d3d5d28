"""What the real apiserver's registry strategies do to objects before they are stored.

Defaulting (``grove_sim.registry.defaults``), ``PrepareForCreate`` (server-owned fields such as pod phase, namespace
finalizers, CRD conditions, cluster IPs) and validation: ``grove_sim.validation`` for object metadata and the
built-in kinds, the CRD's own consistency rules, and for custom resources structural-schema defaulting, pruning and
validation through ``grove_sim.schema.structural``. Every rejection is a list of (field, reason, detail) causes that
the core turns into one 422 ``Status``; a body the real decoder would refuse is a 400.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from grove_sim.machinery import errors
from grove_sim.registry.defaults import apply_defaults
from grove_sim.registry.resources import ResourceInfo
from grove_sim.validation.builtin import validate
from grove_sim.validation.field import Cause, DecodeError, forbidden

__all__ = [
    "Cause",
    "apply_defaults",
    "custom_resource_causes",
    "metadata_update_causes",
    "new_uid",
    "prepare_create",
    "validation_causes",
]

_CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")


def _condition(type_: str, status: str, now: str, reason: str = "", message: str = "") -> dict[str, Any]:
    cond: dict[str, Any] = {"type": type_, "status": status, "lastTransitionTime": now}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def _map(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else {} (validation reports wrong types; preparing must not crash)."""
    return value if isinstance(value, dict) else {}


def _qos(pod: dict[str, Any]) -> str:
    containers = _map(pod.get("spec")).get("containers")
    requests_any = False
    guaranteed = True
    for container in containers if isinstance(containers, list) else ():
        resources = _map(_map(container).get("resources"))
        limits, requests = _map(resources.get("limits")), _map(resources.get("requests"))
        requests_any = requests_any or bool(limits) or bool(requests)
        for res in ("cpu", "memory"):
            if res not in limits or (res in requests and requests[res] != limits[res]):
                guaranteed = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def prepare_create(info: ResourceInfo, obj: dict[str, Any], now: str, service_ips: list[int]) -> None:
    """Server-owned fields of a new, defaulted object (in place): status resets, cluster IPs, CRD conditions."""
    key = info.key
    if info.has_status and key not in (("", "nodes"), ("apiextensions.k8s.io", "customresourcedefinitions")):
        obj.pop("status", None)
    if key == ("", "pods"):
        spec = _map(obj.get("spec"))
        if spec:
            # The ServiceAccount and Priority admission plugins, which act on create only.
            spec.setdefault("serviceAccountName", "default")
            spec.setdefault("priority", 0)
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
        obj["spec"] = {**_map(obj.get("spec")), "finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
        labels = obj["metadata"].get("labels")
        if labels is None or isinstance(labels, dict):
            obj["metadata"]["labels"] = {**(labels or {}), "kubernetes.io/metadata.name": obj["metadata"]["name"]}
    elif key == ("", "services") and isinstance(obj.get("spec"), dict):
        spec = obj["spec"] = dict(obj["spec"])
        if not spec.get("clusterIP"):
            service_ips[0] += 1
            n = service_ips[0]
            spec["clusterIP"] = f"10.96.{(n >> 8) & 255}.{n & 255}"
        spec["clusterIPs"] = [spec["clusterIP"]]
        obj["status"] = {"loadBalancer": {}}
    elif key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        names = copy.deepcopy(_map(_map(obj.get("spec")).get("names")))
        names.setdefault("singular", str(names.get("kind", "")).lower())
        names.setdefault("listKind", f"{names.get('kind', '')}List")
        obj["status"] = {
            "acceptedNames": names,
            "conditions": [
                _condition("NamesAccepted", "True", now, "NoConflicts", "no conflicts found"),
                _condition("Established", "True", now, "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "storedVersions": [
                v.get("name") for v in _map(obj.get("spec")).get("versions") or () if _map(v).get("storage")
            ],
        }


def metadata_update_causes(meta: dict[str, Any], old_meta: dict[str, Any]) -> list[Cause]:
    """``ValidateObjectMetaUpdate``'s rule for every write, status included: an object being deleted takes no new
    finalizers."""
    if not old_meta.get("deletionTimestamp"):
        return []
    added = [f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
    if not added:
        return []
    quoted = ", ".join(f'"{f}"' for f in added)
    detail = f"no new finalizers can be added if the object is being deleted, found new finalizers []string{{{quoted}}}"
    return [forbidden("metadata.finalizers", detail)]


def _crd_causes(crd: dict[str, Any]) -> list[Cause]:
    """A CRD's name is its plural and group; it names a kind and at least one version."""
    causes: list[Cause] = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
    if crd["metadata"].get("name") != expected:
        causes.append(
            (
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{crd["metadata"].get("name")}": must be spec.names.plural+"."+spec.group',
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


def validation_causes(
    info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None, *, admitted_spec: bool = False
) -> list[Cause]:
    """Why kube-apiserver would refuse ``obj`` (``old`` is the stored object on update; ``admitted_spec``: its spec
    is one admitted before but for per-object fields); 400 for an undecodable body."""
    try:
        causes = validate(info.key, obj, old, builtin=not info.custom, admitted_spec=admitted_spec)
    except DecodeError as exc:
        kind = info.kind
        raise errors.bad_request(f'{kind} in version "{info.version}" cannot be handled as a {kind}: {exc}') from exc
    if info.key == _CRDS:
        causes += _crd_causes(obj)
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
