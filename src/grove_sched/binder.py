"""The binding cycle of one gang: bounded concurrent `pods/{name}/binding` POSTs, all-or-rollback on the minimum.

Why: Kubernetes binds one pod at a time and has no unbind, yet a gang must never stay bound below its minimum
(a half-placed gang holds GPUs and never starts). So the binder POSTs every binding of the placement with bounded
concurrency, counts successes per PodGroup, and if any group ends below its minimum it deletes the pods of this
gang it bound in this attempt (uid precondition, so a recreated pod is never hit; the operator recreates them) and
reports failure; the caller forgets the assumption and requeues. Extra pods beyond the minimum may fail one by one.
A group that can no longer reach its minimum stops the attempt early: binds not yet started are skipped.

A 409 on a bind can mean the POST was retried after it had already succeeded; the binder then reads the pod and
counts the bind as successful if the pod sits on the intended node.

Every write is fenced: right before each bind or delete the binder asks `leading` (the elector's fence) and, once
it says no, sends nothing more and raises `LeadershipLost`: a scheduler frozen past its lease must not act on
waking. A bind's retries are fenced too (the client asks `leading` before every attempt): a bind answered 429 or
5xx waits a backoff before it is sent again, and a leader frozen or deposed meanwhile must not send it then (the
chaos suite caught exactly that: the retry of a frozen leader bound a pod onto capacity its successor had
given to another gang, and the kubelet refused it `OutOfnvidia.com/gpu`). A gang left partly bound that way is not
rolled back (that would be a write too): the next leader completes it or rolls it back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

import structlog

from grove_runtime import errors
from grove_runtime.leaderelection import LeadershipLost, unfenced
from grove_runtime.resources import PODS, ResourceType

__all__ = ["BindClient", "BindOutcome", "BindPlan", "Binder"]

log = structlog.get_logger("grove_sched.binder")


class BindClient(Protocol):
    """The three API calls the binder makes (a subset of `grove_runtime.client.Client`)."""

    async def bind(
        self, namespace: str, pod: str, node: str, *, uid: str | None = None, fence: Callable[[], bool] | None = None
    ) -> None:
        """POST pods/{pod}/binding; each attempt (retries too) only while `fence` holds, else `errors.Fenced`."""
        ...

    async def get(self, rt: ResourceType, name: str, namespace: str = "") -> dict[str, Any]:
        """GET one object."""
        ...

    async def delete(
        self,
        rt: ResourceType,
        name: str,
        namespace: str = "",
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """DELETE one object."""
        ...


@dataclass(frozen=True, slots=True)
class BindPlan:
    """What to bind: pod → node, pod → uid, pod → PodGroup name, and the minimum per PodGroup."""

    namespace: str
    gang: str
    assignments: Mapping[str, str]
    uids: Mapping[str, str]
    group_of: Mapping[str, str]
    group_min: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class BindOutcome:
    """Result of one binding cycle; `ok` means every group reached its minimum and nothing was rolled back."""

    ok: bool
    bound: tuple[str, ...]
    failed: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    rolled_back: tuple[str, ...] = ()
    rollback_failed: tuple[str, ...] = ()

    @property
    def reasons(self) -> tuple[str, ...]:
        """Human-readable bind failures."""
        return tuple(f"binding pod {pod} failed: {why}" for pod, why in sorted(self.failed.items()))


class Binder:
    """Binds gangs; one instance is shared by all binding cycles (the semaphore bounds total concurrency)."""

    def __init__(self, client: BindClient, concurrency: int = 32, leading: Callable[[], bool] = unfenced) -> None:
        self._client = client
        self._limit = asyncio.Semaphore(concurrency)
        self.leading = leading

    async def bind(self, plan: BindPlan) -> BindOutcome:
        """Bind every pod of `plan`; roll back the binds of this attempt when a group misses its minimum."""
        assigned: dict[str, int] = {}
        for pod in plan.assignments:
            group = plan.group_of[pod]
            assigned[group] = assigned.get(group, 0) + 1
        slack = {g: assigned.get(g, 0) - m for g, m in plan.group_min.items()}
        doomed = [g for g, s in slack.items() if s < 0]
        if doomed:
            return BindOutcome(False, (), MappingProxyType({g: "placement below minimum" for g in doomed}))
        bound: list[str] = []
        failed: dict[str, str] = {}
        abort = asyncio.Event()
        fenced = False

        async def one(pod: str, node: str) -> None:
            nonlocal fenced
            async with self._limit:
                if abort.is_set():
                    failed[pod] = "skipped: the gang could not reach its minimum"
                    return
                if not self.leading():
                    fenced = True
                    abort.set()
                    failed[pod] = "skipped: leadership lost"
                    return
                try:
                    error = await self._bind_one(plan.namespace, pod, node, plan.uids.get(pod) or None)
                except errors.Fenced:  # leadership lost while the client waited to retry
                    fenced = True
                    abort.set()
                    failed[pod] = "skipped: leadership lost"
                    return
            if error is None:
                bound.append(pod)
                return
            failed[pod] = error
            group = plan.group_of[pod]
            if group in slack:
                slack[group] -= 1
                if slack[group] < 0:
                    abort.set()

        await asyncio.gather(*(one(pod, node) for pod, node in sorted(plan.assignments.items())))
        if fenced:
            log.warning("gang bind stopped: leadership lost", gang=f"{plan.namespace}/{plan.gang}", bound=len(bound))
            raise LeadershipLost(f"stopped binding {plan.namespace}/{plan.gang} after {len(bound)} pod(s)")
        if not abort.is_set():
            return BindOutcome(True, tuple(sorted(bound)), MappingProxyType(failed))
        rolled, stuck = await self.delete_pods(plan.namespace, {pod: plan.uids.get(pod, "") for pod in bound})
        log.warning(
            "gang bind failed, rolled back",
            gang=f"{plan.namespace}/{plan.gang}",
            failed=dict(sorted(failed.items())),
            rolled_back=len(rolled),
            rollback_failed=list(stuck),
        )
        return BindOutcome(False, tuple(sorted(bound)), MappingProxyType(failed), rolled, stuck)

    async def delete_pods(self, namespace: str, pods: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Delete pods (name → uid precondition); returns (deleted or already gone, failed). Raises
        `LeadershipLost` (after the deletes already under way) once the fence says this process no longer leads."""
        done: list[str] = []
        stuck: list[str] = []
        fenced: list[str] = []

        async def one(pod: str, uid: str) -> None:
            async with self._limit:
                if not self.leading():
                    fenced.append(pod)
                    return
                try:
                    await self._client.delete(
                        PODS, pod, namespace, preconditions={"uid": uid} if uid else None, grace_period_seconds=0
                    )
                    done.append(pod)
                except (errors.NotFound, errors.Conflict):
                    done.append(pod)
                except errors.ApiError as exc:
                    log.error("rollback delete failed", pod=f"{namespace}/{pod}", error=str(exc))
                    stuck.append(pod)

        await asyncio.gather(*(one(pod, uid) for pod, uid in sorted(pods.items())))
        if fenced:
            raise LeadershipLost(f"did not delete {len(fenced)} pod(s) in {namespace}: leadership lost")
        return tuple(sorted(done)), tuple(sorted(stuck))

    async def _bind_one(self, namespace: str, pod: str, node: str, uid: str | None) -> str | None:
        """None on success, else why the bind failed."""
        try:
            await self._client.bind(namespace, pod, node, uid=uid, fence=self.leading)
            return None
        except errors.Conflict as exc:
            try:
                current = await self._client.get(PODS, pod, namespace)
            except errors.ApiError:
                return str(exc)
            meta = current.get("metadata") or {}
            if (current.get("spec") or {}).get("nodeName") == node and (not uid or meta.get("uid") == uid):
                return None
            return str(exc)
        except errors.ApiError as exc:
            return str(exc) or type(exc).__name__
