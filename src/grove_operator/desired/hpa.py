"""Desired HorizontalPodAutoscalers (autoscaling/v2) for `autoScalingConfig` and `scaleConfig` (§3.2, §3.10).

One HPA per (PCS replica x standalone clique with `autoScalingConfig`) targeting the PodClique, and one per
(PCS replica x scaling group with `scaleConfig`) targeting the PCSG; each is named after its target. Metrics are
copied verbatim; `minReplicas` defaults to the template replicas.
"""

from __future__ import annotations

from typing import Any

from grove_api import AutoScalingConfig, PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired._layout import controller_reference, scaling_group_configs, standalone_cliques

__all__ = ["build_hpa", "build_hpas"]


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


def build_hpas(pcs: PodCliqueSet) -> list[dict[str, Any]]:
    """Every HPA the PCS should have, replica by replica: standalone cliques first, then scaling groups."""
    pcs_name = pcs.metadata.name or ""
    template = pcs.spec.template
    hpas: list[dict[str, Any]] = []
    for i in range(pcs.spec.replicas or 0):
        for clique in standalone_cliques(template):
            if clique.spec.auto_scaling_config is not None:
                target = gnames.standalone_pclq_name(pcs_name, i, clique.name)
                hpas.append(
                    build_hpa(pcs, PodClique.KIND, target, clique.spec.auto_scaling_config, clique.spec.replicas)
                )
        for group in scaling_group_configs(template):
            if group.scale_config is not None:
                target = gnames.pcsg_name(pcs_name, i, group.name)
                hpas.append(
                    build_hpa(pcs, PodCliqueScalingGroup.KIND, target, group.scale_config, group.effective_replicas())
                )
    return hpas
