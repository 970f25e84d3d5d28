"""Where a clique instance sits in a PodCliqueSet: replica, scaling group, PodGang.

Names, gang membership, startup ordering and status all need to answer the same questions ("is this PodClique a
scaling-group member?", "which gang is it in?", "which template built it?"). They are answered once here, on top of
the name functions of `grove_api.names`, so the answers cannot drift apart between modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from grove_api import (
    OwnerReference,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueSetTemplateSpec,
    PodCliqueTemplateSpec,
)
from grove_api import names as gnames

__all__ = [
    "CliqueInstance",
    "controller_reference",
    "identify_podclique",
    "is_terminating",
    "replica_indices",
    "scaling_group_configs",
    "scaling_group_identity",
    "split_indexed_name",
    "standalone_cliques",
]


@dataclass(frozen=True)
class CliqueInstance:
    """One PodClique of one PCS replica (and, for scaling-group members, of one PCSG replica)."""

    pcs_name: str
    pcs_replica: int
    clique: PodCliqueTemplateSpec
    scaling_group: PodCliqueScalingGroupConfig | None = None
    pcsg_replica: int | None = None

    @property
    def pcsg_fqn(self) -> str | None:
        """`<pcs>-<i>-<pcsg>` for members, None for standalone cliques."""
        if self.scaling_group is None:
            return None
        return gnames.pcsg_name(self.pcs_name, self.pcs_replica, self.scaling_group.name)

    @property
    def name(self) -> str:
        """The PodClique's fully qualified name."""
        fqn = self.pcsg_fqn
        if fqn is None:
            return gnames.standalone_pclq_name(self.pcs_name, self.pcs_replica, self.clique.name)
        return gnames.pcsg_member_pclq_name(fqn, self._replica(), self.clique.name)

    @property
    def in_scaled_gang(self) -> bool:
        """True for members of PCSG replicas at or above minAvailable (they get their own PodGang)."""
        return self.scaling_group is not None and self._replica() >= self.scaling_group.effective_min_available()

    @property
    def podgang(self) -> str:
        """The PodGang this PodClique's pods belong to."""
        if self.scaling_group is None:
            return gnames.podgang_name(self.pcs_name, self.pcs_replica)
        return gnames.podgang_name(
            self.pcs_name,
            self.pcs_replica,
            pcsg_fqn=self.pcsg_fqn,
            pcsg_replica=self._replica(),
            pcsg_min_available=self.scaling_group.effective_min_available(),
        )

    @property
    def base_podgang(self) -> str:
        """The base PodGang of the PCS replica (equal to `podgang` unless in a scaled gang)."""
        return gnames.base_podgang_name(self.pcs_name, self.pcs_replica)

    def _replica(self) -> int:
        if self.pcsg_replica is None:
            raise ValueError(f"clique {self.clique.name!r} is a scaling-group member but has no PCSG replica index")
        return self.pcsg_replica


def standalone_cliques(template: PodCliqueSetTemplateSpec) -> list[PodCliqueTemplateSpec]:
    """Cliques that belong to no scaling group, in template order."""
    return [c for c in template.cliques if template.scaling_group_of(c.name) is None]


def scaling_group_configs(template: PodCliqueSetTemplateSpec) -> list[PodCliqueScalingGroupConfig]:
    """The scaling-group configs in template order (empty when there are none)."""
    return list(template.pod_clique_scaling_groups or ())


def split_indexed_name(parent_name: str, name: str) -> tuple[int, str] | None:
    """`<parent>-<i>` or `<parent>-<i>-<rest>` as (i, rest) (rest "" when absent); None for any other name.

    Every child name Grove derives is built this way (PodCliques, scaling groups, gangs, Services, members), so
    this is the one place that reads an index back out of a name.
    """
    prefix = f"{parent_name}-"
    if not name.startswith(prefix):
        return None
    index, _, rest = name[len(prefix) :].partition("-")
    return (int(index), rest) if index.isdigit() else None


def identify_podclique(pcs: PodCliqueSet, pclq_name: str) -> CliqueInstance | None:
    """Which clique instance of `pcs` a PodClique name denotes, or None if it is not one of its names.

    Parsing goes against the template's own clique and group names, so dashes inside names are not ambiguous.
    """
    pcs_name = pcs.metadata.name or ""
    split = split_indexed_name(pcs_name, pclq_name)
    if split is None or not split[1]:
        return None
    pcs_replica, rest = split
    template = pcs.spec.template
    clique = template.clique(rest)
    if clique is not None and template.scaling_group_of(rest) is None:
        return CliqueInstance(pcs_name, pcs_replica, clique)
    for group in scaling_group_configs(template):
        member_split = split_indexed_name(group.name, rest)
        if member_split is None:
            continue
        member = template.clique(member_split[1])
        if member is not None and member.name in group.clique_names:
            return CliqueInstance(pcs_name, pcs_replica, member, group, member_split[0])
    return None


def scaling_group_identity(pcs: PodCliqueSet, pcsg_name: str) -> tuple[int, PodCliqueScalingGroupConfig] | None:
    """The PCS replica index and config a PodCliqueScalingGroup name (`<pcs>-<i>-<pcsg>`) denotes, if any."""
    split = split_indexed_name(pcs.metadata.name or "", pcsg_name)
    if split is None:
        return None
    config = next((g for g in scaling_group_configs(pcs.spec.template) if g.name == split[1]), None)
    return None if config is None else (split[0], config)


def replica_indices(parent_name: str, child_names: Iterable[str], replicas: int) -> set[int]:
    """The replica indices below `replicas` of children named `<parent>-<i>-...` (a PCS's or a PCSG's).

    Status rollups walk these instead of `range(replicas)`: a replica without children has nothing to count.
    """
    found: set[int] = set()
    for name in child_names:
        split = split_indexed_name(parent_name, name)
        if split is not None and split[0] < replicas:
            found.add(split[0])
    return found


def controller_reference(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    """A controller owner reference: garbage collection cascades through it and blocks owner deletion."""
    ref = OwnerReference(
        api_version=api_version, kind=kind, name=name, uid=uid, controller=True, block_owner_deletion=True
    )
    return ref.model_dump(by_alias=True, exclude_none=True)


def is_terminating(obj: Mapping[str, Any]) -> bool:
    """True when the object (a plain dict) carries a deletionTimestamp."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))
