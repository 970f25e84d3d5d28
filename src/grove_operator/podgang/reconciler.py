"""The PodGang reconciler: the per-gang hook of the scheduler backend (§3.1 `podgang` controller).

Upstream resolves the backend from the gang's `grove.io/scheduler-name` label and lets it create backend objects
(a KAI PodGroup, a Volcano PodGroup). The grove-scheduler backend reads PodGangs directly and needs none, so
what remains is what a user must see: a managed gang without its PodCliqueSet (or, for the first API's gangs, its
PodGangSet) or without a scheduler name gets a Warning Event (once; the recorder aggregates repeats). The PodGang's
spec is owned by the controller of that parent, which reverts hand edits; its status belongs to the scheduler and
is never written here.
"""

from __future__ import annotations

from grove_api import PodCliqueSet, PodGangSet
from grove_api import labels as glabels
from grove_operator.kinds import PODCLIQUESETS, PODGANGS, PODGANGSETS
from grove_operator.reconcile.context import Deps
from grove_operator.reconcile.ownership import controller_owner, managed
from grove_runtime.keys import ObjectKey, Result

__all__ = ["PodGangReconciler"]


class PodGangReconciler:
    """Checks one PodGang's parent and scheduler backend."""

    def __init__(self, deps: Deps) -> None:
        self.cache = deps.cache
        self.recorder = deps.recorder
        self.config = deps.config

    async def reconcile(self, key: ObjectKey) -> Result:
        """Get → (no delete flow: no finalizer) → checks."""
        raw = self.cache.get(PODGANGS, key)
        if raw is None or not managed(raw) or (raw.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        owner = controller_owner(raw)
        parent = None
        parents = {
            (PodCliqueSet.API_VERSION, PodCliqueSet.KIND): PODCLIQUESETS,
            (PodGangSet.API_VERSION, PodGangSet.KIND): PODGANGSETS,
        }
        rt = parents.get((str(owner.get("apiVersion")), str(owner.get("kind")))) if owner is not None else None
        if owner is not None and rt is not None:
            parent = self.cache.get(rt, ObjectKey(key.namespace, str(owner.get("name") or "")))
        if parent is None:
            await self.recorder.warning(
                raw, "ParentNotFound", "PodGang has no PodCliqueSet or PodGangSet controlling it"
            )
            return Result()
        labels = (raw.get("metadata") or {}).get("labels") or {}
        if not labels.get(glabels.LABEL_SCHEDULER_NAME):
            await self.recorder.warning(
                raw,
                "SchedulerNameMissing",
                f"PodGang lacks label {glabels.LABEL_SCHEDULER_NAME}; assuming {self.config.default_scheduler_name}",
            )
        return Result()
