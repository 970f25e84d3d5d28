"""The chaos workload: seeded PodCliqueSet shapes, and a driver that creates, scales and deletes them.

Shapes (small, so that hundreds live at once on a few hundred nodes): one clique; a leader and workers with
`startsAfter`; a scaling group of leader and workers (its replicas beyond `minAvailable` are gangs of their own).
The driver keeps up to `live` PodCliqueSets, and on each step either creates one or acts on one the observer saw
settle (every pod bound): scale the PodCliqueSet or a scaling group through the `scale` subresource, delete it,
delete one of its pods (a node failure's effect: the clique recreates the pod, and a gang left below its
`minAvailable` for longer than the shapes' 1 s `terminationDelay` is terminated and recreated whole, gang
termination), or (with `rolling_updates`) change every clique's image, which the operator rolls out.
Its requests go through the observer's fault-exempt account: the programs are under test, not the driver.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmarks.chaos.observer import PCS, PCSG, Observer
from benchmarks.e2e.scenarios import SCHEDULER_NAME
from grove_api.labels import LABEL_PART_OF
from grove_runtime import errors
from grove_runtime.client import KubeClient, PatchType
from grove_runtime.resources import PODS

__all__ = ["SHAPES", "Driver", "pcs_body"]

SHAPES = ("single", "ordered", "scaling-group")
TERMINATION_DELAY = "1s"
"""How long a gang may stay below its minimum before the operator terminates it (the default is 4 h)."""


def _clique(name: str, replicas: int, gpus: int, **extra: Any) -> dict[str, Any]:
    requests = {"cpu": "250m", "memory": "512Mi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    resources: dict[str, Any] = {"requests": requests}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    container = {"name": name, "image": "registry.example.com/chaos:1", "resources": resources}
    spec = {"roleName": name, "replicas": replicas, "podSpec": {"schedulerName": SCHEDULER_NAME,
                                                                "containers": [container]}}  # fmt: skip
    return {"name": name, "spec": {**spec, **extra}}


def pcs_body(name: str, namespace: str, rng: random.Random) -> dict[str, Any]:
    """A PodCliqueSet of a random shape (the shape is its `chaos/shape` label)."""
    shape = rng.choice(SHAPES)
    gpus = rng.choice([0, 1, 1, 2])
    template: dict[str, Any]
    if shape == "single":
        replicas = rng.randint(1, 3)
        template = {"cliques": [_clique("w", replicas, gpus, minAvailable=rng.randint(1, replicas))]}
    elif shape == "ordered":
        template = {
            "startupType": "CliqueStartupTypeExplicit",
            "cliques": [_clique("lead", 1, gpus), _clique("work", rng.randint(1, 2), gpus, startsAfter=["lead"])],
        }
    else:
        template = {
            "cliques": [_clique("lead", 1, gpus), _clique("work", rng.randint(1, 2), gpus)],
            "podCliqueScalingGroups": [
                {"name": "sg", "cliqueNames": ["lead", "work"], "replicas": rng.randint(1, 3), "minAvailable": 1}
            ],
        }
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"chaos/shape": shape}},
        "spec": {"replicas": rng.choice([1, 1, 2]), "template": {**template, "terminationDelay": TERMINATION_DELAY}},
    }


@dataclass
class Driver:
    """Creates, scales and deletes PodCliqueSets in `namespace`; `actions` counts what it did."""

    client: KubeClient
    observer: Observer
    namespace: str
    rng: random.Random
    live: int = 200
    rolling_updates: bool = False
    actions: Counter[str] = field(default_factory=Counter)
    created: int = 0
    settled_every: float = 0.25
    _settled_cache: tuple[float, list[str]] = (float("-inf"), [])

    def _settled_now(self) -> list[str]:
        """`_settled()`, recomputed at most every `settled_every` seconds (it reads every pod: the runner shares
        the machine's cores with the programs under test); a name acted on leaves the list until the next one."""
        now = time.monotonic()
        if now - self._settled_cache[0] >= self.settled_every:
            self._settled_cache = (now, self._settled())
        return self._settled_cache[1]

    def _settled(self) -> list[str]:
        """Live PodCliqueSets whose every pod the observer sees bound (and that have pods)."""
        pods: dict[str, list[bool]] = {}
        for pod in self.observer.in_namespace("pods", self.namespace):
            owner = str(((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_PART_OF))
            pods.setdefault(owner, []).append(bool((pod.get("spec") or {}).get("nodeName")))
        return sorted(
            name
            for name, obj in self._pcs().items()
            if not (obj.get("metadata") or {}).get("deletionTimestamp") and pods.get(name) and all(pods[name])
        )

    def _pcs(self) -> dict[str, Mapping[str, Any]]:
        return {str(o["metadata"]["name"]): o for o in self.observer.in_namespace("pcs", self.namespace)}

    async def step(self) -> None:
        """One action (the API's refusals of a racing action, e.g. scaling an object being deleted, are counted)."""
        try:
            await self._act()
        except errors.ApiError as exc:
            self.actions[f"refused-{exc.status}"] += 1

    async def _act(self) -> None:
        existing = self._pcs()
        if len(existing) < self.live and self.rng.random() < 0.6:
            name = f"c{self.created:05d}"
            self.created += 1
            await self.client.create(PCS, pcs_body(name, self.namespace, self.rng))
            self.actions["create"] += 1
            return
        settled = self._settled_now()
        if not settled:
            return
        name = self.rng.choice(settled)
        settled.remove(name)
        if name not in existing:  # the settled list is up to `settled_every` old: deleted since
            return
        roll = self.rng.random()
        if roll < 0.35:
            await self.client.delete(PCS, name, self.namespace)
            self.actions["delete"] += 1
        elif self.rolling_updates and roll < 0.45:
            await self._update_template(existing[name])
            self.actions["update-template"] += 1
        elif roll < 0.55:
            await self._delete_pod(name)
        elif roll < 0.7:
            replicas = int((existing[name].get("spec") or {}).get("replicas", 1))
            await self.client.scale(PCS, name, self.namespace, max(1, replicas + self.rng.choice([-1, 1])))
            self.actions["scale-pcs"] += 1
        else:
            groups = [g for g in self.observer.in_namespace("pcsg", self.namespace)
                      if (g["metadata"].get("labels") or {}).get(LABEL_PART_OF) == name]  # fmt: skip
            if not groups:
                return
            group = self.rng.choice(groups)
            replicas = int((group.get("spec") or {}).get("replicas", 1))
            await self.client.scale(
                PCSG, group["metadata"]["name"], self.namespace, max(1, replicas + self.rng.choice([-1, 1]))
            )
            self.actions["scale-pcsg"] += 1

    async def _delete_pod(self, name: str) -> None:
        """Delete one pod of the PodCliqueSet, as a failed node's pods go (gang termination when it breaks a gang)."""
        pods = [p for p in self.observer.in_namespace("pods", self.namespace)
                if ((p.get("metadata") or {}).get("labels") or {}).get(LABEL_PART_OF) == name]  # fmt: skip
        if not pods:
            return
        pod = self.rng.choice(sorted(pods, key=lambda p: str(p["metadata"]["name"])))
        await self.client.delete(PODS, str(pod["metadata"]["name"]), self.namespace)
        self.actions["delete-pod"] += 1

    async def _update_template(self, pcs: Mapping[str, Any]) -> None:
        """A new image for every clique: a template change the operator rolls out (once it does rolling updates)."""
        cliques = (pcs.get("spec") or {}).get("template", {}).get("cliques") or []
        version = self.rng.randint(2, 1_000_000)
        patch = [
            {"op": "replace", "path": f"/spec/template/cliques/{i}/spec/podSpec/containers/0/image",
             "value": f"registry.example.com/chaos:{version}"}
            for i in range(len(cliques))
        ]  # fmt: skip
        await self.client.patch(PCS, str(pcs["metadata"]["name"]), patch, self.namespace,
                                patch_type=PatchType.JSON)  # fmt: skip

    async def run(self, stop: asyncio.Event, pace: float = 0.02) -> None:
        """Act until `stop` is set."""
        while not stop.is_set():
            await self.step()
            await asyncio.sleep(pace)
