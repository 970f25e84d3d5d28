"""Desired PodCliques: standalone ones per PCS replica and scaling-group members per PCSG replica.

The PCS controller creates standalone PodCliques and the PCSG controller member PodCliques; both build them here
so names, labels, finalizer, resolved `startsAfter` and the scaling-group env vars (§2.4, written into the
PodClique's pod spec) are identical whoever creates them. `spec.replicas` only seeds new objects: when the live
object is given its current value is kept, so HPA and `kubectl scale` win over the template (§3.9).
"""

from __future__ import annotations

from typing import Any

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_api import labels as glabels
from grove_operator import hashing
from grove_operator.desired import startup
from grove_operator.desired._env import field_ref_env, prepend_env, value_env
from grove_operator.desired.layout import CliqueInstance, controller_reference, scaling_group_identity

__all__ = [
    "build_pcsg_member_podclique",
    "build_podclique",
    "build_standalone_podclique",
    "pcsg_env_vars",
    "pcsg_template_num_pods",
]


def pcsg_template_num_pods(pcs: PodCliqueSet, group_name: str) -> int:
    """Σ template `replicas` of a scaling group's member cliques (GROVE_PCSG_TEMPLATE_NUM_PODS)."""
    template = pcs.spec.template
    group = next(g for g in template.pod_clique_scaling_groups or () if g.name == group_name)
    return sum(c.spec.replicas for name in group.clique_names if (c := template.clique(name)) is not None)


def pcsg_env_vars(pcs: PodCliqueSet, group_name: str) -> list[dict[str, Any]]:
    """The three scaling-group env vars, in upstream order (NAME, TEMPLATE_NUM_PODS, INDEX)."""
    return [
        field_ref_env(glabels.ENV_PCSG_NAME, f"metadata.labels['{glabels.LABEL_PCSG}']"),
        value_env(glabels.ENV_PCSG_TEMPLATE_NUM_PODS, str(pcsg_template_num_pods(pcs, group_name))),
        field_ref_env(glabels.ENV_PCSG_INDEX, f"metadata.labels['{glabels.LABEL_PCSG_REPLICA_INDEX}']"),
    ]


def _labels(pcs: PodCliqueSet, instance: CliqueInstance) -> dict[str, str]:
    template_hash = hashing.pod_template_hash(instance.clique, pcs.spec.template.priority_class_name)
    pcsg_fqn = instance.pcsg_fqn
    if pcsg_fqn is None or instance.pcsg_replica is None:
        return glabels.standalone_pclq_labels(
            instance.pcs_name,
            instance.pcs_replica,
            instance.name,
            instance.podgang,
            template_hash,
            instance.clique.labels,
        )
    return glabels.pcsg_member_pclq_labels(
        instance.pcs_name,
        instance.pcs_replica,
        pcsg_fqn,
        instance.pcsg_replica,
        instance.name,
        instance.podgang,
        template_hash,
        base_podgang=instance.base_podgang if instance.in_scaled_gang else None,
        template_labels=instance.clique.labels,
    )


def build_podclique(
    pcs: PodCliqueSet,
    instance: CliqueInstance,
    owner: dict[str, Any],
    existing: PodClique | None = None,
) -> dict[str, Any]:
    """The full desired PodClique for `instance`, owned by `owner` (a controller owner reference)."""
    clique = instance.clique
    template_spec = clique.spec
    pod_spec = dict(template_spec.pod_spec)
    if instance.scaling_group is not None:
        pod_spec = prepend_env(pod_spec, pcsg_env_vars(pcs, instance.scaling_group.name))
    spec: dict[str, Any] = {
        "roleName": template_spec.role_name,
        "podSpec": pod_spec,
        "replicas": existing.spec.replicas if existing is not None else template_spec.replicas,
        "minAvailable": template_spec.effective_min_available(),
    }
    parents = startup.resolve_starts_after(pcs, instance)
    if parents:
        spec["startsAfter"] = [name for name, _ in parents]
    if instance.scaling_group is None and template_spec.auto_scaling_config is not None:
        spec["autoScalingConfig"] = template_spec.auto_scaling_config.model_dump(by_alias=True, exclude_none=True)
    annotations = {k: v for k, v in (clique.annotations or {}).items() if k != glabels.ANNOTATION_TOPOLOGY_NAME}
    metadata: dict[str, Any] = {
        "name": instance.name,
        "namespace": pcs.metadata.namespace or "default",
        "labels": _labels(pcs, instance),
        "ownerReferences": [owner],
        "finalizers": [glabels.FINALIZER_PCLQ],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": PodClique.API_VERSION, "kind": PodClique.KIND, "metadata": metadata, "spec": spec}


def build_standalone_podclique(
    pcs: PodCliqueSet, pcs_replica: int, clique_name: str, existing: PodClique | None = None
) -> dict[str, Any]:
    """The standalone PodClique `<pcs>-<i>-<clique>`, owned by the PodCliqueSet."""
    template = pcs.spec.template
    clique = template.clique(clique_name)
    if clique is None or template.scaling_group_of(clique_name) is not None:
        raise ValueError(f"{clique_name!r} is not a standalone clique of PodCliqueSet {pcs.metadata.name!r}")
    owner = controller_reference(
        PodCliqueSet.API_VERSION, PodCliqueSet.KIND, pcs.metadata.name or "", pcs.metadata.uid or ""
    )
    return build_podclique(pcs, CliqueInstance(pcs.metadata.name or "", pcs_replica, clique), owner, existing)


def build_pcsg_member_podclique(
    pcs: PodCliqueSet,
    pcsg: PodCliqueScalingGroup,
    pcsg_replica: int,
    clique_name: str,
    existing: PodClique | None = None,
) -> dict[str, Any]:
    """The member PodClique `<pcs>-<i>-<pcsg>-<j>-<clique>`, owned by the live PodCliqueScalingGroup `pcsg`."""
    identity = scaling_group_identity(pcs, pcsg.metadata.name or "")
    if identity is None:
        raise ValueError(f"{pcsg.metadata.name!r} is not a scaling group of PodCliqueSet {pcs.metadata.name!r}")
    pcs_replica, group = identity
    clique = pcs.spec.template.clique(clique_name)
    if clique is None or clique_name not in group.clique_names:
        raise ValueError(f"{clique_name!r} is not a member clique of scaling group {group.name!r}")
    owner = controller_reference(
        PodCliqueScalingGroup.API_VERSION, PodCliqueScalingGroup.KIND, pcsg.metadata.name or "", pcsg.metadata.uid or ""
    )
    instance = CliqueInstance(pcs.metadata.name or "", pcs_replica, clique, group, pcsg_replica)
    return build_podclique(pcs, instance, owner, existing)
