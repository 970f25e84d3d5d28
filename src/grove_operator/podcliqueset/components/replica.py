"""PodCliqueSetReplica (group 1): gang termination and the rolling update of whole PodCliqueSet replicas.

Upstream's PodCliqueSetReplica component, in the first group because both decide whether PodCliques of a replica
are deleted, which the later groups must not second-guess in the same reconcile. Every decision is a pure function
of the cache (`lifecycle.termination`, `lifecycle.rollout`, over the replica lanes of `lifecycle.lane`); this
component only carries it out:

* a replica whose counting breach outlived `terminationDelay` loses every PodClique (standalone and scaling-group
  members), its scaling groups get `GangTerminationInProgress`, a Warning Event names the replica and the breach,
  and the later groups wait for the next reconcile; a younger breach requeues the PodCliqueSet exactly when it
  will have outlived the delay;
* the rolling update's `currentGenerationHash` and `updateProgress` go into `ctx.extra[LIFECYCLE]`, which the
  status written at the end of this reconcile carries (`reconciler.compute_status`), with Events saying which
  replica is being updated. The PodClique and scaling-group controllers act on it from their caches.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import structlog

from grove_api import (
    CONDITION_GANG_TERMINATION_IN_PROGRESS,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueSetUpdateProgress,
    format_time,
)
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator import hashing
from grove_operator.desired.layout import is_terminating, replica_indices, standalone_cliques
from grove_operator.kinds import INDEX_PART_OF, PODCLIQUES, PODCLIQUESCALINGGROUPS
from grove_operator.lifecycle.lane import replica_lane
from grove_operator.lifecycle.rollout import current_replica, plan_rollout, replica_state
from grove_operator.lifecycle.sources import cache_sources
from grove_operator.lifecycle.termination import (
    Breach,
    group_breach,
    pclq_breach,
    plan_replica_termination,
    termination_delay,
)
from grove_operator.podcliqueset.components._common import PcsContext, children
from grove_operator.reconcile.childset import CONTINUE_AFTER
from grove_operator.reconcile.concurrency import bounded
from grove_operator.reconcile.ownership import managed
from grove_operator.reconcile.writes import delete_if_exists
from grove_runtime import errors
from grove_runtime.keys import ObjectKey, Result

__all__ = [
    "LIFECYCLE",
    "REASON_GANG_TERMINATION",
    "UNSEEN",
    "PodCliqueSetReplicas",
    "ReplicaDecision",
    "WrittenRollouts",
    "rollout_signature",
]

log = structlog.get_logger("grove_operator.podcliqueset.replica")
Obj = dict[str, Any]
LIFECYCLE = "lifecycle"
"""`ctx.extra` key of this reconcile's `ReplicaDecision`."""
REASON_GANG_TERMINATION = "GangTermination"
REASON_GANG_TERMINATION_ACTIVE = "GangTerminationActive"
UNSEEN = "rollout-unseen"
"""`ctx.extra` flag: the cache does not show this operator's last rollout write yet (decide nothing, write nothing)."""
MARK_ATTEMPTS = 5
UNSEEN_LIMIT = timedelta(seconds=10)
"""After this long a write the cache never showed (lost, overwritten) stops holding the PodCliqueSet back."""


def rollout_signature(status: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """The part of a PodCliqueSet status the rolling update decides: hash, start, end, replica being updated."""
    status = status or {}
    progress = status.get("updateProgress") or {}
    current = [(c.get("replicaIndex"), c.get("updateStartedAt")) for c in progress.get("currentlyUpdating") or ()]
    started, ended = progress.get("updateStartedAt"), progress.get("updateEndedAt")
    return (status.get("currentGenerationHash"), started, ended, current)


class WrittenRollouts:
    """The rollout state last written per PodCliqueSet, until the cache shows it (upstream keeps the same
    expectation for the generation hash): a decision taken on an older cached status would undo the last one,
    or pick a replica again."""

    def __init__(self) -> None:
        self._written: dict[ObjectKey, tuple[tuple[Any, ...], datetime]] = {}

    def remember(self, key: ObjectKey, status: Mapping[str, Any], now: datetime) -> None:
        """A status with this rollout state was just written."""
        self._written[key] = (rollout_signature(status), now)

    def unseen(self, key: ObjectKey, cached: Mapping[str, Any] | None, now: datetime) -> bool:
        """Whether the cached status still lacks the last write (forgotten once seen, or after `UNSEEN_LIMIT`)."""
        entry = self._written.get(key)
        if entry is None:
            return False
        if rollout_signature(cached) == entry[0] or now - entry[1] > UNSEEN_LIMIT:
            del self._written[key]
            return False
        return True

    def forget(self, key: ObjectKey) -> None:
        """The PodCliqueSet is gone."""
        self._written.pop(key, None)


@dataclass(frozen=True, slots=True)
class ReplicaDecision:
    """What the status written at the end of the reconcile must say about the update."""

    generation_hash: str
    progress: PodCliqueSetUpdateProgress | None
    stale_replicas: frozenset[int]


def raw_name(obj: Obj) -> str:
    """The object's name."""
    return str((obj.get("metadata") or {}).get("name") or "")


def _by_replica(objs: Sequence[Obj]) -> dict[int, list[Obj]]:
    grouped: dict[int, list[Obj]] = defaultdict(list)
    for obj in objs:
        index = ((obj.get("metadata") or {}).get("labels") or {}).get(glabels.LABEL_PCS_REPLICA_INDEX, "")
        if index.isdigit():
            grouped[int(index)].append(obj)
    return grouped


class PodCliqueSetReplicas:
    """Gang termination and rolling-update orchestration over the replicas of one PodCliqueSet."""

    name = "podcliquesetreplica"

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """It owns no objects of its own."""
        return []

    async def delete(self, ctx: PcsContext) -> None:
        """Nothing to clean up."""

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Decide, record the decision for the status, carry out the terminations."""
        if ctx.extra.get(UNSEEN):
            return Result(requeue_after=CONTINUE_AFTER)
        pcs = ctx.owner
        template = pcs.spec.template
        hashes = hashing.clique_hashes(template)
        target = hashing.generation_hash(template)
        pclqs = [o for o in ctx.cache.by_index(PODCLIQUES, INDEX_PART_OF, f"{ctx.namespace}/{ctx.key.name}")]
        pclqs = [o for o in pclqs if managed(o)]
        pcsgs = children(ctx, PODCLIQUESCALINGGROUPS)
        names = [str(o["metadata"]["name"]) for o in (*pclqs, *pcsgs)]
        indices = sorted(replica_indices(ctx.key.name, names, pcs.spec.replicas or 0))
        sources = cache_sources(ctx)
        states = {i: replica_state(i, replica_lane(pcs, i, sources, hashes)) for i in indices}
        status = pcs.status
        progress = status.update_progress if status is not None else None
        strategy = pcs.spec.effective_update_strategy()
        current = current_replica(progress) if strategy == "RollingRecreate" else None
        delay = termination_delay(pcs)
        breaches = self._breaches(ctx, indices, _by_replica(pclqs), _by_replica(pcsgs))
        termination = plan_replica_termination(breaches, delay, ctx.now, exempt=() if current is None else (current,))
        step = plan_rollout(
            strategy,
            status.current_generation_hash if status is not None else None,
            target,
            progress,
            states,
            ctx.now,
            breached=termination.breached,
            rebuilding=termination.rebuild.keys(),
        )
        stale = frozenset(i for i, s in states.items() if s.stale)
        ctx.extra[LIFECYCLE] = ReplicaDecision(target, step.progress, stale)
        for reason, message in step.events:
            log.info("rolling update", namespace=ctx.namespace, name=ctx.key.name, reason=reason, message=message)
            await ctx.recorder.normal(ctx.raw, reason, message)
        if step.in_progress:
            ctx.requeue_after(ctx.config.retry_interval)
        if termination.wait is not None:
            ctx.requeue_after(termination.wait)
        if not termination.rebuild:
            return None
        text = template.termination_delay or f"{delay:g}s"
        for index, breach in sorted(termination.rebuild.items()):
            await self._rebuild(ctx, index, breach, text, _by_replica(pclqs).get(index, []), _by_replica(pcsgs))
        return Result(requeue_after=CONTINUE_AFTER)

    def _breaches(
        self,
        ctx: PcsContext,
        indices: Sequence[int],
        pclqs: Mapping[int, list[Obj]],
        pcsgs: Mapping[int, list[Obj]],
    ) -> dict[int, list[Breach]]:
        """Each replica's counting breaches; a replica missing a standalone PodClique is skipped (being built)."""
        pcs = ctx.owner
        parse = ctx.parsed.parse
        found: dict[int, list[Breach]] = {}
        for index in indices:
            live = {
                str(o["metadata"]["name"]): parse(PodClique, o) for o in pclqs.get(index, ()) if not is_terminating(o)
            }
            cliques = standalone_cliques(pcs.spec.template)
            wanted = [gnames.standalone_pclq_name(ctx.key.name, index, c.name) for c in cliques]
            if any(name not in live for name in wanted):
                continue
            breaches = [b for name in wanted if (b := pclq_breach(live[name])) is not None]
            for raw in pcsgs.get(index, ()):
                pcsg = parse(PodCliqueScalingGroup, raw)
                group = raw_name(raw)
                members = [p for p in live.values() if (p.metadata.labels or {}).get(glabels.LABEL_PCSG) == group]
                breach = group_breach(pcsg, members)
                if breach is not None:
                    breaches.append(breach)
            found[index] = breaches
        return found

    async def _rebuild(
        self,
        ctx: PcsContext,
        index: int,
        breach: Breach,
        delay: str,
        pclqs: Sequence[Obj],
        pcsgs: Mapping[int, list[Obj]],
    ) -> None:
        """Delete every PodClique of replica `index`, mark its scaling groups, tell why."""
        victims = sorted(str(o["metadata"]["name"]) for o in pclqs if not is_terminating(o))
        await bounded(partial(delete_if_exists, ctx.client, PODCLIQUES, name, ctx.namespace) for name in victims)
        message = (
            f"replica {index}: {breach.describe()} for longer than terminationDelay {delay}; "
            f"deleted its {len(victims)} PodClique(s) to rebuild it"
        )
        log.warning("gang termination", namespace=ctx.namespace, name=ctx.key.name, replica=index, breach=breach.name)
        await ctx.recorder.warning(ctx.raw, REASON_GANG_TERMINATION, message)
        for raw in pcsgs.get(index, ()):
            await self._mark(ctx, raw, index)

    @staticmethod
    async def _mark(ctx: PcsContext, pcsg: Obj, index: int) -> None:
        """`GangTerminationInProgress=True` on a scaling group of the rebuilt replica (cleared when it recovers).

        Read fresh and written with its resourceVersion, retried on a conflict: the scaling group's own status
        writes race with this one (they too carry the resourceVersion, so neither undoes the other)."""
        name = str(pcsg["metadata"]["name"])
        mark = {
            "type": CONDITION_GANG_TERMINATION_IN_PROGRESS,
            "status": "True",
            "lastTransitionTime": format_time(ctx.now),
            "reason": REASON_GANG_TERMINATION_ACTIVE,
            "message": f"PodCliqueSet replica {index} is being rebuilt by gang termination",
        }
        for _ in range(MARK_ATTEMPTS):
            try:
                fresh = await ctx.client.get(PODCLIQUESCALINGGROUPS, name, ctx.namespace)
                conditions = [
                    c
                    for c in (fresh.get("status") or {}).get("conditions") or ()
                    if c.get("type") != CONDITION_GANG_TERMINATION_IN_PROGRESS
                ]
                body = {
                    "metadata": {"resourceVersion": fresh["metadata"]["resourceVersion"]},
                    "status": {"conditions": [*conditions, mark]},
                }
                await ctx.client.patch(PODCLIQUESCALINGGROUPS, name, body, ctx.namespace, subresource="status")
                return
            except errors.NotFound:
                return
            except errors.Conflict:
                continue
