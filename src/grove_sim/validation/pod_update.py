"""Pod spec immutability on update, as ``ValidatePodUpdate`` has it.

After create, a pod's spec is frozen except for container and init-container images, ``activeDeadlineSeconds``
(set once, then only lowered), tolerations (only added, or their ``tolerationSeconds`` changed), scheduling gates
(only removed), ``terminationGracePeriodSeconds`` (from negative to 1), and, while the pod is still gated, additions
to ``nodeSelector`` and changes to its node affinity. ``nodeName`` changes only through a binding.
"""

from __future__ import annotations

import json
from typing import Any, Final

from grove_sim.validation.field import (
    Cause,
    changed_keys,
    forbidden,
    get_int,
    get_list,
    get_map,
    invalid,
    required,
)
from grove_sim.validation.names import inclusive_range
from grove_sim.validation.pod import validate_tolerations

__all__ = ["validate_pod_update"]

_MAX_INT32: Final = 2**31 - 1
_ALWAYS_UPDATABLE: Final = frozenset({"activeDeadlineSeconds", "tolerations", "schedulingGates"})
_UPDATABLE: Final = ",".join(
    (
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    )
)


def _container_updates(new: list[dict[str, Any]], old: list[dict[str, Any]], path: str) -> tuple[list[Cause], bool]:
    """``ValidateContainerUpdates``: the same containers, each still with an image; True when validation stops."""
    if len(new) != len(old):
        return [forbidden(path, "pod updates may not add or remove containers")], True
    causes: list[Cause] = []
    for index, container in enumerate(new):
        image = container.get("image") or ""
        if not image:
            causes.append(required(f"{path}[{index}].image"))
        if image != image.strip():
            causes.append(invalid(f"{path}[{index}].image", image, "must not have leading or trailing whitespace"))
    return causes, False


def _deadline(new: int | None, old: int | None) -> tuple[list[Cause], bool]:
    """``activeDeadlineSeconds`` may be set once, then only lowered, never removed; True when validation stops."""
    path = "spec.activeDeadlineSeconds"
    if new is None:
        removed = old is not None
        return ([invalid(path, None, "must not update from a positive integer to nil value")] if removed else []), False
    if not 0 <= new <= _MAX_INT32:
        return [invalid(path, new, inclusive_range(0, _MAX_INT32))], True
    if old is not None and old < new:
        return [invalid(path, new, "must be less than or equal to previous value")], True
    return [], False


def _only_added_tolerations(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> list[Cause]:
    """``validateOnlyAddedTolerations``: every old toleration survives, up to its ``tolerationSeconds``."""
    path = "spec.tolerations"
    unseconded = [{k: v for k, v in t.items() if k != "tolerationSeconds"} for t in new]
    for toleration in old:
        if {k: v for k, v in toleration.items() if k != "tolerationSeconds"} not in unseconded:
            return [forbidden(path, "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new, path)


def _only_deleted_gates(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> list[Cause]:
    """``validateOnlyDeletedSchedulingGates``."""
    old_names = {gate.get("name") for gate in old}
    return [
        forbidden(
            f"spec.schedulingGates[{index}].name",
            f"only deletion is allowed, but found new scheduling gate '{gate.get('name')}'",
        )
        for index, gate in enumerate(new)
        if gate.get("name") not in old_names
    ]


def _with_old_images(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**container, "image": before.get("image")} for container, before in zip(new, old, strict=True)]


def _go_field(name: str) -> str:
    return name[:1].upper() + name[1:]


def _spec_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """A short diff of the fields that changed (upstream prints ``cmp.Diff`` of the Go structs here)."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            for sign, spec in (("-", old), ("+", new)):
                if key in spec:
                    lines.append(f"{sign} \t{_go_field(key)}: {json.dumps(spec[key], sort_keys=True)},")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def _munged(new: dict[str, Any], old: dict[str, Any]) -> tuple[dict[str, Any], list[Cause]]:
    """``new`` with every field an update may change set back to ``old``'s value, and the causes found meanwhile."""
    munged = dict(new)
    munged["containers"] = _with_old_images(get_list(new, "containers", "spec"), old.get("containers") or [])
    if "initContainers" in new or "initContainers" in old:
        init = get_list(new, "initContainers", "spec")
        munged["initContainers"] = _with_old_images(init, old.get("initContainers") or [])
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(key, None)
        if key in old:
            munged[key] = old[key]
    old_grace = old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and new.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    causes: list[Cause] = []
    if old.get("schedulingGates"):
        old_selector = old.get("nodeSelector") or {}
        new_selector = new.get("nodeSelector") or {}
        if any(new_selector.get(k) != v for k, v in old_selector.items()):
            detail = "only additions to spec.nodeSelector are allowed (no mutations or deletions)"
            causes.append(invalid("spec.nodeSelector", dict(sorted(new_selector.items())), detail))
        munged.pop("nodeSelector", None)
        if "nodeSelector" in old:
            munged["nodeSelector"] = old["nodeSelector"]
        affinity = {k: v for k, v in (new.get("affinity") or {}).items() if k != "nodeAffinity"}
        if (old.get("affinity") or {}).get("nodeAffinity") is not None:
            affinity["nodeAffinity"] = old["affinity"]["nodeAffinity"]
        munged.pop("affinity", None)
        if affinity or "affinity" in old:
            munged["affinity"] = affinity
    return munged, causes


def validate_pod_update(new_pod: dict[str, Any], old_pod: dict[str, Any]) -> list[Cause]:
    """The update-only causes (the new pod's changed fields are validated as on create besides). A rule on a field
    the update left alone passes, as the stored pod was valid, so only the changed fields' rules run."""
    new = get_map(new_pod, "spec", "")
    old = old_pod.get("spec") or {}
    changed = changed_keys(new, old)
    causes: list[Cause] = []
    for key in ("containers", "initContainers"):
        if key in changed:
            more, stop = _container_updates(get_list(new, key, "spec"), old.get(key) or [], f"spec.{key}")
            causes += more
            if stop:
                return causes
    if "activeDeadlineSeconds" in changed:
        deadline, stop = _deadline(get_int(new, "activeDeadlineSeconds", "spec"), old.get("activeDeadlineSeconds"))
        causes += deadline
        if stop:
            return causes
    if "tolerations" in changed:
        causes += _only_added_tolerations(get_list(new, "tolerations", "spec"), old.get("tolerations") or [])
    if "schedulingGates" in changed:
        causes += _only_deleted_gates(get_list(new, "schedulingGates", "spec"), old.get("schedulingGates") or [])
    if changed - _ALWAYS_UPDATABLE:
        munged, gated_causes = _munged(new, old)
        causes += gated_causes
        if munged != old:
            detail = f"pod updates may not change fields other than {_UPDATABLE}\n{_spec_diff(old, munged)}"
            causes.append(forbidden("spec", detail))
    return causes
