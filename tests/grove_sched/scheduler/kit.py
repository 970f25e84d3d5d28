"""Builders of plain node, pod and PodGang dicts as the informers deliver them."""

from __future__ import annotations

from typing import Any

from grove_api.labels import LABEL_PODGANG, SCHEDULING_GATE_PODGANG_PENDING

Obj = dict[str, Any]
SCHED = "grove-scheduler"


def node(
    name: str, *, gpus: int = 8, cpu: str = "64", labels: dict[str, str] | None = None, cordoned: bool = False
) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {"allocatable": {"cpu": cpu, "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}},
    }


def pod(
    name: str,
    *,
    ns: str = "default",
    gang: str | None = None,
    gpus: int = 1,
    cpu: str = "1",
    node_name: str | None = None,
    gated: bool = False,
    scheduler: str = SCHED,
    phase: str = "Pending",
    uid: str | None = None,
) -> Obj:
    labels = {LABEL_PODGANG: gang} if gang else {}
    spec: Obj = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "nvidia.com/gpu": str(gpus)}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if gated:
        spec["schedulingGates"] = [{"name": SCHEDULING_GATE_PODGANG_PENDING}]
    return {
        "metadata": {"name": name, "namespace": ns, "uid": uid or f"uid-{name}", "labels": labels},
        "spec": spec,
        "status": {"phase": phase},
    }


def podgang(
    name: str,
    groups: dict[str, tuple[list[str], int]],
    *,
    ns: str = "default",
    required: str | None = None,
    status: Obj | None = None,
    group_required: dict[str, str] | None = None,
) -> Obj:
    spec: Obj = {
        "podgroups": [
            {
                "name": g,
                "podReferences": [{"namespace": ns, "name": p} for p in pods],
                "minReplicas": minimum,
                **(
                    {"topologyConstraint": {"packConstraint": {"required": group_required[g]}}}
                    if group_required and g in group_required
                    else {}
                ),
            }
            for g, (pods, minimum) in groups.items()
        ]
    }
    if required:
        spec["topologyConstraint"] = {"packConstraint": {"required": required}}
    obj: Obj = {"metadata": {"name": name, "namespace": ns, "generation": 1}, "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj
