"""The `grove.dynamo.ai/v1` PodClique controller: its status says how many PodGangSet pods it selects and shapes.

A PodClique has no children: its terms are written into pods when the PodGangSet controller creates them (pod
affinity cannot change later). What a user needs to see is whether it took effect, so the status counts the
PodGangSet pods of its namespace that its selector matches now (`matchedPods`) and those created with its terms
(`appliedPods`, from the pods' `grove.dynamo.ai/podcliques` annotation). A PodClique created after the pods
matches them but shapes none: `matchedPods` above `appliedPods` says so.
"""

from __future__ import annotations

from collections.abc import Iterable

import pydantic

from grove_api import DynamoPodClique
from grove_api import dynamo_v1 as v1
from grove_operator.kinds import DYNAMO_PODCLIQUES
from grove_operator.parsed import ParseMemo
from grove_operator.reconcile.context import Deps, Obj
from grove_operator.reconcile.writes import write_status
from grove_runtime.keys import ObjectKey, Result
from grove_runtime.resources import PODS

__all__ = ["DynamoPodCliqueReconciler", "parsed_podcliques"]


def parsed_podcliques(objects: Iterable[Obj], memo: ParseMemo) -> list[DynamoPodClique]:
    """The PodCliques that parse (one that does not cannot shape anything; its own reconcile reports it)."""
    parsed: list[DynamoPodClique] = []
    for obj in objects:
        try:
            parsed.append(memo.parse(DynamoPodClique, obj))
        except pydantic.ValidationError:
            continue
    return parsed


def _applied(pod: Obj) -> list[str]:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(v1.ANNOTATION_PODCLIQUES) or ""
    return [name for name in str(value).split(",") if name]


class DynamoPodCliqueReconciler:
    """Writes one PodClique's status."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    async def reconcile(self, key: ObjectKey) -> Result:
        """Count the matched and shaped PodGangSet pods of the namespace; write the status if it changed."""
        raw = self.deps.cache.get(DYNAMO_PODCLIQUES, key)
        if raw is None or (raw.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        try:
            clique = self.deps.parsed.parse(DynamoPodClique, raw)
        except pydantic.ValidationError as exc:
            await self.deps.recorder.warning(raw, "InvalidPodClique", f"cannot parse PodClique: {exc}")
            return Result()
        pods = [
            p
            for p in self.deps.cache.list(PODS, key.namespace)
            if v1.LABEL_PODGANGSET in ((p.get("metadata") or {}).get("labels") or {})
            and not (p.get("metadata") or {}).get("deletionTimestamp")
        ]
        status: Obj = {
            "matchedPods": sum(1 for p in pods if clique.spec.selector.matches(p["metadata"].get("labels") or {})),
            "appliedPods": sum(1 for p in pods if key.name in _applied(p)),
        }
        if clique.metadata.generation is not None:
            status["observedGeneration"] = clique.metadata.generation
        await write_status(self.deps.client, DYNAMO_PODCLIQUES, raw, status)
        return Result()
