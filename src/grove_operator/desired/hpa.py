"""Desired HorizontalPodAutoscalers (autoscaling/v2) for `autoScalingConfig` and `scaleConfig` (§3.2, §3.10).

One HPA per (PCS replica x standalone clique with `autoScalingConfig`) targeting the PodClique, and one per
(PCS replica x scaling group with `scaleConfig`) targeting the PCSG; each is named after its target. Metrics are
copied verbatim; `minReplicas` defaults to the template replicas.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from grove_api import AutoScalingConfig, PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import controller_reference, scaling_group_configs, standalone_cliques

__all__ = ["HpaTarget", "build_hpa", "build_hpa_for", "build_hpas", "hpa_targets", "is_hpa_target", "target_name"]


def build_hpa(
    pcs: PodCliqueSet, target_kind: str, target_name: str, config: AutoScalingConfig, default_min: int
) -> dict[str, Any]:
    """The HPA named after `target_name`, scaling a grove.io PodClique or PodCliqueScalingGroup."""
    pcs_name = pcs.metadata.name or ""
    name = gnames.hpa_name(target_name)
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": PodClique.API_VERSION, "kind": target_kind, "name": target_name},
        "minReplicas": default_min if config.min_replicas is None else config.min_replicas,
        "maxReplicas": config.max_replicas,
    }
    if config.metrics:
        spec["metrics"] = [dict(m) for m in config.metrics]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": name,
            "namespace": pcs.metadata.namespace or "default",
            "labels": glabels.component_labels(pcs_name, glabels.COMPONENT_HPA, name),
            "ownerReferences": [
                controller_reference(PodCliqueSet.API_VERSION, PodCliqueSet.KIND, pcs_name, pcs.metadata.uid or "")
            ],
        },
        "spec": spec,
    }


class HpaTarget(NamedTuple):
    """What one HPA scales: a standalone clique or a scaling group (`template_name`) of PCS replica `pcs_replica`."""

    pcs_replica: int
    kind: str
    template_name: str


def hpa_targets(pcs: PodCliqueSet) -> Iterator[HpaTarget]:
    """Every autoscaled target, lazily, replica by replica: standalone cliques first, then scaling groups."""
    template = pcs.spec.template
    cliques = [c.name for c in standalone_cliques(template) if c.spec.auto_scaling_config is not None]
    groups = [g.name for g in scaling_group_configs(template) if g.scale_config is not None]
    if not cliques and not groups:
        return
    for i in range(pcs.spec.replicas or 0):
        for clique in cliques:
            yield HpaTarget(i, PodClique.KIND, clique)
        for group in groups:
            yield HpaTarget(i, PodCliqueScalingGroup.KIND, group)


def target_name(pcs: PodCliqueSet, target: HpaTarget) -> str:
    """The name of the targeted PodClique or PodCliqueScalingGroup (and so of its HPA)."""
    pcs_name = pcs.metadata.name or ""
    if target.kind == PodClique.KIND:
        return gnames.standalone_pclq_name(pcs_name, target.pcs_replica, target.template_name)
    return gnames.pcsg_name(pcs_name, target.pcs_replica, target.template_name)


def is_hpa_target(pcs: PodCliqueSet, target: HpaTarget) -> bool:
    """Whether the PCS still autoscales `target` (replica in range, config present)."""
    if not 0 <= target.pcs_replica < (pcs.spec.replicas or 0):
        return False
    template = pcs.spec.template
    if target.kind == PodClique.KIND:
        clique = template.clique(target.template_name)
        return (
            clique is not None
            and template.scaling_group_of(clique.name) is None
            and clique.spec.auto_scaling_config is not None
        )
    group = next((g for g in scaling_group_configs(template) if g.name == target.template_name), None)
    return target.kind == PodCliqueScalingGroup.KIND and group is not None and group.scale_config is not None


def build_hpa_for(pcs: PodCliqueSet, target: HpaTarget) -> dict[str, Any]:
    """The HPA of `target` (which `is_hpa_target`)."""
    template = pcs.spec.template
    name = target_name(pcs, target)
    if target.kind == PodClique.KIND:
        clique = template.clique(target.template_name)
        if clique is None or clique.spec.auto_scaling_config is None:
            raise ValueError(f"clique {target.template_name!r} is not autoscaled")
        return build_hpa(pcs, PodClique.KIND, name, clique.spec.auto_scaling_config, clique.spec.replicas)
    group = next((g for g in scaling_group_configs(template) if g.name == target.template_name), None)
    if group is None or group.scale_config is None:
        raise ValueError(f"scaling group {target.template_name!r} is not autoscaled")
    return build_hpa(pcs, PodCliqueScalingGroup.KIND, name, group.scale_config, group.effective_replicas())


def build_hpas(pcs: PodCliqueSet) -> list[dict[str, Any]]:
    """Every HPA of a (small) PCS in creation order; the operator itself walks `hpa_targets` lazily."""
    return [build_hpa_for(pcs, target) for target in hpa_targets(pcs)]
