"""Defaulting of PodCliqueSets: the mutating webhook's rules plus the CRD schema defaults (grove-reference §3.12).

The admission webhook works on the raw JSON of the request, and tests and the reconciler need exactly what the API
server would store, so both sets of defaults are pure functions over plain dicts. The webhook also writes
`roleName: ""` for cliques that omit it (upstream re-serialises the object without `omitempty`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grove_api import DEFAULT_TERMINATION_DELAY
from grove_runtime.jsoncopy import json_copy

__all__ = [
    "DEFAULT_RESTART_POLICY",
    "DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS",
    "apply_crd_defaults",
    "apply_webhook_defaults",
    "default_podcliqueset",
]

DEFAULT_RESTART_POLICY = "Always"
DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30


def apply_webhook_defaults(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the PodCliqueSet with the defaulting webhook's rules applied."""
    return _webhook_defaults(json_copy(dict(obj)))


def _webhook_defaults(pcs: dict[str, Any]) -> dict[str, Any]:
    metadata = pcs.setdefault("metadata", {})
    if not metadata.get("namespace"):
        metadata["namespace"] = "default"
    template = pcs.setdefault("spec", {}).setdefault("template", {})
    for clique in template.get("cliques") or ():
        spec = clique.setdefault("spec", {})
        spec.setdefault("roleName", "")
        pod_spec = spec.setdefault("podSpec", {})
        if not pod_spec.get("restartPolicy"):
            pod_spec["restartPolicy"] = DEFAULT_RESTART_POLICY
        if pod_spec.get("terminationGracePeriodSeconds") is None:
            pod_spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
        original_replicas = spec.get("replicas") or 0
        if not original_replicas:
            spec["replicas"] = 1
        if spec.get("minAvailable") is None:
            spec["minAvailable"] = original_replicas
        autoscaling = spec.get("autoScalingConfig")
        if autoscaling is not None and autoscaling.get("minReplicas") is None:
            autoscaling["minReplicas"] = spec["replicas"]
    for group in template.get("podCliqueScalingGroups") or ():
        scale = group.get("scaleConfig")
        if scale is not None and scale.get("minReplicas") is None:
            scale["minReplicas"] = group.get("replicas") or 1
    if template.get("terminationDelay") is None:
        template["terminationDelay"] = DEFAULT_TERMINATION_DELAY
    if template.get("headlessServiceConfig") is None:
        template["headlessServiceConfig"] = {"publishNotReadyAddresses": True}
    return pcs


def apply_crd_defaults(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the PodCliqueSet with the CRD schema defaults applied (what the API server adds on its own)."""
    return _crd_defaults(json_copy(dict(obj)))


def _crd_defaults(pcs: dict[str, Any]) -> dict[str, Any]:
    spec = pcs.setdefault("spec", {})
    spec.setdefault("replicas", 0)
    if isinstance(spec.get("updateStrategy"), dict):
        spec["updateStrategy"].setdefault("type", "RollingRecreate")
    template = spec.setdefault("template", {})
    template.setdefault("cliqueStartupType", "CliqueStartupTypeAnyOrder")
    for group in template.get("podCliqueScalingGroups") or ():
        group.setdefault("replicas", 1)
        group.setdefault("minAvailable", 1)
    return pcs


def default_podcliqueset(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Schema defaults, then the webhook's: the object as the API server stores it (one copy: the operator
    defaults every PodCliqueSet it reads, so the second deep copy showed in its profile)."""
    return _webhook_defaults(_crd_defaults(json_copy(dict(obj))))
