"""Desired pods and PodGang of a `grove.dynamo.ai/v1` PodGangSet (docs/first-api.md).

A PodGangSet is the simplest gang there is: `replicas` copies of one pod template in one PodGang whose single
PodGroup needs `minAvailable` of them. Each pod is named `<pgs>-<i>`, so a create whose response was lost is an
AlreadyExists on the retry, never a second pod. A pod is built once: pod affinity cannot change after creation,
so `scheduling.nodeAffinity` and the terms of the `grove.dynamo.ai/v1` PodCliques that select the pod then are
merged into its affinity here, and a PodClique created later shapes only the pods created after it. Pods are
created gated and released as PodCliqueSet pods are (`gates`), once the PodGang references them.

The original README asks for `nvidia.com/gpu` under `requests` alone, which kube-apiserver refuses for a pod
("Limit must be set for non overcommitable resources"): an extended resource cannot be overcommitted, so its limit
must equal its request. The operator writes that limit when the template leaves it out, as the README's users
expected.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from grove_api import DynamoPodClique, PodGang, PodGangSet
from grove_api import dynamo_v1 as v1
from grove_api import labels as glabels
from grove_operator.desired.layout import controller_reference, is_terminating

__all__ = [
    "build_pgs_pod",
    "build_pgs_podgang",
    "merge_node_affinity",
    "pgs_pod_index",
    "pgs_pod_labels",
    "pgs_pod_name",
    "pgs_scheduler_name",
    "selecting_podcliques",
]

Obj = dict[str, Any]
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


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


def selecting_podcliques(podcliques: Iterable[DynamoPodClique], labels: Mapping[str, str]) -> list[DynamoPodClique]:
    """The PodCliques (of the pod's namespace) whose selector matches `labels`, by name."""
    chosen = [p for p in podcliques if p.metadata.deletion_timestamp is None and p.spec.selector.matches(labels)]
    return sorted(chosen, key=lambda p: p.metadata.name or "")


def merge_node_affinity(pod: Mapping[str, Any] | None, extra: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Both node affinities at once: required terms are ORed within each side, so the sides are ANDed by pairing
    every term of one with every term of the other; preferred terms are concatenated."""
    if not extra:
        return copy.deepcopy(dict(pod)) if pod else None
    if not pod:
        return copy.deepcopy(dict(extra))
    merged: dict[str, Any] = {}
    mine = (pod.get(_REQUIRED) or {}).get("nodeSelectorTerms") or []
    theirs = (extra.get(_REQUIRED) or {}).get("nodeSelectorTerms") or []
    if mine and theirs:
        merged[_REQUIRED] = {"nodeSelectorTerms": [_and_terms(a, b) for a in mine for b in theirs]}
    elif mine or theirs:
        merged[_REQUIRED] = {"nodeSelectorTerms": copy.deepcopy(mine or theirs)}
    preferred = [*(pod.get(_PREFERRED) or ()), *(extra.get(_PREFERRED) or ())]
    if preferred:
        merged[_PREFERRED] = copy.deepcopy(preferred)
    return merged


def _and_terms(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    term: dict[str, Any] = {}
    for key in ("matchExpressions", "matchFields"):
        both = [*(a.get(key) or ()), *(b.get(key) or ())]
        if both:
            term[key] = copy.deepcopy(both)
    return term


def _merge_pod_affinity(pod: Mapping[str, Any] | None, cliques: Sequence[DynamoPodClique]) -> dict[str, Any] | None:
    merged = copy.deepcopy(dict(pod or {}))
    for clique in cliques:
        if clique.spec.topology is None:
            continue
        for key, terms in clique.spec.topology.pod_affinity().items():
            merged[key] = [*(merged.get(key) or ()), *terms]
    return merged or None


def _extended(resource: str) -> bool:
    """An extended resource (`vendor.example/thing`, not `kubernetes.io/...`) or hugepages: never overcommitted."""
    if resource.startswith("hugepages-"):
        return True
    domain = resource.split("/", 1)[0] if "/" in resource else ""
    return bool(domain) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def _limit_extended_requests(spec: dict[str, Any]) -> None:
    """Give every requested extended resource without a limit a limit equal to its request (in place)."""
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            if not isinstance(container, dict):
                continue
            resources = container.get("resources")
            if not isinstance(resources, dict) or not isinstance(resources.get("requests"), dict):
                continue
            given = resources.get("limits")
            limits: dict[str, Any] = given if isinstance(given, dict) else {}
            missing = {r: q for r, q in resources["requests"].items() if _extended(str(r)) and r not in limits}
            if missing:
                resources["limits"] = {**limits, **missing}


def _owner(pgs: PodGangSet) -> dict[str, Any]:
    meta = pgs.metadata
    return controller_reference(PodGangSet.API_VERSION, PodGangSet.KIND, meta.name or "", meta.uid or "")


def build_pgs_pod(
    pgs: PodGangSet, index: int, podcliques: Iterable[DynamoPodClique], *, default_scheduler_name: str
) -> Obj:
    """Pod `index` of the PodGangSet, gated, with the merged affinity and the PodCliques it got terms from."""
    name = pgs.metadata.name or ""
    labels = pgs_pod_labels(pgs, index)
    spec = copy.deepcopy(pgs.spec.template.spec)
    _limit_extended_requests(spec)
    foreign = [g for g in spec.get("schedulingGates") or () if g.get("name") != glabels.SCHEDULING_GATE_PODGANG_PENDING]
    spec["schedulingGates"] = [{"name": glabels.SCHEDULING_GATE_PODGANG_PENDING}, *foreign]
    spec["schedulerName"] = pgs_scheduler_name(pgs, default_scheduler_name)
    cliques = selecting_podcliques(podcliques, labels)
    affinity = dict(spec.get("affinity") or {})
    scheduling = pgs.spec.scheduling.node_affinity if pgs.spec.scheduling else None
    node = merge_node_affinity(affinity.get("nodeAffinity"), scheduling)
    pod_affinity = _merge_pod_affinity(affinity.get("podAffinity"), cliques)
    for key, value in (("nodeAffinity", node), ("podAffinity", pod_affinity)):
        if value:
            affinity[key] = value
    if affinity:
        spec["affinity"] = affinity
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
