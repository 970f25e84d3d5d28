"""The API's history of a namespace in resourceVersion order, and the update counters checked against it.

grove-sim stamps one global resourceVersion on every write (as etcd does), so the events of several watches, merged
by resourceVersion, are the order the writes happened in. Replaying them gives the namespace's exact state at each
PodCliqueSet, PodClique or scaling-group status write, and so whether what it said was true at that moment:

* a PodCliqueSet status written for its current spec (`observedGeneration == generation`) names that spec's hash
  in `currentGenerationHash`, and `updatedReplicas` never exceeds the replicas whose pods all run the newest
  template;
* a PodClique or scaling group updating towards the newest template (its `updateProgress` names the hash) never
  counts more updated pods, or scaling-group replicas whose pods all run it, than exist at that moment, and does not
  say the update ended while a pod of it runs an older one.

A status is computed from a cache a little behind the API, but during an update pods on the newest template only
appear and pods on an older one only go, so a true count read from the past stays a lower bound: an overcount here is
a status that was never true.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from grove_api import PodCliqueSet
from grove_api import labels as glabels
from grove_operator import hashing
from grove_operator.desired.layout import identify_podclique
from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS
from grove_operator.parsed import defaulted_podcliqueset
from grove_runtime.client import KubeClient
from grove_runtime.resources import PODS, ResourceType

Obj = dict[str, Any]
KINDS: tuple[ResourceType, ...] = (PODS, PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS)
State = dict[str, dict[str, Obj]]
"""Resource plural → name → object."""


def _rv(obj: Obj) -> int:
    return int((obj.get("metadata") or {}).get("resourceVersion") or 0)


def _labels(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


@dataclass
class History:
    """Every write to pods, PodCliques, scaling groups and PodCliqueSets of a namespace, from one list + watch each."""

    kube: KubeClient
    namespace: str
    events: list[tuple[int, str, str, Obj]] = field(default_factory=list)
    """(resourceVersion, plural, event type, object)."""
    start: int = 0
    """The newest list's resourceVersion: from here on every kind's state is known."""
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def __aenter__(self) -> History:
        for rt in KINDS:
            listing = await self.kube.list(rt, self.namespace)
            for obj in listing["items"]:
                self.events.append((_rv(obj), rt.plural, "ADDED", obj))
            version = str(listing["metadata"]["resourceVersion"])
            self.start = max(self.start, int(version))
            self._tasks.append(asyncio.get_running_loop().create_task(self._watch(rt, version)))
        return self

    async def __aexit__(self, *_: object) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _watch(self, rt: ResourceType, version: str) -> None:
        async with self.kube.watch(rt, self.namespace, resource_version=version) as stream:
            async for event in stream:
                obj = event.get("object") or {}
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    self.events.append((_rv(obj), rt.plural, str(event["type"]), obj))

    def replay(self) -> Iterator[tuple[str, Obj, State]]:
        """(plural, object written, the namespace's state right after) for every write from `start` on."""
        state: State = defaultdict(dict)
        for rv, plural, kind, obj in sorted(self.events, key=lambda e: e[0]):
            name = str(obj["metadata"]["name"])
            if kind == "DELETED":
                state[plural].pop(name, None)
            else:
                state[plural][name] = obj
            if rv >= self.start:
                yield plural, obj, state


def _live(state: State) -> list[Obj]:
    return [p for p in state[PODS.plural].values() if not p["metadata"].get("deletionTimestamp")]


def untrue_counters(history: History, name: str) -> list[str]:
    """Every status write of PodCliqueSet `name` and its children that claimed more than was true (see above)."""
    found: list[str] = []
    parsed: dict[int, PodCliqueSet] = {}
    for plural, obj, state in history.replay():
        raw = state[PODCLIQUESETS.plural].get(name)
        if raw is None:
            continue
        if _rv(raw) not in parsed:
            parsed[_rv(raw)] = defaulted_podcliqueset(raw)
        pcs = parsed[_rv(raw)]
        newest = hashing.clique_hashes(pcs.spec.template)
        current: dict[tuple[str, ...], list[bool]] = defaultdict(list)
        for pod in _live(state):
            labels = _labels(pod)
            instance = identify_podclique(pcs, labels.get(glabels.LABEL_PODCLIQUE, ""))
            fresh = instance is not None and labels.get(glabels.LABEL_POD_TEMPLATE_HASH) == newest[instance.clique.name]
            current[("pcs", labels.get(glabels.LABEL_PCS_REPLICA_INDEX, ""))].append(fresh)
            current[("pclq", labels.get(glabels.LABEL_PODCLIQUE, ""), str(fresh))].append(fresh)
            group = labels.get(glabels.LABEL_PCSG)
            if group:
                current[("pcsg", group, labels.get(glabels.LABEL_PCSG_REPLICA_INDEX, ""))].append(fresh)
        status = obj.get("status") or {}
        progress = status.get("updateProgress") or {}
        where = f"{plural}/{obj['metadata']['name']}@{_rv(obj)}"
        if plural == PODCLIQUESETS.plural and obj["metadata"]["name"] == name:
            if status.get("observedGeneration") != obj["metadata"].get("generation"):
                continue
            if status.get("currentGenerationHash") != hashing.generation_hash(pcs.spec.template):
                found.append(f"{where}: currentGenerationHash is not the spec's")
            truth = sum(1 for key, pods in current.items() if key[0] == "pcs" and pods and all(pods))
            if status.get("updatedReplicas", 0) > truth:
                found.append(f"{where}: updatedReplicas {status.get('updatedReplicas')} > {truth}")
        elif plural == PODCLIQUES.plural and progress.get("podTemplateHash"):
            instance = identify_podclique(pcs, str(obj["metadata"]["name"]))
            if instance is None or progress["podTemplateHash"] != newest[instance.clique.name]:
                continue
            truth = len(current[("pclq", str(obj["metadata"]["name"]), "True")])
            if status.get("updatedReplicas", 0) > truth:
                found.append(f"{where}: updatedReplicas {status.get('updatedReplicas')} > {truth}")
            if progress.get("updateEndedAt") and current[("pclq", str(obj["metadata"]["name"]), "False")]:
                found.append(f"{where}: update ended with pods on an older template")
        elif plural == PODCLIQUESCALINGGROUPS.plural and progress.get("podCliqueSetGenerationHash"):
            if progress["podCliqueSetGenerationHash"] != hashing.generation_hash(pcs.spec.template):
                continue
            group = str(obj["metadata"]["name"])
            replicas = [pods for key, pods in current.items() if key[:2] == ("pcsg", group)]
            truth = sum(1 for pods in replicas if pods and all(pods))
            if status.get("updatedReplicas", 0) > truth:
                found.append(f"{where}: updatedReplicas {status.get('updatedReplicas')} > {truth}")
            if progress.get("updateEndedAt") and not all(all(pods) for pods in replicas):
                found.append(f"{where}: update ended with pods on an older template")
    return found
