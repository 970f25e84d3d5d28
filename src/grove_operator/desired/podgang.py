"""Desired PodGangs of a PodCliqueSet and their `Initialized` condition (grove-reference §1.5, §3.3).

Each PCS replica has a base gang holding its standalone cliques and the first `minAvailable` replicas of every
scaling group, plus one scaled gang per further PCSG replica. Gangs are created before their pods exist (possibly
with empty pod references), so this module separates the *plan* (names, PodGroups, constraints: a function of the
PCS, the live PCSG replica counts and the topology bindings) from the *object* (plan + the pods that exist now).
`GangPlanner` plans one gang at a time, so the operator never lists the gangs of a replica count it was given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from grove_api import (
    CONDITION_INITIALIZED,
    REASON_PODS_CREATED,
    REASON_PODS_CREATION_PENDING,
    ClusterTopologyBinding,
    PodClique,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplateSpec,
    PodGang,
    format_time,
)
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import (
    CliqueInstance,
    controller_reference,
    is_terminating,
    scaling_group_configs,
    split_indexed_name,
    standalone_cliques,
)
from grove_operator.desired.topology import TopologyTranslator

__all__ = [
    "GangKey",
    "GangPlan",
    "GangPlanner",
    "PodGroupPlan",
    "all_pods_created",
    "build_podgang",
    "expected_podgangs",
    "group_pods_by_gang",
    "initialized_status",
    "pod_references",
    "resolve_scheduler_name",
]


@dataclass(frozen=True)
class PodGroupPlan:
    """One PodGroup: a PodClique FQN, its gang minimum and its translated constraint."""

    name: str
    min_replicas: int
    topology_constraint: dict[str, Any] | None = None


@dataclass(frozen=True)
class GangPlan:
    """Everything about a PodGang that does not depend on which pods exist."""

    name: str
    pcs_replica: int
    is_base: bool
    pod_groups: tuple[PodGroupPlan, ...]
    topology_constraint: dict[str, Any] | None = None
    group_configs: tuple[dict[str, Any], ...] = ()
    topology_name: str | None = None

    @property
    def pod_group_names(self) -> list[str]:
        """PodClique FQNs of the gang, in PodGroup order."""
        return [g.name for g in self.pod_groups]

    @property
    def has_constraints(self) -> bool:
        """True when any translated constraint is present (then the gang is annotated with the topology)."""
        return (
            self.topology_constraint is not None
            or bool(self.group_configs)
            or any(g.topology_constraint is not None for g in self.pod_groups)
        )


def resolve_scheduler_name(pcs: PodCliqueSet, default_scheduler_name: str) -> str:
    """The backend of the PCS: the cliques' common `schedulerName`, or the operator default when empty."""
    for clique in pcs.spec.template.cliques:
        name = clique.spec.pod_spec.get("schedulerName")
        if name:
            return str(name)
    return default_scheduler_name


class GangKey(NamedTuple):
    """Which gang: the base gang of a PCS replica, or the scaled gang of one replica of one scaling group."""

    pcs_replica: int
    group: str | None = None
    pcsg_replica: int | None = None


@dataclass(frozen=True)
class _GroupPlan:
    config: PodCliqueScalingGroupConfig
    constraint: dict[str, Any] | None
    min_available: int
    members: tuple[tuple[PodCliqueTemplateSpec, int, dict[str, Any] | None], ...]


class GangPlanner:
    """The gangs of one PodCliqueSet as slots (`GangKey`), planned one at a time and enumerated lazily.

    `live_pcsg_replicas` maps a PCSG FQN to its live `spec.replicas`; a PCSG absent from it (not created yet) uses
    the template value. What each clique and group contributes is the same for every replica, so it is translated
    once here, not per gang. Nothing is listed per replica: the number of gangs is a number in a spec.
    """

    def __init__(
        self,
        pcs: PodCliqueSet,
        live_pcsg_replicas: Mapping[str, int],
        topologies: Mapping[str, ClusterTopologyBinding] | None = None,
    ) -> None:
        self.pcs = pcs
        self.pcs_name = pcs.metadata.name or ""
        self.live = live_pcsg_replicas
        translator = TopologyTranslator(pcs, topologies or {})
        template = pcs.spec.template
        self._gang_constraint = translator.pcs_constraint()
        self._standalone = [
            (c, c.spec.effective_min_available(), translator.clique_constraint(c)) for c in standalone_cliques(template)
        ]
        self._groups: dict[str, _GroupPlan] = {}
        for group in scaling_group_configs(template):
            members = [c for name in group.clique_names if (c := template.clique(name)) is not None]
            self._groups[group.name] = _GroupPlan(
                group,
                translator.group_constraint(group),
                group.effective_min_available(),
                tuple((c, c.spec.effective_min_available(), translator.clique_constraint(c, group)) for c in members),
            )
        self._topology_name = next(iter(sorted(translator.used_topologies)), None)

    def pcsg_replicas(self, pcs_replica: int, group: str) -> int:
        """The live (else template) replica count of the scaling group `group` of PCS replica `pcs_replica`."""
        config = self._groups[group].config
        return self.live.get(gnames.pcsg_name(self.pcs_name, pcs_replica, group), config.effective_replicas())

    def gang_keys(self) -> Iterator[GangKey]:
        """Every gang, lazily: per PCS replica the base gang, then the scaled gangs of each scaling group."""
        for i in range(self.pcs.spec.replicas or 0):
            yield GangKey(i)
            for name, group in self._groups.items():
                for j in range(group.min_available, self.pcsg_replicas(i, name)):
                    yield GangKey(i, name, j)

    def count(self) -> int:
        """How many gangs `gang_keys` yields, counted from the live scaling groups without walking the replicas."""
        replicas = self.pcs.spec.replicas or 0
        total = replicas
        for name, group in self._groups.items():
            template_scaled = max(0, group.config.effective_replicas() - group.min_available)
            live = 0
            for fqn, count in self.live.items():
                split = split_indexed_name(self.pcs_name, fqn)
                if split is not None and split[1] == name and split[0] < replicas:
                    live += 1
                    total += max(0, count - group.min_available)
            total += (replicas - live) * template_scaled
        return total

    def wanted(self, key: GangKey) -> bool:
        """Whether the PCS still has gang `key`."""
        if not 0 <= key.pcs_replica < (self.pcs.spec.replicas or 0):
            return False
        if key.group is None:
            return True
        group = self._groups.get(key.group)
        return (
            group is not None
            and key.pcsg_replica is not None
            and group.min_available <= key.pcsg_replica < self.pcsg_replicas(key.pcs_replica, key.group)
        )

    def name(self, key: GangKey) -> str:
        """The gang's name."""
        if key.group is None or key.pcsg_replica is None:
            return gnames.base_podgang_name(self.pcs_name, key.pcs_replica)
        fqn = gnames.pcsg_name(self.pcs_name, key.pcs_replica, key.group)
        return gnames.scaled_podgang_name(
            self.pcs_name, key.pcs_replica, fqn, key.pcsg_replica, self._groups[key.group].min_available
        )

    def key_of(self, gang_name: str) -> GangKey | None:
        """The gang a name denotes (`<pcs>-<i>` or `<pcs>-<i>-<group>-<j - minAvailable>`), if any."""
        split = split_indexed_name(self.pcs_name, gang_name)
        if split is None:
            return None
        if not split[1]:
            return GangKey(split[0])
        group_name, _, offset = split[1].rpartition("-")
        group = self._groups.get(group_name)
        if group is None or not offset.isdigit():
            return None
        return GangKey(split[0], group_name, int(offset) + group.min_available)

    def _member_groups(self, pcs_replica: int, group: _GroupPlan, pcsg_replica: int) -> list[PodGroupPlan]:
        return [
            PodGroupPlan(CliqueInstance(self.pcs_name, pcs_replica, c, group.config, pcsg_replica).name, m, constraint)
            for c, m, constraint in group.members
        ]

    def plan(self, key: GangKey) -> GangPlan:
        """The plan of gang `key` (the base gang holds the first `minAvailable` replicas of every scaling group)."""
        i = key.pcs_replica
        if key.group is not None and key.pcsg_replica is not None:
            group = self._groups[key.group]
            plan = GangPlan(
                name=self.name(key),
                pcs_replica=i,
                is_base=False,
                pod_groups=tuple(self._member_groups(i, group, key.pcsg_replica)),
                topology_constraint=group.constraint if group.constraint is not None else self._gang_constraint,
            )
        else:
            pod_groups = [
                PodGroupPlan(CliqueInstance(self.pcs_name, i, c).name, m, constraint)
                for c, m, constraint in self._standalone
            ]
            group_configs: list[dict[str, Any]] = []
            for name, group in self._groups.items():
                fqn = gnames.pcsg_name(self.pcs_name, i, name)
                for j in range(min(group.min_available, self.pcsg_replicas(i, name))):
                    members = self._member_groups(i, group, j)
                    pod_groups.extend(members)
                    if group.constraint is not None:
                        group_configs.append(
                            {
                                "name": gnames.topology_constraint_group_config_name(fqn, j),
                                "podGroupNames": [g.name for g in members],
                                "topologyConstraint": group.constraint,
                            }
                        )
            plan = GangPlan(
                name=self.name(key),
                pcs_replica=i,
                is_base=True,
                pod_groups=tuple(pod_groups),
                topology_constraint=self._gang_constraint,
                group_configs=tuple(group_configs),
            )
        if plan.has_constraints:
            return dataclasses.replace(plan, topology_name=self._topology_name)
        return plan


def expected_podgangs(
    pcs: PodCliqueSet,
    live_pcsg_replicas: Mapping[str, int],
    topologies: Mapping[str, ClusterTopologyBinding] | None = None,
) -> list[GangPlan]:
    """Every gang of a (small) PCS in creation order; the operator itself walks `GangPlanner` lazily."""
    planner = GangPlanner(pcs, live_pcsg_replicas, topologies)
    return [planner.plan(key) for key in planner.gang_keys()]


def _pclq_of(pod: Mapping[str, Any]) -> str | None:
    """The PodClique a pod belongs to: its `grove.io/podclique` label, else its PodClique owner."""
    metadata = pod.get("metadata") or {}
    label = (metadata.get("labels") or {}).get(glabels.LABEL_PODCLIQUE)
    if label:
        return str(label)
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("kind") == PodClique.KIND:
            return str(ref.get("name"))
    return None


def group_pods_by_gang(pods: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Pods keyed by their `grove.io/podgang` label, so each gang is built from its own pods in one pass."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        gang = ((pod.get("metadata") or {}).get("labels") or {}).get(glabels.LABEL_PODGANG)
        if gang:
            grouped.setdefault(str(gang), []).append(pod)
    return grouped


def pod_references(gang_name: str, pods: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """Non-terminating pods labelled with `gang_name`, grouped by PodClique and sorted by pod name."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for pod in pods:
        metadata = pod.get("metadata") or {}
        if is_terminating(pod) or (metadata.get("labels") or {}).get(glabels.LABEL_PODGANG) != gang_name:
            continue
        pclq = _pclq_of(pod)
        if pclq is not None:
            grouped.setdefault(pclq, []).append({"namespace": metadata.get("namespace", ""), "name": metadata["name"]})
    for refs in grouped.values():
        refs.sort(key=lambda ref: ref["name"])
    return grouped


def build_podgang(
    pcs: PodCliqueSet, plan: GangPlan, pods: Iterable[Mapping[str, Any]], scheduler_name: str
) -> dict[str, Any]:
    """The PodGang object for `plan` with references to the given pods (pass the PCS's pods from the cache)."""
    pcs_name = pcs.metadata.name or ""
    references = pod_references(plan.name, pods)
    podgroups: list[dict[str, Any]] = []
    for group in plan.pod_groups:
        entry: dict[str, Any] = {
            "name": group.name,
            "podReferences": references.get(group.name, []),
            "minReplicas": group.min_replicas,
        }
        if group.topology_constraint is not None:
            entry["topologyConstraint"] = group.topology_constraint
        podgroups.append(entry)
    spec: dict[str, Any] = {"podgroups": podgroups}
    if plan.topology_constraint is not None:
        spec["topologyConstraint"] = plan.topology_constraint
    if plan.group_configs:
        spec["topologyConstraintGroupConfigs"] = [dict(c) for c in plan.group_configs]
    if pcs.spec.template.priority_class_name:
        spec["priorityClassName"] = pcs.spec.template.priority_class_name
    annotations = {k: v for k, v in (pcs.metadata.annotations or {}).items() if not k.startswith("grove.io/")}
    if plan.topology_name is not None:
        annotations[glabels.ANNOTATION_TOPOLOGY_NAME] = plan.topology_name
    metadata: dict[str, Any] = {
        "name": plan.name,
        "namespace": pcs.metadata.namespace or "default",
        "labels": glabels.podgang_labels(pcs_name, scheduler_name, pcs.metadata.labels),
        "ownerReferences": [
            controller_reference(PodCliqueSet.API_VERSION, PodCliqueSet.KIND, pcs_name, pcs.metadata.uid or "")
        ],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": PodGang.API_VERSION, "kind": PodGang.KIND, "metadata": metadata, "spec": spec}


def all_pods_created(plan: GangPlan, pclqs: Mapping[str, PodClique], pods: Iterable[Mapping[str, Any]]) -> bool:
    """True when every constituent PodClique exists with at least `spec.replicas` live pods, all in this gang."""
    live: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        pclq = _pclq_of(pod)
        if pclq is not None and not is_terminating(pod):
            live.setdefault(pclq, []).append(pod)
    for name in plan.pod_group_names:
        pclq_obj = pclqs.get(name)
        if pclq_obj is None or pclq_obj.metadata.deletion_timestamp is not None:
            return False
        members = live.get(name, [])
        if len(members) < pclq_obj.spec.replicas:
            return False
        if any((p.get("metadata") or {}).get("labels", {}).get(glabels.LABEL_PODGANG) != plan.name for p in members):
            return False
    return True


def initialized_status(existing: PodGang, pods_created: bool, now: datetime) -> dict[str, Any] | None:
    """The status to write for the `Initialized` condition, or None when it is already right.

    The first write sets `phase: Pending`; later writes keep the phase and the conditions a scheduler owns.
    """
    status = existing.status
    conditions = (
        [c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in (status.conditions or ())]
        if status
        else []
    )
    current = next((c for c in conditions if c.get("type") == CONDITION_INITIALIZED), None)
    wanted = "True" if pods_created else "False"
    if current is not None and (current.get("status") == wanted or current.get("status") == "True"):
        return None
    condition = {
        "type": CONDITION_INITIALIZED,
        "status": wanted,
        "lastTransitionTime": format_time(now),
        "reason": REASON_PODS_CREATED if pods_created else REASON_PODS_CREATION_PENDING,
        "message": "all pods of the PodGang have been created"
        if pods_created
        else "waiting for all pods of the PodGang to be created",
    }
    others = [c for c in conditions if c.get("type") != CONDITION_INITIALIZED]
    phase = status.phase if status is not None and current is not None else "Pending"
    return {"phase": phase, "conditions": [*others, condition]}
