"""What the scheduler writes into pods' status: `PodScheduled=False` on pods it could not place (with the
preemptor's `nominatedNodeName`), and `DisruptionTarget` on pods it preempts.

Why: `kubectl get pods` and `kubectl describe pod` answer "why is this pod pending" from these fields, as
kube-scheduler writes them. Without it an ungated pod that does not fit still shows the `SchedulingGated`
condition grove-sim set at create time. Writes are strategic merge patches of `pods/status`, which merge
`conditions` by type, so conditions of others (the kubelet's) are kept. The scheduler calls this once per change of
a gang's verdict, not per attempt. Best effort: a failed write (the pod is gone, the API is down) is logged, and
the next change of verdict writes again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from grove_runtime import errors
from grove_runtime.client import Client, PatchType
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.resources import PODS
from grove_sched.podgang_status import format_time

__all__ = ["DISRUPTION_TARGET", "POD_SCHEDULED", "REASON_PREEMPTED", "REASON_UNSCHEDULABLE", "PodStatusWriter"]

log = structlog.get_logger("grove_sched.pod_status")
Obj = Mapping[str, Any]
POD_SCHEDULED = "PodScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_PREEMPTED = "PreemptionByScheduler"


class PodStatusWriter:
    """Patches pods' status conditions through the API."""

    def __init__(self, client: Client, clock: Clock | None = None) -> None:
        self._client = client
        self._clock = clock or LoopClock()

    def _condition(self, type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
        now = format_time(self._clock.now())
        return {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": now,
        }

    async def unschedulable(
        self, pods: Iterable[Obj], message: str, nominated: Mapping[str, str] | None = None
    ) -> None:
        """`PodScheduled=False`, reason Unschedulable, on each pending pod; `status.nominatedNodeName` where
        `nominated` names a node for the pod (and cleared where it does not)."""
        calls = []
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName"):
                continue
            name = str((pod.get("metadata") or {}).get("name", ""))
            node = (nominated or {}).get(name)
            body: dict[str, Any] = {
                "conditions": [self._condition(POD_SCHEDULED, "False", REASON_UNSCHEDULABLE, message)],
                "nominatedNodeName": node,
            }
            calls.append(self._patch(pod, {"status": body}))
        await asyncio.gather(*calls)

    async def disruption_target(self, pod: Obj, message: str) -> None:
        """`DisruptionTarget=True`, reason PreemptionByScheduler, on a pod about to be preempted."""
        condition = self._condition(DISRUPTION_TARGET, "True", REASON_PREEMPTED, message)
        await self._patch(pod, {"status": {"conditions": [condition]}})

    async def _patch(self, pod: Obj, body: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
        try:
            await self._client.patch(PODS, name, body, namespace, patch_type=PatchType.STRATEGIC, subresource="status")
        except errors.NotFound:
            return
        except errors.ApiError as exc:
            log.warning("pod status not written", namespace=namespace, name=name, error=str(exc))
