"""Desired Pods of a PodClique (grove-reference §2.1-2.4, §3.4, §3.5).

A pod is a copy of the PodClique's pod spec plus everything that makes it a Grove pod: a stable hostname in the
replica's headless-service subdomain, the full label set (the gang label is what the scheduler and `grove-initc`
select on), the five common env vars, the scheduling gate that holds it until its PodGang references it, the
scheduler name, and — when the PodClique has startup parents — the `grove-initc` init container with its volumes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from grove_api import PodClique, PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired._env import field_ref_env, prepend_env, value_env
from grove_operator.desired.layout import controller_reference, identify_podclique

__all__ = [
    "POD_INFO_MOUNT_PATH",
    "POD_INFO_VOLUME",
    "SA_TOKEN_MOUNT_PATH",
    "SA_TOKEN_VOLUME",
    "build_pod",
    "common_env_vars",
    "init_container",
    "init_container_volumes",
    "startup_parents",
]

SA_TOKEN_VOLUME = glabels.INIT_SA_TOKEN_VOLUME
SA_TOKEN_MOUNT_PATH = glabels.INIT_SA_TOKEN_MOUNT_PATH
POD_INFO_VOLUME = glabels.INIT_POD_INFO_VOLUME
POD_INFO_MOUNT_PATH = glabels.INIT_POD_INFO_MOUNT_PATH
POD_INFO_NAMESPACE_FILE = glabels.INIT_POD_INFO_NAMESPACE_FILE
POD_INFO_PODGANG_FILE = glabels.INIT_POD_INFO_PODGANG_FILE
_SA_TOKEN_MODE = 0o644


def common_env_vars(pcs_name: str, pcs_replica: int, pclq_name: str, namespace: str) -> list[dict[str, Any]]:
    """The five env vars every Grove pod gets, in upstream order; the pod index is read from the pod's label."""
    return [
        value_env(glabels.ENV_PCS_NAME, pcs_name),
        value_env(glabels.ENV_PCS_INDEX, str(pcs_replica)),
        value_env(glabels.ENV_PCLQ_NAME, pclq_name),
        value_env(glabels.ENV_HEADLESS_SERVICE, gnames.headless_service_fqdn(pcs_name, pcs_replica, namespace)),
        field_ref_env(glabels.ENV_PCLQ_POD_INDEX, f"metadata.labels['{glabels.LABEL_PODCLIQUE_POD_INDEX}']"),
    ]


def startup_parents(pcs: PodCliqueSet, pclq: PodClique) -> list[tuple[str, int]]:
    """The PodClique's `startsAfter` FQNs, each with the parent's minAvailable taken from the PCS template."""
    parents: list[tuple[str, int]] = []
    for fqn in pclq.spec.starts_after or ():
        instance = identify_podclique(pcs, fqn)
        if instance is None:
            raise ValueError(f"startsAfter entry {fqn!r} of {pclq.metadata.name!r} is not a PodClique of the PCS")
        parents.append((fqn, instance.clique.spec.effective_min_available()))
    return parents


def init_container(image: str, parents: list[tuple[str, int]]) -> dict[str, Any]:
    """`grove-initc`: waits until every parent has minAvailable Ready pods; reads its gang from pod-info."""
    return {
        "name": glabels.INIT_CONTAINER_NAME,
        "image": image,
        "args": [f"--podcliques={name}:{min_available}" for name, min_available in parents],
        "volumeMounts": [
            {"name": SA_TOKEN_VOLUME, "mountPath": SA_TOKEN_MOUNT_PATH, "readOnly": True},
            {"name": POD_INFO_VOLUME, "mountPath": POD_INFO_MOUNT_PATH, "readOnly": True},
        ],
    }


def init_container_volumes(pcs_name: str) -> list[dict[str, Any]]:
    """The SA-token Secret and downward-API pod-info volumes `grove-initc` mounts."""
    return [
        {
            "name": SA_TOKEN_VOLUME,
            "secret": {"secretName": gnames.sa_token_secret_name(pcs_name), "defaultMode": _SA_TOKEN_MODE},
        },
        {
            "name": POD_INFO_VOLUME,
            "downwardAPI": {
                "items": [
                    {"path": POD_INFO_NAMESPACE_FILE, "fieldRef": {"fieldPath": "metadata.namespace"}},
                    {
                        "path": POD_INFO_PODGANG_FILE,
                        "fieldRef": {"fieldPath": f"metadata.labels['{glabels.LABEL_PODGANG}']"},
                    },
                ]
            },
        },
    ]


def _label(labels: Mapping[str, str], key: str, pclq_name: str) -> str:
    value = labels.get(key)
    if value is None:
        raise ValueError(f"PodClique {pclq_name!r} lacks label {key!r}")
    return value


def build_pod(
    pcs: PodCliqueSet,
    pclq: PodClique,
    pod_index: int,
    *,
    default_scheduler_name: str,
    init_container_image: str,
) -> dict[str, Any]:
    """The pod with index `pod_index` of `pclq` (to be created with generateName; the server adds the suffix).

    `default_scheduler_name` replaces an empty template `schedulerName`; `init_container_image` is the full
    `grove-initc` image reference, used only when the PodClique has startup parents.
    """
    pclq_name = pclq.metadata.name or ""
    pclq_labels = dict(pclq.metadata.labels or {})
    pcs_name = _label(pclq_labels, glabels.LABEL_PART_OF, pclq_name)
    pcs_replica = int(_label(pclq_labels, glabels.LABEL_PCS_REPLICA_INDEX, pclq_name))
    namespace = pclq.metadata.namespace or pcs.metadata.namespace or "default"

    spec = prepend_env(pclq.spec.pod_spec, common_env_vars(pcs_name, pcs_replica, pclq_name, namespace))
    foreign_gates = [
        g for g in spec.get("schedulingGates") or () if g.get("name") != glabels.SCHEDULING_GATE_PODGANG_PENDING
    ]
    spec["schedulingGates"] = [{"name": glabels.SCHEDULING_GATE_PODGANG_PENDING}, *foreign_gates]
    spec["hostname"] = gnames.pod_hostname(pclq_name, pod_index)
    spec["subdomain"] = gnames.pod_subdomain(pcs_name, pcs_replica)
    spec["schedulerName"] = spec.get("schedulerName") or default_scheduler_name
    parents = startup_parents(pcs, pclq)
    if parents:
        spec["initContainers"] = [*(spec.get("initContainers") or ()), init_container(init_container_image, parents)]
        spec["volumes"] = [*(spec.get("volumes") or ()), *init_container_volumes(pcs_name)]

    metadata: dict[str, Any] = {
        "generateName": gnames.pod_generate_name(pclq_name),
        "namespace": namespace,
        "labels": glabels.pod_labels(pclq_labels, pclq_name, pod_index),
        "ownerReferences": [
            controller_reference(PodClique.API_VERSION, PodClique.KIND, pclq_name, pclq.metadata.uid or "")
        ],
    }
    if pclq.metadata.annotations:
        metadata["annotations"] = copy.deepcopy(pclq.metadata.annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
