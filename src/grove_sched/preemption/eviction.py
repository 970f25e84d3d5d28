"""How victim pods are removed: a graceful DELETE (what kube-scheduler does), or the Eviction API.

Why a seam: a DELETE honours the pod's own `terminationGracePeriodSeconds` (no grace period is sent) but not
PodDisruptionBudgets; the Eviction API (`POST pods/{name}/eviction`, policy/v1) lets the API server refuse a
removal a budget forbids (429). grove-sim serves the Eviction subresource but no PodDisruptionBudgets yet, so the
default is DELETE; `--preemption-eviction evict` switches to Eviction where budgets are served. A refused eviction
leaves the pod running (the preemptor's nomination then waits, and is re-evaluated once its victims are gone or the
gang is re-queued). Both are guarded by the pod's uid, so a pod recreated under the same name is never hit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import structlog

from grove_runtime import errors
from grove_runtime.client import Client
from grove_runtime.resources import PODS

__all__ = ["DeleteVictims", "EvictVictims", "VictimRemover"]

log = structlog.get_logger("grove_sched.preemption")
Obj = Mapping[str, Any]


class VictimRemover(Protocol):
    """Removes one victim pod; never raises for an API refusal (it logs it)."""

    async def remove(self, pod: Obj) -> None:
        """Start the pod's graceful termination."""
        ...


class _Requester(Protocol):
    async def request(self, method: str, path: str, *, body: Any = None) -> Any: ...


def _identity(pod: Obj) -> tuple[str, str, str]:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", "")), str(meta.get("uid", ""))


class DeleteVictims:
    """DELETE with a uid precondition and the pod's own grace period."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def remove(self, pod: Obj) -> None:
        """DELETE the pod (already gone: nothing to do)."""
        namespace, name, uid = _identity(pod)
        try:
            await self._client.delete(PODS, name, namespace, preconditions={"uid": uid} if uid else None)
        except (errors.NotFound, errors.Conflict):
            return
        except errors.ApiError as exc:
            log.warning("victim pod not deleted", namespace=namespace, name=name, error=str(exc))


class EvictVictims:
    """POST an Eviction (policy/v1) with a uid precondition: the API server applies disruption budgets."""

    def __init__(self, client: _Requester) -> None:
        self._client = client

    async def remove(self, pod: Obj) -> None:
        """Evict the pod; a refusal (a budget, 429) is logged and leaves the pod running."""
        namespace, name, uid = _identity(pod)
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if uid:
            body["deleteOptions"] = {"preconditions": {"uid": uid}}
        try:
            await self._client.request("POST", PODS.object_path(namespace, name, "eviction"), body=body)
        except (errors.NotFound, errors.Conflict):
            return
        except errors.ApiError as exc:
            log.warning("victim pod not evicted", namespace=namespace, name=name, error=str(exc))
