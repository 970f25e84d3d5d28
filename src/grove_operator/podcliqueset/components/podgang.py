"""PodGangs of a PodCliqueSet (group 3) and their `Initialized` condition (grove-reference §3.3).

Every wanted gang is created or patched at once, even before its pods exist (empty references), so the scheduler
sees the gang before any pod is ungated. Gangs no longer wanted (PCS or PCSG scale-in) are deleted. Status
discipline: a scheduler owns the PodGang status (phase, Scheduled, Ready, placementScore); the operator only
merges its own `Initialized` condition into the conditions of the freshest object it has (the server's answer to
its own write, else the cache) with a resourceVersion precondition, and writes `phase: Pending` only together
with the very first condition. A gang whose spec was edited by hand is reverted and reported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from grove_api import PodClique, PodCliqueSet, PodGang
from grove_api import labels as glabels
from grove_operator.desired import podgang as gangs
from grove_operator.desired.layout import is_terminating
from grove_operator.kinds import INDEX_PART_OF, PODCLIQUES, PODCLIQUESCALINGGROUPS, PODGANGS
from grove_operator.podcliqueset.components._common import TOPOLOGIES, Obj, PcsContext, children
from grove_operator.reconcile.childset import CONTINUE_AFTER, ChildSet
from grove_operator.reconcile.compare import in_sync
from grove_operator.reconcile.concurrency import bounded
from grove_operator.reconcile.writes import create_or_patch
from grove_runtime import errors
from grove_runtime.keys import Result
from grove_runtime.resources import PODS

__all__ = ["PodGangs"]


def _shape(spec: Mapping[str, Any] | None) -> list[tuple[str, int]]:
    return [(str(g.get("name")), int(g.get("minReplicas") or 0)) for g in (spec or {}).get("podgroups") or ()]


@dataclass(frozen=True)
class _Inputs:
    """What every gang of one reconcile is built from besides its plan."""

    planner: gangs.GangPlanner
    pods_by_gang: dict[str, list[Mapping[str, Any]]]
    pclqs: dict[str, Obj]
    scheduler: str
    pcs_inputs: tuple[Any, ...]


def _fingerprint(inputs: _Inputs, plan: gangs.GangPlan, pods: list[Mapping[str, Any]]) -> tuple[Any, ...]:
    """Everything a gang's desired object and `Initialized` verdict depend on, as one comparable value: the PCS
    inputs, the plan, the pod references, and each member PodClique's existence, deletion and `spec.replicas`."""
    members: list[tuple[str, bool | None, Any]] = []
    for name in plan.pod_group_names:
        raw = inputs.pclqs.get(name)
        if raw is None:
            members.append((name, None, None))
        else:
            members.append((name, is_terminating(raw), (raw.get("spec") or {}).get("replicas")))
    return (inputs.pcs_inputs, plan, gangs.pod_references(plan.name, pods), members)


class PodGangs(ChildSet[PodCliqueSet, gangs.GangKey, "_Inputs"]):
    """Create-or-patch wanted gangs, delete the others, maintain `Initialized`."""

    name = "podgang"
    rt = PODGANGS
    noun = "PodGang"

    def view(self, ctx: PcsContext) -> _Inputs:
        """The planner and the cached pods and PodCliques of this reconcile."""
        pcs = ctx.owner
        bound = ctx.config.max_pods_per_podcliqueset
        # Live PCSG replicas decide the scaled gangs; a scaling group scaled past the pod bound is refused by its
        # own controller, and its gangs are capped here, so no number in a spec is walked unbounded.
        live = {
            str(o["metadata"]["name"]): min(int((o.get("spec") or {}).get("replicas") or 0), bound)
            for o in children(ctx, PODCLIQUESCALINGGROUPS)
            if not is_terminating(o)
        }
        owner_key = f"{ctx.namespace}/{ctx.key.name}"
        scheduler = gangs.resolve_scheduler_name(pcs, ctx.config.default_scheduler_name)
        return _Inputs(
            planner=gangs.GangPlanner(pcs, live, ctx.extra.get(TOPOLOGIES) or {}),
            pods_by_gang=gangs.group_pods_by_gang(ctx.cache.by_index(PODS, INDEX_PART_OF, owner_key)),
            pclqs={str(o["metadata"]["name"]): o for o in ctx.cache.by_index(PODCLIQUES, INDEX_PART_OF, owner_key)},
            scheduler=scheduler,
            pcs_inputs=(
                pcs.metadata.uid,
                pcs.metadata.generation,
                sorted((pcs.metadata.labels or {}).items()),
                sorted((pcs.metadata.annotations or {}).items()),
                scheduler,
            ),
        )

    def existing(self, ctx: PcsContext) -> Iterable[Obj]:
        """Cached PodGangs of the PCS."""
        return children(ctx, PODGANGS, glabels.COMPONENT_PODGANG)

    def key_of(self, view: _Inputs, child: Obj) -> gangs.GangKey | None:
        """The gang a name denotes."""
        return view.planner.key_of(str(child["metadata"]["name"]))

    def wanted(self, view: _Inputs, key: gangs.GangKey) -> bool:
        """The PCS (with its live scaling groups) still has the gang."""
        return view.planner.wanted(key)

    def candidates(self, view: _Inputs) -> Iterable[gangs.GangKey]:
        """Per replica the base gang, then the scaled gangs."""
        return view.planner.gang_keys()

    def slot_count(self, view: _Inputs) -> int:
        """Counted from the live scaling groups."""
        return view.planner.count()

    def child_name(self, view: _Inputs, key: gangs.GangKey) -> str:
        """The gang's name."""
        return view.planner.name(key)

    def build(self, ctx: PcsContext, view: _Inputs, key: gangs.GangKey, existing: Obj | None) -> Obj:
        """The gang with references to its cached pods."""
        plan = view.planner.plan(key)
        return gangs.build_podgang(ctx.owner, plan, view.pods_by_gang.get(plan.name, []), view.scheduler)

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Converge the gangs; requeue while some gang still waits for its pods."""
        inputs = self.view(ctx)
        plan = self.plan(ctx, inputs)
        await self.delete_stale(ctx, plan)
        waiting = False
        writes: list[Callable[[], Awaitable[bool]]] = []
        for key, _, existing in plan.targets:
            gang = inputs.planner.plan(key)
            pods = inputs.pods_by_gang.get(gang.name, [])
            memo_key = (ctx.namespace, gang.name)
            fingerprint = _fingerprint(inputs, gang, pods)
            hit, created = self.memo.recall(memo_key, existing, fingerprint)
            if existing is not None and ctx.owner.metadata.generation is not None and hit:
                waiting = waiting or not created
                continue
            desired = gangs.build_podgang(ctx.owner, gang, pods, inputs.scheduler)
            if existing is not None and in_sync(desired, existing, component=self.name):
                created = self._all_created(ctx, inputs, gang, pods)
                if gangs.initialized_status(ctx.parsed.parse(PodGang, existing), created, ctx.now) is None:
                    self.memo.in_sync(memo_key, existing, fingerprint, created)
                    waiting = waiting or not created
                    continue
            self.memo.forget(memo_key)
            writes.append(partial(self._sync_one, ctx, inputs, gang, desired, existing, pods))
        if any(await bounded(writes)):
            waiting = True
        self.sweep_memo(ctx)
        if plan.more:
            ctx.requeue_after(CONTINUE_AFTER)
        return Result(requeue_after=ctx.config.retry_interval) if waiting else None

    @staticmethod
    def _all_created(ctx: PcsContext, inputs: _Inputs, plan: gangs.GangPlan, pods: list[Mapping[str, Any]]) -> bool:
        pclqs = inputs.pclqs
        members = {n: ctx.parsed.parse(PodClique, pclqs[n]) for n in plan.pod_group_names if n in pclqs}
        return gangs.all_pods_created(plan, members, pods)

    async def _sync_one(
        self,
        ctx: PcsContext,
        inputs: _Inputs,
        plan: gangs.GangPlan,
        desired: Obj,
        existing: Obj | None,
        pods: list[Mapping[str, Any]],
    ) -> bool:
        """Write one gang that is missing, out of date or lacks its `Initialized` condition; True while waiting."""
        if existing is not None and _shape(existing.get("spec")) != _shape(desired["spec"]):
            await ctx.recorder.warning(
                existing, "PodGangSpecReverted", f"PodGang {plan.name} did not match its PodCliqueSet; reverted"
            )
        outcome, latest = await create_or_patch(ctx, PODGANGS, desired, existing, component=self.name)
        if outcome == "created":
            await ctx.recorder.normal(ctx.raw, "PodGangCreated", f"Created PodGang {plan.name}")
        created = self._all_created(ctx, inputs, plan, pods)
        gang = ctx.parsed.parse(PodGang, latest) if isinstance(latest, dict) else PodGang.model_validate(latest)
        status = gangs.initialized_status(gang, created, ctx.now)
        if status is not None:
            rv = (latest.get("metadata") or {}).get("resourceVersion")
            body: Obj = {"status": status}
            if rv:
                body["metadata"] = {"resourceVersion": rv}
            try:
                await ctx.client.patch(PODGANGS, plan.name, body, ctx.namespace, subresource="status")
            except errors.Conflict:
                return True
            except errors.NotFound:
                return True
        return not created
