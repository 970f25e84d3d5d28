"""Desired PodCliqueScalingGroups: one per (PCS replica x scaling-group config) (grove-reference §1.4, §3.2).

`spec.replicas` is only set when the PCSG is first created (the live value, driven by `kubectl scale` or the HPA,
wins afterwards); `minAvailable`, `cliqueNames`, labels and annotations are refreshed on every reconcile.
"""

from __future__ import annotations

from typing import Any

from grove_api import PodCliqueScalingGroup, PodCliqueScalingGroupConfig, PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import controller_reference, scaling_group_configs

__all__ = ["build_scaling_group", "member_podclique_names"]


def _config(pcs: PodCliqueSet, group_name: str) -> PodCliqueScalingGroupConfig:
    for group in scaling_group_configs(pcs.spec.template):
        if group.name == group_name:
            return group
    raise ValueError(f"PodCliqueSet {pcs.metadata.name!r} has no scaling group {group_name!r}")


def build_scaling_group(
    pcs: PodCliqueSet, pcs_replica: int, group_name: str, existing: PodCliqueScalingGroup | None = None
) -> dict[str, Any]:
    """The PCSG `<pcs>-<i>-<group>`, owned by the PodCliqueSet."""
    pcs_name = pcs.metadata.name or ""
    group = _config(pcs, group_name)
    name = gnames.pcsg_name(pcs_name, pcs_replica, group_name)
    annotations = dict(group.annotations or {})
    mnnvl = (pcs.metadata.annotations or {}).get(glabels.ANNOTATION_MNNVL_GROUP)
    if mnnvl is not None:
        annotations[glabels.ANNOTATION_MNNVL_GROUP] = mnnvl
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": pcs.metadata.namespace or "default",
        "labels": glabels.pcsg_labels(pcs_name, pcs_replica, name),
        "ownerReferences": [
            controller_reference(PodCliqueSet.API_VERSION, PodCliqueSet.KIND, pcs_name, pcs.metadata.uid or "")
        ],
        "finalizers": [glabels.FINALIZER_PCSG],
    }
    if annotations:
        metadata["annotations"] = annotations
    replicas = existing.spec.replicas if existing is not None else group.effective_replicas()
    return {
        "apiVersion": PodCliqueScalingGroup.API_VERSION,
        "kind": PodCliqueScalingGroup.KIND,
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "minAvailable": group.effective_min_available(),
            "cliqueNames": list(group.clique_names),
        },
    }


def member_podclique_names(pcsg_fqn: str, clique_names: list[str], pcsg_replica: int) -> list[str]:
    """The member PodClique names of one PCSG replica, in `cliqueNames` order."""
    return [gnames.pcsg_member_pclq_name(pcsg_fqn, pcsg_replica, clique) for clique in clique_names]
