"""The PodCliqueSet reconciler: get → delete flow → spec steps → status (which always runs).

Why this shape: it mirrors upstream Grove's `podcliqueset/reconciler.go`, so the flow reads as a table of
contents. Spec steps run in order and the first that returns a `Result` (a wait) ends the spec flow; components
are synced group by group (`components.SYNC_GROUPS`), concurrently inside a group. Whatever happened, the status
is recomputed by a pure function and written through the status subresource only if it changed; a failed step
lands in `status.lastErrors` and a Warning Event, then the error is re-raised so the controller backs off.
Children are removed by garbage collection: deletion only drops the finalizer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic

from grove_api import ClusterTopologyBinding, PodClique, PodCliqueScalingGroup, PodCliqueSet, PodCliqueSetStatus
from grove_api import labels as glabels
from grove_operator import defaults, hashing, parsed
from grove_operator.components import (
    CLUSTERTOPOLOGYBINDINGS,
    PODCLIQUES,
    PODCLIQUESCALINGGROUPS,
    PODCLIQUESETS,
    ComponentError,
    Step,
    SyncContext,
    ensure_finalizer,
    error_code,
    last_errors,
    remove_finalizer,
    run_steps,
    write_status,
)
from grove_operator.config import OperatorConfig
from grove_operator.podcliqueset.components import SYNC_GROUPS
from grove_operator.podcliqueset.components._common import PcsContext, children
from grove_operator.podcliqueset.components.podgang import TOPOLOGIES
from grove_operator.status.podcliqueset import compute_podcliqueset_status
from grove_runtime.cache import Cache
from grove_runtime.client import Client
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.events import EventRecorder
from grove_runtime.expectations import Expectations
from grove_runtime.keys import ObjectKey, Result, TerminalError

__all__ = ["PodCliqueSetReconciler", "parse_podcliqueset"]

_REQUEUE = "requeue"


async def run_group(group: tuple[Any, ...], ctx: PcsContext) -> list[Result | ComponentError | None]:
    """Sync the components of one group concurrently; each outcome is its Result, None, or its error."""
    outcomes: list[Result | ComponentError | None] = [None] * len(group)

    async def run(i: int, component: Any) -> None:
        try:
            outcomes[i] = await component.sync(ctx)
        except ComponentError as exc:
            outcomes[i] = exc
        except Exception as exc:
            outcomes[i] = ComponentError(error_code(component.name), "sync", repr(exc))

    async with asyncio.TaskGroup() as tg:
        for i, component in enumerate(group):
            tg.create_task(run(i, component))
    return outcomes


_DEFAULTED_PCS = "defaulted-podcliqueset"


def _parse_defaulted(raw: dict[str, Any]) -> PodCliqueSet:
    return PodCliqueSet.model_validate(defaults.default_podcliqueset(raw))


def parse_podcliqueset(raw: dict[str, Any]) -> PodCliqueSet:
    """The PCS as the defaulting webhook would have stored it (defaults are idempotent); memoised per cached dict."""
    return parsed.parse_with(_DEFAULTED_PCS, _parse_defaulted, raw)


class PodCliqueSetReconciler:
    """Reconciles one PodCliqueSet into its full hierarchy."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        recorder: EventRecorder,
        config: OperatorConfig,
        *,
        clock: Clock | None = None,
        expectations: Expectations[ObjectKey] | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.config = config
        self.clock = clock or LoopClock()
        self.expectations = expectations or Expectations(timeout=config.expectations_timeout, clock=self.clock)
        self.spec_steps: tuple[Step[PodCliqueSet], ...] = (self._ensure_finalizer, self._sync_components)

    async def reconcile(self, key: ObjectKey) -> Result:
        """Get → delete flow → spec steps → status."""
        raw = self.cache.get(PODCLIQUESETS, key)
        if raw is None:
            return Result()
        if (raw.get("metadata") or {}).get("deletionTimestamp"):
            await remove_finalizer(self.client, PODCLIQUESETS, raw, glabels.FINALIZER_PCS)
            return Result()
        try:
            pcs = parse_podcliqueset(raw)
        except pydantic.ValidationError as exc:
            await self.recorder.warning(raw, "InvalidPodCliqueSet", f"cannot parse PodCliqueSet: {exc}")
            raise TerminalError(f"invalid PodCliqueSet {key}") from exc
        ctx: PcsContext = SyncContext(
            self.client, self.cache, self.recorder, self.expectations, self.config, key, raw, pcs, self.clock.now()
        )
        ctx.extra[TOPOLOGIES] = self._topologies()
        result, failure = await run_steps(ctx, self.spec_steps)
        await self._status(ctx, failure, completed=failure is None and result is None)
        if failure is not None:
            raise failure
        return result or ctx.extra.get(_REQUEUE) or Result()

    def _topologies(self) -> dict[str, ClusterTopologyBinding]:
        out: dict[str, ClusterTopologyBinding] = {}
        for obj in self.cache.list(CLUSTERTOPOLOGYBINDINGS):
            try:
                out[str(obj["metadata"]["name"])] = parsed.parse(ClusterTopologyBinding, obj)
            except pydantic.ValidationError:
                continue
        return out

    async def _ensure_finalizer(self, ctx: PcsContext) -> Result | None:
        await ensure_finalizer(self.client, PODCLIQUESETS, ctx.raw, glabels.FINALIZER_PCS)
        return None

    async def _sync_components(self, ctx: PcsContext) -> Result | None:
        """Run the groups in order; a wait in an early group stops the rest, one in the last group only requeues."""
        for index, group in enumerate(SYNC_GROUPS):
            outcomes = await run_group(group, ctx)
            failures = [o for o in outcomes if isinstance(o, ComponentError)]
            if failures:
                raise failures[0]
            waits = [o for o in outcomes if isinstance(o, Result)]
            if waits:
                wait = min(waits, key=lambda r: r.requeue_after or 0.0)
                if index < len(SYNC_GROUPS) - 1:
                    return wait
                ctx.extra[_REQUEUE] = wait
        return None

    async def _status(self, ctx: PcsContext, failure: ComponentError | None, *, completed: bool) -> None:
        """Recompute the status from the cache and write it if it changed."""
        pcs = ctx.owner
        if pcs.status is None or pcs.status.current_generation_hash is None:
            status_model = (pcs.status or PodCliqueSetStatus()).model_copy(
                update={"current_generation_hash": hashing.generation_hash(pcs.spec.template)}
            )
            pcs = pcs.model_copy(update={"status": status_model})
        pclqs = [parsed.parse(PodClique, o) for o in children(ctx, PODCLIQUES, glabels.COMPONENT_PCS_PODCLIQUE)]
        pcsgs = [parsed.parse(PodCliqueScalingGroup, o) for o in children(ctx, PODCLIQUESCALINGGROUPS)]
        status = compute_podcliqueset_status(pcs, pclqs, pcsgs, ctx.now, ctx.extra.get(TOPOLOGIES))
        if completed and pcs.metadata.generation is not None:
            status["observedGeneration"] = pcs.metadata.generation
        errors = last_errors(failure, ctx.now, (ctx.raw.get("status") or {}).get("lastErrors"))
        if errors is None:
            status.pop("lastErrors", None)
        else:
            status["lastErrors"] = errors
        await write_status(self.client, PODCLIQUESETS, ctx.raw, status)
