"""Desired pods and PodGang of a `grove.dynamo.ai/v1` PodGangSet (docs/first-api.md).

A PodGangSet is the simplest gang there is: `replicas` copies of one pod template in one PodGang whose single
PodGroup needs `minAvailable` of them. Each pod is named `<pgs>-<i>`, so a create whose response was lost is an
AlreadyExists on the retry, never a second pod. A pod is built once: pod affinity cannot change after creation,
so `scheduling.nodeAffinity` and the terms of the `grove.dynamo.ai/v1` PodCliques that select the pod then are
merged into its affinity here, and a PodClique created later shapes only the pods created after it. Pods are
created gated and released as PodCliqueSet pods are (`gates`), once the PodGang references them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from grove_api import DynamoPodClique, PodGang, PodGangSet
from grove_api import dynamo_v1 as v1
from grove_api import labels as glabels
from grove_api.gangpod import gang_pod_spec
from grove_operator.desired.layout import controller_reference, is_terminating

__all__ = [
    "build_pgs_pod",
    "build_pgs_podgang",
    "pgs_pod_index",
    "pgs_pod_labels",
    "pgs_pod_name",
    "pgs_scheduler_name",
]

Obj = dict[str, Any]


def pgs_pod_name(pgs_name: str, index: int) -> str:
    """`<pgs>-<i>`: a pod's name says its index, as a StatefulSet's does."""
    return f"{pgs_name}-{index}"


def pgs_pod_index(pgs_name: str, pod_name: str) -> int | None:
    """The index a pod name `<pgs>-<i>` denotes, or None for any other name."""
    prefix = f"{pgs_name}-"
    rest = pod_name[len(prefix) :] if pod_name.startswith(prefix) else ""
    if not rest.isdigit() or (len(rest) > 1 and rest.startswith("0")):
        return None
    return int(rest)


def pgs_scheduler_name(pgs: PodGangSet, default_scheduler_name: str) -> str:
    """The template's `schedulerName`, kept when set; the operator's default scheduler otherwise."""
    return str(pgs.spec.template.spec.get("schedulerName") or default_scheduler_name)


def pgs_pod_labels(pgs: PodGangSet, index: int) -> dict[str, str]:
    """Template labels, then Grove's: managed-by, the PodGangSet, the pod index and the gang (Grove keys win)."""
    name = pgs.metadata.name or ""
    labels = dict((pgs.spec.template.metadata.labels or {}) if pgs.spec.template.metadata else {})
    labels.update(
        {
            glabels.LABEL_MANAGED_BY: glabels.MANAGED_BY_VALUE,
            v1.LABEL_PODGANGSET: name,
            v1.LABEL_POD_INDEX: str(index),
            glabels.LABEL_PODGANG: name,
        }
    )
    return labels


def _owner(pgs: PodGangSet) -> dict[str, Any]:
    meta = pgs.metadata
    return controller_reference(PodGangSet.API_VERSION, PodGangSet.KIND, meta.name or "", meta.uid or "")


def build_pgs_pod(
    pgs: PodGangSet, index: int, podcliques: Iterable[DynamoPodClique], *, default_scheduler_name: str
) -> Obj:
    """Pod `index` of the PodGangSet, gated, with the merged affinity and the PodCliques it got terms from."""
    name = pgs.metadata.name or ""
    labels = pgs_pod_labels(pgs, index)
    spec, cliques = gang_pod_spec(pgs, labels, podcliques)
    foreign = [g for g in spec.get("schedulingGates") or () if g.get("name") != glabels.SCHEDULING_GATE_PODGANG_PENDING]
    spec["schedulingGates"] = [{"name": glabels.SCHEDULING_GATE_PODGANG_PENDING}, *foreign]
    spec["schedulerName"] = pgs_scheduler_name(pgs, default_scheduler_name)
    annotations = dict((pgs.spec.template.metadata.annotations or {}) if pgs.spec.template.metadata else {})
    if cliques:
        annotations[v1.ANNOTATION_PODCLIQUES] = ",".join(c.metadata.name or "" for c in cliques)
    metadata: Obj = {
        "name": pgs_pod_name(name, index),
        "namespace": pgs.metadata.namespace or "default",
        "labels": labels,
        "ownerReferences": [_owner(pgs)],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def build_pgs_podgang(pgs: PodGangSet, pods: Iterable[Mapping[str, Any]], scheduler_name: str) -> Obj:
    """The PodGang: one PodGroup named after the PodGangSet, its live pods, `minReplicas` the gang minimum."""
    name = pgs.metadata.name or ""
    namespace = pgs.metadata.namespace or "default"
    references = sorted((str(p["metadata"]["name"]) for p in pods if not is_terminating(p)), key=lambda n: (len(n), n))
    spec: Obj = {
        "podgroups": [
            {
                "name": name,
                "podReferences": [{"namespace": namespace, "name": n} for n in references],
                "minReplicas": pgs.spec.effective_min_available(),
            }
        ]
    }
    priority = pgs.spec.template.spec.get("priorityClassName")
    if priority:
        spec["priorityClassName"] = str(priority)
    labels = {
        glabels.LABEL_MANAGED_BY: glabels.MANAGED_BY_VALUE,
        glabels.LABEL_COMPONENT: glabels.COMPONENT_PODGANG,
        glabels.LABEL_SCHEDULER_NAME: scheduler_name,
        v1.LABEL_PODGANGSET: name,
    }
    return {
        "apiVersion": PodGang.API_VERSION,
        "kind": PodGang.KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [_owner(pgs)],
        },
        "spec": spec,
    }
