"""One PodCliqueSet replica as its rolling update sees it: an ordered lane of units.

The units are the replica's standalone PodCliques in template order, then its scaling groups in config order. Why
a lane: inside the replica being updated at most one thing may be down because of the update at any moment, yet
the PodClique and scaling-group controllers decide independently. So a unit replaces a Ready pod (or a Ready
scaling-group replica) only when every unit before it has *settled* (no old pod, nothing down or going) and every
unit after it is *quiet* (nothing down or going): the first unsettled unit is the only one that may act, whichever
controller asks first, and a second template arriving mid-update never lets an earlier unit act while a later one
still waits for a replacement.

Everything here is computed from the cache through three lookups (`Sources`), which tests give as dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueScalingGroupConfig, PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import scaling_group_configs, standalone_cliques
from grove_operator.lifecycle.facts import CliqueFacts, clique_facts

__all__ = [
    "GroupReplica",
    "Sources",
    "Unit",
    "clique_unit",
    "group_replicas",
    "lane_allows",
    "member_deletions",
    "replica_lane",
]

Obj = Mapping[str, Any]


def member_deletions(pcsg_name: str) -> str:
    """The name a scaling group's deletions of its member PodCliques are expected under (`Sources.pending`); no
    object can be named with a `#`."""
    return f"{pcsg_name}#member-deletions"


def _nothing_pending(_name: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Sources:
    """Cache lookups by name: a live PodClique, a scaling group, the pods of a PodClique, and whether a PodClique
    has pod creations or deletions the cache does not show yet (another controller's worker deleted a pod a moment
    ago: that PodClique is not quiet, whatever its cached pods say), or a scaling group member deletions
    (`member_deletions`)."""

    pclq: Callable[[str], PodClique | None]
    pcsg: Callable[[str], PodCliqueScalingGroup | None]
    pods: Callable[[str], Sequence[Obj]]
    pending: Callable[[str], bool] = _nothing_pending


@dataclass(frozen=True, slots=True)
class GroupReplica:
    """One replica of a scaling group: its member PodCliques taken together."""

    index: int
    members: tuple[str, ...]
    complete: bool
    """Every member PodClique exists and is not being deleted."""
    stale: bool
    """A member carries an older template or has a pod running one."""
    available: bool
    """Complete, and every member has its minAvailable Ready pods."""
    quiet: bool
    """Complete, and nothing of it down or going (`CliqueFacts.quiet`)."""
    terminating: bool
    """A member PodClique is being deleted."""
    scheduled_pods: int

    @property
    def settled(self) -> bool:
        """Quiet and on the newest template."""
        return self.quiet and not self.stale


@dataclass(frozen=True, slots=True)
class Unit:
    """A standalone PodClique or a scaling group of the replica (then with its replicas)."""

    name: str
    stale: bool
    available: bool
    quiet: bool
    scheduled_pods: int
    replicas: tuple[GroupReplica, ...] | None = None

    @property
    def settled(self) -> bool:
        """Quiet and on the newest template."""
        return self.quiet and not self.stale


def _live(pclq: PodClique | None) -> PodClique | None:
    return pclq if pclq is not None and pclq.metadata.deletion_timestamp is None else None


def _label_stale(pclq: PodClique | None, expected: str | None) -> bool:
    labels = pclq.metadata.labels or {} if pclq is not None else {}
    return pclq is not None and expected is not None and labels.get(glabels.LABEL_POD_TEMPLATE_HASH) != expected


def clique_unit(
    name: str,
    pclq: PodClique | None,
    facts: CliqueFacts,
    replicas: int,
    min_available: int,
    expected: str | None,
    *,
    pending: bool = False,
) -> Unit:
    """A standalone PodClique as a unit (missing: neither available nor settled; `pending`: pod writes the cache
    does not show yet)."""
    live = _live(pclq)
    stale = _label_stale(live, expected) or facts.old > 0
    available = live is not None and facts.available(min_available)
    wanted = live.spec.replicas if live is not None else replicas
    quiet = live is not None and facts.quiet(wanted) and not pending
    return Unit(name, stale, available, quiet, facts.scheduled)


def group_replicas(
    pcs: PodCliqueSet,
    pcsg_name: str,
    config: PodCliqueScalingGroupConfig,
    replicas: int,
    sources: Sources,
    hashes: Mapping[str, str],
) -> tuple[GroupReplica, ...]:
    """Every replica `0..replicas-1` of scaling group `pcsg_name` from its member PodCliques and their pods."""
    template = pcs.spec.template
    out: list[GroupReplica] = []
    for j in range(replicas):
        names = tuple(gnames.pcsg_member_pclq_name(pcsg_name, j, c) for c in config.clique_names)
        stale = terminating = False
        complete = available = quiet = True
        scheduled = 0
        for name, clique_name in zip(names, config.clique_names, strict=True):
            clique = template.clique(clique_name)
            pclq = sources.pclq(name)
            live = _live(pclq)
            terminating = terminating or (pclq is not None and live is None)
            expected = hashes.get(clique_name)
            facts = clique_facts(sources.pods(name), expected)
            scheduled += facts.scheduled
            min_available = clique.spec.effective_min_available() if clique is not None else 0
            wanted = live.spec.replicas if live is not None else (clique.spec.replicas if clique is not None else 0)
            member_stale = _label_stale(live, expected) or facts.old > 0
            stale = stale or member_stale
            complete = complete and live is not None
            available = available and live is not None and facts.available(min_available)
            quiet = quiet and live is not None and facts.quiet(wanted) and not sources.pending(name)
        out.append(GroupReplica(j, names, complete, stale, available, quiet, terminating, scheduled))
    return tuple(out)


def replica_lane(pcs: PodCliqueSet, index: int, sources: Sources, hashes: Mapping[str, str]) -> list[Unit]:
    """The units of PCS replica `index` in update order: standalone PodCliques, then scaling groups."""
    pcs_name = pcs.metadata.name or ""
    units: list[Unit] = []
    for clique in standalone_cliques(pcs.spec.template):
        name = gnames.standalone_pclq_name(pcs_name, index, clique.name)
        expected = hashes.get(clique.name)
        facts = clique_facts(sources.pods(name), expected)
        units.append(
            clique_unit(
                name,
                sources.pclq(name),
                facts,
                clique.spec.replicas,
                clique.spec.effective_min_available(),
                expected,
                pending=sources.pending(name),
            )
        )
    for config in scaling_group_configs(pcs.spec.template):
        name = gnames.pcsg_name(pcs_name, index, config.name)
        pcsg = sources.pcsg(name)
        live = pcsg if pcsg is not None and pcsg.metadata.deletion_timestamp is None else None
        count = live.spec.replicas if live is not None else config.effective_replicas()
        minimum = live.spec.effective_min_available() if live is not None else config.effective_min_available()
        replicas = group_replicas(pcs, name, config, count, sources, hashes)
        recreating = sources.pending(member_deletions(name))
        units.append(
            Unit(
                name,
                stale=any(r.stale for r in replicas),
                available=live is not None and sum(r.available for r in replicas) >= minimum,
                quiet=live is not None and all(r.quiet for r in replicas) and not recreating,
                scheduled_pods=sum(r.scheduled_pods for r in replicas),
                replicas=replicas,
            )
        )
    return units


def lane_allows(lane: Sequence[Unit], name: str) -> bool:
    """Whether unit `name` may take a Ready pod or replica down now: every unit before it has settled and every
    unit after it is quiet."""
    names = [u.name for u in lane]
    if name not in names:
        return False
    position = names.index(name)
    return all(u.settled for u in lane[:position]) and all(u.quiet for u in lane[position + 1 :])
