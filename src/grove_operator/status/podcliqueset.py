"""PodCliqueSet status: replicas, availableReplicas, updatedReplicas, selector, topology condition (§3.6).

A PCS replica is available when every expected standalone PodClique has `readyReplicas >= minAvailable` and every
expected scaling group has `availableReplicas >= minAvailable`; updated additionally requires every one of them to
run the newest templates, and no pod of the replica to run an older one. `TopologyLevelsUnavailable` reports
constraints the PodGangs had to drop.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import Any

from grove_api import (
    CONDITION_TOPOLOGY_LEVELS_UNAVAILABLE,
    ClusterTopologyBinding,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueSet,
)
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator import hashing
from grove_operator.desired import topology
from grove_operator.desired.layout import replica_indices, scaling_group_configs, standalone_cliques
from grove_operator.status._conditions import set_condition
from grove_operator.status.scalinggroup import pclq_fully_updated

__all__ = ["compute_podcliqueset_status", "topology_condition"]


def topology_condition(
    pcs: PodCliqueSet, topologies: Mapping[str, ClusterTopologyBinding]
) -> tuple[str, str, str] | None:
    """(status, reason, message) of `TopologyLevelsUnavailable`, or None when the PCS has no constraints."""
    translator = topology.TopologyTranslator(pcs, topologies)
    if not translator.has_constraints():
        return None
    if not topologies:
        return ("Unknown", topology.REASON_TAS_DISABLED, "no ClusterTopologyBinding exists")
    translator.translate_all()
    problems = translator.problems
    for reason, status in (
        (topology.REASON_TOPOLOGY_NAME_MISSING, "Unknown"),
        (topology.REASON_TOPOLOGY_NOT_FOUND, "True"),
        (topology.REASON_LEVELS_UNAVAILABLE, "True"),
    ):
        if reason in problems:
            return (status, reason, "; ".join(problems[reason]))
    return ("False", topology.REASON_ALL_LEVELS_AVAILABLE, "all topology levels are available")


def compute_podcliqueset_status(
    pcs: PodCliqueSet,
    pclqs: Iterable[PodClique],
    pcsgs: Iterable[PodCliqueScalingGroup],
    now: datetime,
    topologies: Mapping[str, ClusterTopologyBinding] | None = None,
    stale_replicas: Collection[int] = (),
) -> dict[str, Any]:
    """The complete status of `pcs` from its standalone PodCliques and scaling groups (others are ignored);
    `stale_replicas` still have a pod or PodClique on an older template, so they are not updated whatever their
    children's statuses say yet."""
    status = pcs.status.model_dump(by_alias=True, exclude_none=True, mode="json") if pcs.status is not None else {}
    pcs_name = pcs.metadata.name or ""
    pcs_hash = pcs.status.current_generation_hash if pcs.status is not None else None
    pclq_by_name = {p.metadata.name or "": p for p in pclqs if p.metadata.deletion_timestamp is None}
    pcsg_by_name = {g.metadata.name or "": g for g in pcsgs if g.metadata.deletion_timestamp is None}
    template = pcs.spec.template
    hashes = hashing.clique_hashes(template)
    replicas = pcs.spec.replicas or 0
    standalone = standalone_cliques(template)
    groups = scaling_group_configs(template)
    available = updated = updated_pclqs = updated_pcsgs = 0
    # Only replicas that have children can be available or updated: walk those, never `range(replicas)`.
    for i in sorted(replica_indices(pcs_name, [*pclq_by_name, *pcsg_by_name], replicas)):
        replica_available = True
        replica_updated = i not in stale_replicas
        for clique in standalone:
            pclq = pclq_by_name.get(gnames.standalone_pclq_name(pcs_name, i, clique.name))
            ready = pclq.status.ready_replicas if pclq is not None and pclq.status is not None else 0
            if pclq is None or ready < pclq.spec.effective_min_available():
                replica_available = False
            fully = pclq is not None and pclq_fully_updated(pclq, hashes.get(clique.name), pcs_hash)
            updated_pclqs += int(fully)
            replica_updated = replica_updated and fully
        for group in groups:
            pcsg = pcsg_by_name.get(gnames.pcsg_name(pcs_name, i, group.name))
            pcsg_available = pcsg.status.available_replicas if pcsg is not None and pcsg.status is not None else 0
            if pcsg is None or pcsg_available < pcsg.spec.effective_min_available():
                replica_available = False
            fully = (
                pcsg is not None
                and pcsg.status is not None
                and pcs_hash is not None
                and pcsg.status.current_pod_clique_set_generation_hash == pcs_hash
            )
            updated_pcsgs += int(fully)
            replica_updated = replica_updated and fully
        available += int(replica_available)
        updated += int(replica_available and replica_updated)
    if not standalone and not groups:
        available = updated = replicas  # replicas without cliques have nothing to wait for
    total_pclqs, total_pcsgs = replicas * len(standalone), replicas * len(groups)
    status.update(
        replicas=replicas,
        availableReplicas=available,
        updatedReplicas=updated,
        hpaPodSelector=glabels.pcs_hpa_pod_selector(pcs_name),
    )
    if "updateProgress" in status:
        status["updateProgress"].update(
            updatedPodCliquesCount=updated_pclqs,
            totalPodCliquesCount=total_pclqs,
            updatedPodCliqueScalingGroupsCount=updated_pcsgs,
            totalPodCliqueScalingGroupsCount=total_pcsgs,
        )
    previous = pcs.status.conditions if pcs.status is not None else None
    conditions = [
        c.model_dump(by_alias=True, exclude_none=True, mode="json")
        for c in previous or ()
        if c.type != CONDITION_TOPOLOGY_LEVELS_UNAVAILABLE
    ]
    topo = topology_condition(pcs, topologies or {})
    if topo is not None:
        set_condition(conditions, previous, CONDITION_TOPOLOGY_LEVELS_UNAVAILABLE, *topo, now, pcs.metadata.generation)
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    return status
