"""Table printers of the workload kinds (Deployments, ReplicaSets, PodDisruptionBudgets), as kubectl shows them
from kube-apiserver's ``printers``; ``grove_sim.http.tables`` looks them up beside the core kinds'."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from grove_sim.http.printers import AGE_COLUMN, NAME_COLUMN, Ager, Printer, col, field_at, object_name

__all__ = ["WORKLOAD_PRINTERS"]


def _deployment_row(deployment: Mapping[str, Any], age: Ager) -> list[Any]:
    spec: Mapping[str, Any] = deployment.get("spec") or {}
    status: Mapping[str, Any] = deployment.get("status") or {}
    template_spec: Mapping[str, Any] = field_at(spec, "template", "spec") or {}
    containers: list[Mapping[str, Any]] = list(template_spec.get("containers") or [])
    return [
        object_name(deployment),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        age(field_at(deployment, "metadata", "creationTimestamp")),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        _selector_text(spec.get("selector")),
    ]


def _replica_set_row(rs: Mapping[str, Any], age: Ager) -> list[Any]:
    spec: Mapping[str, Any] = rs.get("spec") or {}
    status: Mapping[str, Any] = rs.get("status") or {}
    containers: list[Mapping[str, Any]] = list(field_at(spec, "template", "spec", "containers") or [])
    return [
        object_name(rs),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        age(field_at(rs, "metadata", "creationTimestamp")),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        _selector_text(spec.get("selector")),
    ]


def _selector_text(selector: Any) -> str:
    if not isinstance(selector, Mapping):
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        values = ",".join(expression.get("values") or [])
        operator = str(expression.get("operator", ""))
        key = str(expression.get("key", ""))
        parts.append(
            {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key}.get(operator, f"!{key}")
        )
    return ",".join(parts) or "<none>"


def _pdb_row(pdb: Mapping[str, Any], age: Ager) -> list[Any]:
    spec: Mapping[str, Any] = pdb.get("spec") or {}
    return [
        object_name(pdb),
        "N/A" if spec.get("minAvailable") is None else str(spec["minAvailable"]),
        "N/A" if spec.get("maxUnavailable") is None else str(spec["maxUnavailable"]),
        int(field_at(pdb, "status", "disruptionsAllowed") or 0),
        age(field_at(pdb, "metadata", "creationTimestamp")),
    ]


_WORKLOAD_WIDE: Final = [
    col("Containers", "Names of each container in the template.", priority=1),
    col("Images", "Images referenced by each container in the template.", priority=1),
    col("Selector", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones "
        "affected by this deployment.", priority=1),
]  # fmt: skip


WORKLOAD_PRINTERS: Final[dict[tuple[str, str], Printer]] = {
    ("apps", "deployments"): (
        [
            NAME_COLUMN,
            col("Ready", "Number of the pod with ready state"),
            col(
                "Up-to-date",
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                type_="integer",
            ),
            col(
                "Available",
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                type_="integer",
            ),
            AGE_COLUMN,
            *_WORKLOAD_WIDE,
        ],
        _deployment_row,
    ),
    ("apps", "replicasets"): (
        [
            NAME_COLUMN,
            col("Desired", "Number of desired pods.", type_="integer"),
            col("Current", "Number of actual pods.", type_="integer"),
            col("Ready", "Number of ready pods.", type_="integer"),
            AGE_COLUMN,
            *_WORKLOAD_WIDE,
        ],
        _replica_set_row,
    ),
    ("policy", "poddisruptionbudgets"): (
        [
            NAME_COLUMN,
            col("Min Available", "The minimum number or percentage of available pods this budget requires."),
            col("Max Unavailable", "The maximum number or percentage of unavailable pods this budget requires."),
            col(
                "Allowed Disruptions", "Calculated number of pods that may be disrupted at this time.", type_="integer"
            ),
            AGE_COLUMN,
        ],
        _pdb_row,
    ),
}
