"""The PodCliqueSet reconciler: the shared skeleton (`reconcile.skeleton`) with the PodCliqueSet's parts.

Why this shape: it mirrors upstream Grove's `podcliqueset/reconciler.go`, so the flow reads as a table of
contents. `prepare` reads the topology bindings and refuses a spec the validating webhook would have refused, or
one asking for more pods than the operator allows (`admission`), before any work that depends on the spec's size.
Components are synced group by group (`components.sync_groups`), concurrently inside a group. The status is
recomputed from the cache on every reconcile. Children are removed by garbage collection: deletion only drops
the finalizer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pydantic

from grove_api import ClusterTopologyBinding, PodClique, PodCliqueScalingGroup, PodCliqueSet, PodCliqueSetStatus
from grove_api import labels as glabels
from grove_operator import admission, hashing
from grove_operator.kinds import CLUSTERTOPOLOGYBINDINGS, PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS
from grove_operator.podcliqueset.components import PcsComponent, sync_groups
from grove_operator.podcliqueset.components._common import TOPOLOGIES, PcsContext, children
from grove_operator.reconcile.context import Deps, Step
from grove_operator.reconcile.failures import ComponentError, SpecError, describe, error_code
from grove_operator.reconcile.skeleton import OwnerReconciler
from grove_operator.status.podcliqueset import compute_podcliqueset_status
from grove_runtime.keys import Result

__all__ = ["PodCliqueSetReconciler", "run_group"]

Obj = dict[str, Any]


async def run_group(group: Sequence[PcsComponent], ctx: PcsContext) -> list[Result | ComponentError | None]:
    """Sync the components of one group concurrently; each outcome is its Result, None, or its error."""
    outcomes: list[Result | ComponentError | None] = [None] * len(group)

    async def run(i: int, component: PcsComponent) -> None:
        try:
            outcomes[i] = await component.sync(ctx)
        except ComponentError as exc:
            outcomes[i] = exc
        except Exception as exc:
            outcomes[i] = ComponentError(error_code(component.name), "sync", describe(exc))

    async with asyncio.TaskGroup() as tg:
        for i, component in enumerate(group):
            tg.create_task(run(i, component))
    return outcomes


class PodCliqueSetReconciler(OwnerReconciler[PodCliqueSet]):
    """Reconciles one PodCliqueSet into its full hierarchy."""

    resource = PODCLIQUESETS
    finalizer = glabels.FINALIZER_PCS

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.groups = sync_groups()

    def parse(self, raw: Obj) -> PodCliqueSet:
        """The PCS as the defaulting webhook would have stored it."""
        return self.deps.parsed.podcliqueset(raw)

    def prepare(self, ctx: PcsContext) -> None:
        """Read the topology bindings; refuse a spec that is invalid or asks for too many pods."""
        ctx.extra[TOPOLOGIES] = self._topologies()
        config = self.deps.config
        problems = admission.spec_errors(
            self.deps.parsed,
            ctx.raw,
            maximum=config.max_pods_per_podcliqueset,
            default_scheduler_name=config.default_scheduler_name,
        )
        if problems:
            raise SpecError(admission.summarize(problems))

    def spec_steps(self) -> Sequence[Step[PodCliqueSet]]:
        """The component groups, in order."""
        return (self._sync_components,)

    def _topologies(self) -> dict[str, ClusterTopologyBinding]:
        out: dict[str, ClusterTopologyBinding] = {}
        for obj in self.deps.cache.list(CLUSTERTOPOLOGYBINDINGS):
            try:
                out[str(obj["metadata"]["name"])] = self.deps.parsed.parse(ClusterTopologyBinding, obj)
            except pydantic.ValidationError:
                continue
        return out

    async def _sync_components(self, ctx: PcsContext) -> Result | None:
        """Run the groups in order; a wait in an early group stops the rest, one in the last group only requeues."""
        for index, group in enumerate(self.groups):
            outcomes = await run_group(group, ctx)
            failures = [o for o in outcomes if isinstance(o, ComponentError)]
            if failures:
                raise failures[0]
            waits = [o for o in outcomes if isinstance(o, Result)]
            if waits:
                wait = min(waits, key=lambda r: r.requeue_after or 0.0)
                if index < len(self.groups) - 1:
                    return wait
                ctx.requeue_after(wait.requeue_after or 0.0)
        return None

    def compute_status(self, ctx: PcsContext, failure: ComponentError | None, *, completed: bool) -> Obj | None:
        """Recompute the status from the cached children."""
        pcs = ctx.owner
        if pcs.status is None or pcs.status.current_generation_hash is None:
            status_model = (pcs.status or PodCliqueSetStatus()).model_copy(
                update={"current_generation_hash": hashing.generation_hash(pcs.spec.template)}
            )
            pcs = pcs.model_copy(update={"status": status_model})
        parse = self.deps.parsed.parse
        pclqs = [parse(PodClique, o) for o in children(ctx, PODCLIQUES, glabels.COMPONENT_PCS_PODCLIQUE)]
        pcsgs = [parse(PodCliqueScalingGroup, o) for o in children(ctx, PODCLIQUESCALINGGROUPS)]
        status = compute_podcliqueset_status(pcs, pclqs, pcsgs, ctx.now, ctx.extra.get(TOPOLOGIES))
        if completed and pcs.metadata.generation is not None:
            status["observedGeneration"] = pcs.metadata.generation
        return status
