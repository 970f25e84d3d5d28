"""Where the scheduler reads gangs: a gang's PodGang, its pods and its priority, out of the informer caches.

Why one object: the scheduling cycle, start-up recovery, the event handlers and the PodGang status controller all
ask the same questions (which PodGang, which pods, at what priority) and must get the same answers. Assumed pods
are shown on their assumed node here, in the one place every reader goes through, so a gang whose binding cycle
is still running is never assembled as if nothing had been placed. Preemption and queues will read gangs here too.

Reads never raise on odd objects: a priority that is not a number counts as absent, like a missing one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Collection, Mapping
from typing import Any

from grove_api.labels import LABEL_PODGANG, LABEL_SCHEDULER_NAME
from grove_runtime.cache import Cache
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import PODS, PRIORITYCLASSES
from grove_sched.cache import PodKey, SchedulerCache
from grove_sched.gangs import Assembly, AssemblyContext, GangKey, Names, assemble, serves
from grove_sched.podgang_status import PODGANGS
from grove_sched.topology import CLUSTERTOPOLOGYBINDINGS, resolve_levels

__all__ = ["GANG_INDEX", "GangSource", "creation_time", "gang_index"]

Obj = Mapping[str, Any]
GANG_INDEX = "grove-sched-podgang"


def gang_index(pod: Obj) -> tuple[str, ...]:
    """Pod index value `namespace/podgang` for pods labelled with a PodGang."""
    meta = pod.get("metadata") or {}
    gang = (meta.get("labels") or {}).get(LABEL_PODGANG)
    return (f"{meta.get('namespace', '')}/{gang}",) if gang else ()


def creation_time(obj: Obj) -> float:
    """Creation timestamp as epoch seconds (queue age); 0 when absent or unparsable."""
    raw = (obj.get("metadata") or {}).get("creationTimestamp")
    if not raw:
        return 0.0
    with contextlib.suppress(ValueError):
        return dt.datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    return 0.0


def _number(value: object) -> int | None:
    """An integer field as found in an object, or None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return int(value)
    except (ValueError, OverflowError):
        return None


class GangSource:
    """Gang reads over the shared informer cache (`informers`, with the `GANG_INDEX` pod index) and the
    scheduler cache (`cache`, for assumed pods and node labels)."""

    def __init__(self, informers: Cache, cache: SchedulerCache, scheduler_name: Names) -> None:
        self.informers = informers
        self.cache = cache
        self.scheduler_name: Names = scheduler_name if isinstance(scheduler_name, str) else frozenset(scheduler_name)
        self.primary_name = scheduler_name if isinstance(scheduler_name, str) else next(iter(scheduler_name))

    def name_of(self, key: GangKey, podgang: Obj | None = None, pods: Mapping[str, Obj] | None = None) -> str:
        """Which served `schedulerName` the gang addressed (its PodGang's scheduler label, else its pods'), for
        Events and metrics; the first served name when none says."""
        if podgang is None and not key.single:
            podgang = self.podgang(key)
        label = ((podgang or {}).get("metadata") or {}).get("labels", {}).get(LABEL_SCHEDULER_NAME)
        if serves(self.scheduler_name, label):
            return str(label)
        for pod in (pods if pods is not None else self.pods_of(key, podgang)).values():
            name = (pod.get("spec") or {}).get("schedulerName")
            if serves(self.scheduler_name, name):
                return str(name)
        return self.primary_name

    def podgang(self, key: GangKey) -> Obj | None:
        """The PodGang of a (non-single) gang."""
        return None if key.single else self.informers.get(PODGANGS, ObjectKey(key.namespace, key.name))

    def podgangs(self) -> list[Obj]:
        """Every PodGang, by namespace and name."""
        return sorted(
            self.informers.list(PODGANGS),
            key=lambda o: (str(o["metadata"].get("namespace", "")), str(o["metadata"].get("name", ""))),
        )

    def pods_of(self, key: GangKey, podgang: Obj | None) -> dict[str, Obj]:
        """Referenced and labelled pods of a gang by name; assumed pods appear bound to their assumed node."""
        found: dict[str, Obj] = {}
        if key.single:
            pod = self.informers.get(PODS, ObjectKey(key.namespace, key.name))
            if pod is not None:
                found[key.name] = pod
        else:
            for pod in self.informers.by_index(PODS, GANG_INDEX, f"{key.namespace}/{key.name}"):
                found[str(pod["metadata"]["name"])] = pod
            for group in ((podgang or {}).get("spec") or {}).get("podgroups") or ():
                for ref in group.get("podReferences") or ():
                    name = str(ref.get("name"))
                    if name not in found:
                        referenced = self.informers.get(PODS, ObjectKey(key.namespace, name))
                        if referenced is not None:
                            found[name] = referenced
        for name, member in list(found.items()):
            node = self.cache.assumed_node(PodKey(key.namespace, name))
            if node is not None and not (member.get("spec") or {}).get("nodeName"):
                found[name] = {**member, "spec": {**(member.get("spec") or {}), "nodeName": node}}
        return found

    def pods_of_podgang(self, podgang: Obj) -> dict[str, Obj]:
        """`pods_of` for a PodGang object (what the status controller holds)."""
        meta = podgang.get("metadata") or {}
        return self.pods_of(GangKey(str(meta.get("namespace", "")), str(meta.get("name", ""))), podgang)

    def pod(self, namespace: str, name: str) -> Obj | None:
        """A pod as the informer knows it."""
        return self.informers.get(PODS, ObjectKey(namespace, name))

    def _priority_class(self, name: str) -> Obj | None:
        try:
            return self.informers.get(PRIORITYCLASSES, ObjectKey("", name))
        except KeyError:
            return None

    def _global_default(self) -> Obj | None:
        """The `globalDefault` PriorityClass (the lowest, should several claim it)."""
        found = [pc for pc in self.informers.list(PRIORITYCLASSES) if pc.get("globalDefault") is True]
        return min(found, key=lambda pc: _number(pc.get("value") or 0) or 0, default=None)

    def default_priority(self) -> int | None:
        """Value of the `globalDefault` PriorityClass, if there is one."""
        pc = self._global_default()
        return None if pc is None else _number(pc.get("value") or 0)

    def preemption_policy(self, key: GangKey, pod: Obj | None = None) -> str:
        """`preemptionPolicy` of the PodGang's class, else the pod's `spec.preemptionPolicy` (set from its class
        at admission), else its class's, else (no class named) the `globalDefault` class's; `PreemptLowerPriority`
        when none says."""
        spec = (pod or {}).get("spec") or {}
        podgang_class = ((self.podgang(key) or {}).get("spec") or {}).get("priorityClassName")
        for found in (
            (self._priority_class(str(podgang_class)) or {}).get("preemptionPolicy") if podgang_class else None,
            spec.get("preemptionPolicy"),
            (self._priority_class(str(spec["priorityClassName"])) or {}).get("preemptionPolicy")
            if spec.get("priorityClassName")
            else None,
            None
            if podgang_class or spec.get("priorityClassName")
            else (self._global_default() or {}).get("preemptionPolicy"),
        ):
            if found in ("Never", "PreemptLowerPriority"):
                return str(found)
        return "PreemptLowerPriority"

    def priority_of(self, name: str) -> int | None:
        """Value of a PriorityClass, if the informer knows it (and it is a number)."""
        pc = self._priority_class(name)
        return None if pc is None else _number(pc.get("value") or 0)

    def gang_priority(self, key: GangKey, pod: Obj | None = None) -> int:
        """PriorityClass value of the PodGang's class, else of the pod's class, else the pod's `spec.priority`, else
        (a priority of 0, what grove-sim's admission leaves) the `globalDefault` class's value."""
        if pod is None and key.single:
            pod = self.informers.get(PODS, ObjectKey(key.namespace, key.name))
        pod_spec = (pod or {}).get("spec") or {}
        for name in (
            ((self.podgang(key) or {}).get("spec") or {}).get("priorityClassName"),
            pod_spec.get("priorityClassName"),
        ):
            value = self.priority_of(str(name)) if name else None
            if value is not None:
                return value
        return _number(pod_spec.get("priority") or 0) or self.default_priority() or 0

    def topology_levels(self, podgang: Obj | None, keys: Collection[str]) -> tuple[str, ...]:
        """The gang's topology hierarchy from the ClusterTopologyBindings (`grove_sched.topology`); () = default."""
        try:
            bindings = self.informers.list(CLUSTERTOPOLOGYBINDINGS)
        except KeyError:  # no ClusterTopologyBinding informer (a cache built without one)
            return ()
        return resolve_levels(podgang, keys, bindings)

    def assemble(self, key: GangKey) -> tuple[Assembly, Obj | None]:
        """Assemble one gang from the current caches; also returns its PodGang (None for a gang of one)."""
        podgang = self.podgang(key)
        return self.assemble_with(key, podgang, self.pods_of(key, podgang)), podgang

    def assemble_with(self, key: GangKey, podgang: Obj | None, pods: Mapping[str, Obj]) -> Assembly:
        """Assemble a gang from a PodGang and pods given (the defragmentation report asks how a running gang would
        be placed again: its pods shown unbound), with this scheduler's names, nodes and priorities."""
        ctx = AssemblyContext(
            scheduler_name=self.scheduler_name,
            node_label_keys=self.cache.node_label_keys,
            node_labels=self.cache.node_labels,
            priority_of=self.priority_of,
            topology_levels=self.topology_levels,
            default_priority=self.default_priority(),
        )
        return assemble(key, podgang, pods, ctx)
