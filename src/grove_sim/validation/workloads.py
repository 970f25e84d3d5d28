"""Validation of the workload kinds: ``apps/v1`` Deployments and ReplicaSets, ``policy/v1`` PodDisruptionBudgets.

The rules and wording follow ``pkg/apis/apps/validation`` and ``pkg/apis/policy/validation``: a required,
non-empty selector that selects the template's labels, non-negative counts, a rolling-update strategy whose
``maxSurge`` and ``maxUnavailable`` are not both zero, a template whose pod spec is valid (``restartPolicy``
Always) and, on update, an immutable selector. A disruption budget sets exactly one of ``minAvailable`` and
``maxUnavailable``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from grove_sim.machinery.label_selectors import SelectorError, label_selector_from_dict
from grove_sim.validation.field import (
    Cause,
    forbidden,
    get_int,
    get_map,
    get_str,
    get_str_map,
    invalid,
    not_supported,
    required,
)
from grove_sim.validation.pod import validate_pod_spec

__all__ = [
    "validate_deployment",
    "validate_pdb",
    "validate_replica_set",
    "validate_selector_unchanged",
]

_STRATEGIES: Final = ("Recreate", "RollingUpdate")
_PERCENT: Final = re.compile(r"^[0-9]+%$")
_PERCENT_MESSAGE: Final = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def _non_negative(spec: dict[str, Any], key: str) -> list[Cause]:
    value = get_int(spec, key, "spec")
    if value is not None and value < 0:
        return [invalid(f"spec.{key}", value, "must be greater than or equal to 0")]
    return []


def _go_map(labels: dict[str, str]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items()))
    return f"map[string]string{{{inner}}}"


def _selector_and_template(spec: dict[str, Any]) -> list[Cause]:
    """``ValidateReplicaSetSpec``/``ValidateDeploymentSpec``'s selector and ``ValidatePodTemplateSpecForReplicaSet``."""
    causes: list[Cause] = []
    selector_doc = get_map(spec, "selector", "spec")
    selector = None
    if not selector_doc:
        causes.append(required("spec.selector"))
    else:
        try:
            selector = label_selector_from_dict(selector_doc)
        except SelectorError as exc:
            causes.append(invalid("spec.selector", selector_doc, str(exc)))
        if selector is not None and selector.empty:
            causes.append(invalid("spec.selector", selector_doc, "empty selector is invalid for deployment"))
            selector = None
    template = get_map(spec, "template", "spec")
    if not template:
        return [*causes, required("spec.template")]
    labels = get_str_map(get_map(template, "metadata", "spec.template"), "labels", "spec.template.metadata")
    if selector is not None and not selector.matches(labels):
        causes.append(
            (
                "spec.template.metadata.labels",
                "FieldValueInvalid",
                f"Invalid value: {_go_map(labels)}: `selector` does not match template `labels`",
            )
        )
    pod_spec = get_map(template, "spec", "spec.template")
    causes += [(f"spec.template.{path}", reason, detail) for path, reason, detail in validate_pod_spec(pod_spec)]
    policy = get_str(pod_spec, "restartPolicy", "spec.template.spec")
    if policy and policy != "Always":
        causes.append(not_supported("spec.template.spec.restartPolicy", policy, ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            forbidden(
                "spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in ReplicaSet is not Supported"
            )
        )
    return causes


def _int_or_percent(value: Any, path: str) -> tuple[list[Cause], int | None]:
    """An IntOrString count: a non-negative int or ``N%`` (N <= 100); returns (causes, the int or None for %)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return [invalid(path, value, "must be an integer or percentage (e.g '5%')")], None
    if isinstance(value, int):
        if value < 0:
            return [invalid(path, value, "must be greater than or equal to 0")], None
        return [], value
    if not _PERCENT.match(value):
        return [invalid(path, value, _PERCENT_MESSAGE)], None
    if int(value[:-1]) > 100:
        return [invalid(path, value, "must not be greater than 100%")], None
    return [], int(value[:-1]) if value == "0%" else None


def _strategy(spec: dict[str, Any]) -> list[Cause]:
    strategy = get_map(spec, "strategy", "spec")
    kind = get_str(strategy, "type", "spec.strategy")
    if kind not in _STRATEGIES:
        return [not_supported("spec.strategy.type", kind, _STRATEGIES)]
    rolling = get_map(strategy, "rollingUpdate", "spec.strategy")
    if kind == "Recreate":
        if rolling:
            return [forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")]
        return []
    path = "spec.strategy.rollingUpdate"
    unavailable_causes, unavailable = _int_or_percent(rolling.get("maxUnavailable", 0), f"{path}.maxUnavailable")
    surge_causes, surge = _int_or_percent(rolling.get("maxSurge", 0), f"{path}.maxSurge")
    causes = unavailable_causes + surge_causes
    if not causes and unavailable == 0 and surge == 0:
        causes.append(
            invalid(f"{path}.maxUnavailable", rolling.get("maxUnavailable"), "may not be 0 when `maxSurge` is 0")
        )
    return causes


def validate_replica_set(rs: dict[str, Any]) -> list[Cause]:
    """``ValidateReplicaSet`` (spec part)."""
    spec = get_map(rs, "spec", "")
    return _non_negative(spec, "replicas") + _non_negative(spec, "minReadySeconds") + _selector_and_template(spec)


def validate_deployment(deployment: dict[str, Any]) -> list[Cause]:
    """``ValidateDeployment`` (spec part)."""
    spec = get_map(deployment, "spec", "")
    causes = _non_negative(spec, "replicas") + _non_negative(spec, "minReadySeconds")
    causes += _non_negative(spec, "revisionHistoryLimit")
    causes += _selector_and_template(spec) + _strategy(spec)
    deadline = get_int(spec, "progressDeadlineSeconds", "spec")
    min_ready = get_int(spec, "minReadySeconds", "spec") or 0
    if deadline is not None and deadline <= min_ready:
        causes.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return causes


def validate_selector_unchanged(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """apps/v1 selectors are immutable after creation."""
    selector = (new.get("spec") or {}).get("selector")
    if selector != (old.get("spec") or {}).get("selector"):
        return [invalid("spec.selector", selector, "field is immutable")]
    return []


def validate_pdb(pdb: dict[str, Any]) -> list[Cause]:
    """``ValidatePodDisruptionBudgetSpec``: one of minAvailable/maxUnavailable, each a count or percentage."""
    spec = get_map(pdb, "spec", "")
    causes: list[Cause] = []
    present = [key for key in ("minAvailable", "maxUnavailable") if spec.get(key) is not None]
    if len(present) == 2:
        causes.append(invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
    for key in present:
        causes += _int_or_percent(spec[key], f"spec.{key}")[0]
    selector = spec.get("selector")
    if selector is not None:
        try:
            label_selector_from_dict(get_map(spec, "selector", "spec"))
        except SelectorError as exc:
            causes.append(invalid("spec.selector", selector, str(exc)))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in ("IfHealthyBudget", "AlwaysAllow"):
        causes.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, ("AlwaysAllow", "IfHealthyBudget")))
    return causes
