"""The PodGangSet's components, in sync order: its pods, its PodGang, then the release of referenced pods.

Pods and the PodGang are child sets (`reconcile.childset`): slots are pod indices `0..replicas-1` and the one gang.
A pod is never patched beyond its labels and annotations (its spec is immutable once created), and it keeps the
PodClique annotation it was created with, so a PodClique created later never claims pods it did not shape. The
PodGang lists the live pods and carries the operator's `Initialized` condition, as a PodCliqueSet's gangs do, so
grove-scheduler treats both kinds of gang alike. Gates are lifted with the same rule as for PodCliqueSet pods:
once the cached PodGang references the pod.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from grove_api import DynamoPodClique, PodGang, PodGangSet
from grove_api import dynamo_v1 as v1
from grove_operator.desired import gates
from grove_operator.desired import podgangset as desired
from grove_operator.desired.layout import is_terminating
from grove_operator.desired.podgang import initialized_status
from grove_operator.kinds import INDEX_PODGANGSET, PODGANGS
from grove_operator.reconcile.childset import ChildSet
from grove_operator.reconcile.concurrency import bounded
from grove_operator.reconcile.context import SyncContext
from grove_operator.reconcile.ownership import controlled_children
from grove_runtime import errors
from grove_runtime.client import PatchType
from grove_runtime.keys import Result
from grove_runtime.resources import PODS

__all__ = ["PODCLIQUES", "GangPodGang", "GangPods", "PgsContext", "ReleaseGates", "gang_of", "pgs_pods"]

Obj = dict[str, Any]
PgsContext = SyncContext[PodGangSet]
PODCLIQUES = "dynamo-podcliques"
"""`ctx.extra` key: the namespace's `grove.dynamo.ai/v1` PodCliques (parsed), read once per reconcile."""


def pgs_pods(ctx: PgsContext) -> list[Obj]:
    """Cached pods of the PodGangSet (by its label, controlled by it)."""
    return controlled_children(ctx, PODS, INDEX_PODGANGSET)


def gang_of(ctx: PgsContext) -> Obj | None:
    """The cached PodGang of the PodGangSet, if it exists and is ours."""
    return next(iter(controlled_children(ctx, PODGANGS, INDEX_PODGANGSET)), None)


def _fingerprint(ctx: PgsContext) -> Hashable | None:
    generation = ctx.owner.metadata.generation
    return None if generation is None else (ctx.owner.metadata.uid, generation)


@dataclass(frozen=True)
class _Pods:
    name: str
    replicas: int


class GangPods(ChildSet[PodGangSet, int, _Pods]):
    """Pods `<pgs>-<i>` for `i < replicas`; higher indices are deleted on scale-in."""

    name = "pod"
    rt = PODS
    noun = "Pod"
    patch_fields = ()

    def view(self, ctx: PgsContext) -> _Pods:
        """The PodGangSet's name and replicas."""
        return _Pods(ctx.key.name, ctx.owner.spec.replicas)

    def existing(self, ctx: PgsContext) -> Iterable[Obj]:
        """Cached pods of the PodGangSet."""
        return pgs_pods(ctx)

    def key_of(self, view: _Pods, child: Obj) -> int | None:
        """The index in the pod's name."""
        return desired.pgs_pod_index(view.name, str(child["metadata"]["name"]))

    def wanted(self, view: _Pods, key: int) -> bool:
        """Below the replicas."""
        return 0 <= key < view.replicas

    def candidates(self, view: _Pods) -> Iterable[int]:
        """Lowest index first."""
        return range(view.replicas)

    def slot_count(self, view: _Pods) -> int:
        """The replicas."""
        return view.replicas

    def child_name(self, view: _Pods, key: int) -> str:
        """`<pgs>-<i>`."""
        return desired.pgs_pod_name(view.name, key)

    def fingerprint(self, ctx: PgsContext) -> Hashable | None:
        """Pods depend on the spec only (PodCliques matter at creation, and then are written on the pod)."""
        return _fingerprint(ctx)

    def build(self, ctx: PgsContext, view: _Pods, key: int, existing: Obj | None) -> Obj:
        """The pod; an existing one keeps the record of the PodCliques it was created with."""
        podcliques: list[DynamoPodClique] = ctx.extra.get(PODCLIQUES) or []
        pod = desired.build_pgs_pod(
            ctx.owner, key, podcliques, default_scheduler_name=ctx.config.default_scheduler_name
        )
        if existing is not None:
            annotations = pod["metadata"].setdefault("annotations", {})
            applied = ((existing.get("metadata") or {}).get("annotations") or {}).get(v1.ANNOTATION_PODCLIQUES)
            annotations.pop(v1.ANNOTATION_PODCLIQUES, None)
            if applied is not None:
                annotations[v1.ANNOTATION_PODCLIQUES] = applied
        return pod


class GangPodGang(ChildSet[PodGangSet, str, str]):
    """The one PodGang named after the PodGangSet, referencing its live pods; `Initialized` once all exist."""

    name = "podgang"
    rt = PODGANGS
    noun = "PodGang"

    def view(self, ctx: PgsContext) -> str:
        """The gang's name."""
        return ctx.key.name

    def existing(self, ctx: PgsContext) -> Iterable[Obj]:
        """The cached gang (a list of at most one)."""
        return controlled_children(ctx, PODGANGS, INDEX_PODGANGSET)

    def key_of(self, view: str, child: Obj) -> str | None:
        """Only the gang named after the PodGangSet fills the slot."""
        name = str(child["metadata"]["name"])
        return name if name == view else None

    def wanted(self, view: str, key: str) -> bool:
        """The one slot."""
        return key == view

    def candidates(self, view: str) -> Iterable[str]:
        """The one slot."""
        return (view,)

    def slot_count(self, view: str) -> int:
        """One gang."""
        return 1

    def child_name(self, view: str, key: str) -> str:
        """The PodGangSet's name."""
        return key

    def build(self, ctx: PgsContext, view: str, key: str, existing: Obj | None) -> Obj:
        """The gang with references to the cached live pods."""
        scheduler = desired.pgs_scheduler_name(ctx.owner, ctx.config.default_scheduler_name)
        return desired.build_pgs_podgang(ctx.owner, pgs_pods(ctx), scheduler)

    async def sync(self, ctx: PgsContext) -> Result | None:
        """Converge the gang, then its `Initialized` condition (all `replicas` pods exist and are referenced)."""
        await super().sync(ctx)
        gang = gang_of(ctx)
        if gang is None:
            return Result(requeue_after=ctx.config.retry_interval)
        live = [p for p in pgs_pods(ctx) if not is_terminating(p)]
        referenced = {r.name for g in ctx.parsed.parse(PodGang, gang).spec.pod_groups for r in g.pod_references}
        created = len(live) >= ctx.owner.spec.replicas and all(p["metadata"]["name"] in referenced for p in live)
        status = initialized_status(ctx.parsed.parse(PodGang, gang), created, ctx.now)
        if status is not None:
            body: Obj = {"status": status, "metadata": {"resourceVersion": gang["metadata"].get("resourceVersion")}}
            try:
                await ctx.client.patch(PODGANGS, ctx.key.name, body, ctx.namespace, subresource="status")
            except (errors.Conflict, errors.NotFound):
                return Result(requeue_after=ctx.config.retry_interval)
        return None


@dataclass(frozen=True)
class ReleaseGates:
    """Lift Grove's scheduling gate from the pods the cached PodGang references."""

    name: str = "gates"

    def existing_names(self, ctx: PgsContext) -> list[str]:
        """Gates are not objects."""
        return []

    async def sync(self, ctx: PgsContext) -> Result | None:
        """Ungate the referenced gated pods; a pod deleted meanwhile needs no ungating."""
        gang = gang_of(ctx)
        if gang is None:
            return None
        referenced = {r.name for g in ctx.parsed.parse(PodGang, gang).spec.pod_groups for r in g.pod_references}
        gated = [p for p in pgs_pods(ctx) if not is_terminating(p) and gates.has_grove_gate(p)]
        release = [p for p in gated if p["metadata"]["name"] in referenced]
        await bounded(partial(self._ungate, ctx, pod) for pod in release)
        return Result(requeue_after=ctx.config.retry_interval) if len(release) < len(gated) else None

    @staticmethod
    async def _ungate(ctx: PgsContext, pod: Obj) -> None:
        name = str(pod["metadata"]["name"])
        try:
            await ctx.client.patch(PODS, name, gates.remove_gate_patch(pod), ctx.namespace, patch_type=PatchType.MERGE)
        except errors.NotFound:
            return

    async def delete(self, ctx: PgsContext) -> None:
        """Nothing to delete."""
