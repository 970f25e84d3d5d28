"""The one reconcile flow of grove-operator's owner controllers: get → deletion → parse → steps → status.

Why one skeleton: the PodCliqueSet, scaling-group and PodClique reconcilers must agree on the things users and
the rest of the system rely on, and three copies drifted. Here, once:

1. get the object from the cache (gone: forget its bookkeeping);
2. deletion first: a terminating object only loses our finalizer, before anything that depends on its spec, so
   deletion always completes, whatever the spec says;
3. objects we do not manage get one Warning Event and are left alone; an object that does not parse is a
   terminal error (Warning Event, no retry);
4. `prepare` looks up what the steps need (a parent, the topology bindings) and checks that the spec can be
   reconciled at all; then the finalizer and the reconciler's ordered spec steps run until one waits or fails;
5. the status is recomputed by a pure function and written whatever happened, a failure landing in
   `status.lastErrors` and a Warning Event; the failure's kind decides the retry (`failures`).

A reconciler supplies only its kind and finalizer, its step components, `parse`, `prepare` and `compute_status`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import pydantic
import structlog

from grove_operator import admission
from grove_operator.desired.layout import is_terminating
from grove_operator.reconcile.context import Component, Deps, Step, SyncContext
from grove_operator.reconcile.failures import ComponentError, SpecError, describe, error_code, last_errors
from grove_operator.reconcile.writes import ensure_finalizer, remove_finalizer, write_status
from grove_runtime.keys import ObjectKey, Result, TerminalError
from grove_runtime.resources import ResourceType

__all__ = ["OwnerReconciler", "run_steps"]

T = TypeVar("T")
Obj = dict[str, Any]
log = structlog.get_logger("grove_operator.reconcile")


def _step_name(step: Step[Any]) -> str:
    component = getattr(step, "__self__", None)
    name = getattr(component, "name", None)
    return name if isinstance(name, str) else str(getattr(step, "__name__", "step")).strip("_")


async def run_steps(ctx: SyncContext[T], steps: Sequence[Step[T]]) -> tuple[Result | None, ComponentError | None]:
    """Run `steps` in order until one returns a `Result` (a wait) or fails.

    The failure is returned rather than raised: the status must still be written so `lastErrors` shows it. An
    exception that is not a `ComponentError` (an unforeseen answer, a bug) is reported the same way, as a failure
    of the step it came from, instead of retrying silently.
    """
    for step in steps:
        try:
            result = await step(ctx)
        except ComponentError as exc:
            return None, exc
        except Exception as exc:
            log.warning("reconcile step failed", step=_step_name(step), exc_info=True)
            return None, ComponentError(error_code(_step_name(step)), "sync", describe(exc))
        if result is not None:
            return result, None
    return None, None


def _earliest(*results: Result | None) -> Result:
    """One outcome from a step's wait and the later asks of the same reconcile: the soonest requeue wins."""
    waits = [r.requeue_after for r in results if r is not None and r.requeue_after is not None and r.requeue_after > 0]
    return Result(requeue_after=min(waits)) if waits else Result()


Components = Callable[[], tuple[Component[Any], ...]]
"""Builds a reconciler's spec-step components (fresh per reconciler: they own their memos)."""


class OwnerReconciler(ABC, Generic[T]):
    """The reconcile skeleton. A subclass names its kind, finalizer and step components in its class statement,
    `class X(OwnerReconciler[M], resource=..., finalizer=..., components=lambda: (...))`, and supplies the hooks
    below."""

    resource: ClassVar[ResourceType]
    finalizer: ClassVar[str]
    make_components: ClassVar[Components]

    def __init_subclass__(
        cls, *, resource: ResourceType, finalizer: str, components: Components, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.resource = resource
        cls.finalizer = finalizer
        cls.make_components = staticmethod(components)

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.components: tuple[Component[T], ...] = type(self).make_components()
        self.steps: tuple[Step[T], ...] = (self._ensure_finalizer, *(c.sync for c in self.components))

    @abstractmethod
    def parse(self, raw: Obj) -> T:
        """The object's model (raises `pydantic.ValidationError`)."""

    @abstractmethod
    def compute_status(self, ctx: SyncContext[T], failure: ComponentError | None, *, completed: bool) -> Obj | None:
        """The status to write (without `lastErrors`), or None to leave it; `completed`: every step ran through."""

    def unmanaged(self, raw: Obj) -> tuple[str, str] | None:
        """(Event reason, message) when the object is not ours to manage; None when it is."""
        return None

    def prepare(self, ctx: SyncContext[T]) -> None:
        """Put what the steps need into `ctx.extra`; raise `ComponentError` when they cannot run at all."""

    def forget(self, key: ObjectKey) -> None:
        """Drop per-object bookkeeping of an object that is gone or going."""

    async def publish_status(self, ctx: SyncContext[T], status: Obj) -> None:
        """Write the status (if it changed)."""
        await write_status(self.deps.client, self.resource, ctx.raw, status)

    async def reconcile(self, key: ObjectKey) -> Result:
        """Get → deletion → parse → prepare → finalizer and spec steps → status."""
        deps = self.deps
        raw = deps.cache.get(self.resource, key)
        if raw is None:
            self.forget(key)
            return Result()
        if is_terminating(raw):
            self.forget(key)
            await remove_finalizer(deps.client, self.resource, raw, self.finalizer)
            return Result()
        refusal = self.unmanaged(raw)
        if refusal is not None:
            await deps.recorder.warning(raw, *refusal)
            return Result()
        kind = self.resource.kind
        try:
            owner = self.parse(raw)
        except pydantic.ValidationError as exc:
            await deps.recorder.warning(raw, f"Invalid{kind}", f"cannot parse {kind}: {exc}")
            raise TerminalError(f"invalid {kind} {key}") from exc
        ctx = SyncContext.of(deps, key, raw, owner)
        result: Result | None = None
        try:
            self.prepare(ctx)
        except ComponentError as exc:
            failure: ComponentError | None = exc
        else:
            result, failure = await run_steps(ctx, self.steps)
        if failure is not None:
            await deps.recorder.warning(raw, failure.reason, f"{failure.code}: {failure.message}")
        status = self.compute_status(ctx, failure, completed=failure is None and result is None)
        if status is not None:
            errors = last_errors(failure, ctx.now, (raw.get("status") or {}).get("lastErrors"))
            if errors is None:
                status.pop("lastErrors", None)
            else:
                status["lastErrors"] = errors
            await self.publish_status(ctx, status)
        if failure is not None:
            outcome = failure.outcome(deps.config)
            if outcome is None:
                raise failure
            return outcome
        return _earliest(result, ctx.requeue)

    async def _ensure_finalizer(self, ctx: SyncContext[T]) -> Result | None:
        await ensure_finalizer(self.deps.client, self.resource, ctx.raw, self.finalizer)
        return None

    def refuse_invalid_podcliqueset(self, pcs_raw: Obj, whose: str = "") -> None:
        """Raise `SpecError` when the PodCliqueSet `pcs_raw` fails validation or the pod bound (`whose`: a prefix
        saying it is another object's PodCliqueSet)."""
        config = self.deps.config
        problems = admission.spec_errors(
            self.deps.parsed,
            pcs_raw,
            maximum=config.max_pods_per_podcliqueset,
            default_scheduler_name=config.default_scheduler_name,
        )
        if problems:
            raise SpecError(whose + admission.summarize(problems))

    def refuse_too_many_pods(self, replicas: int, pods_per_replica: int) -> None:
        """Raise `SpecError` when `spec.replicas` make more pods than the operator allows."""
        maximum = self.deps.config.max_pods_per_podcliqueset
        bound = admission.pod_bound_error("spec.replicas", replicas * pods_per_replica, maximum, f"{replicas} replicas")
        if bound is not None:
            raise SpecError(str(bound))
