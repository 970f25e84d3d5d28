"""The independent observer: its own list+watch of every kind that matters, and the invariants checked on it.

Independent of the programs it judges: it reads the API through its own client, as a service account that the fault
configuration exempts (`exemptUsers`), so it sees the cluster as it is while grove-operator and grove-scheduler meet
every fault; it imports nothing of theirs, only label names from `grove_api`. Invariants, continuously: no gang with
some pods bound but a group below its `minReplicas` for longer than the recovery window; no node holding more than
its allocatable (nor a pod its kubelet refused as `OutOf<resource>`); no object with more Events than
`event_bound`. At the end, once converged: every PodClique's pods
carry the indices 0..replicas-1 exactly once; every owned object's owner exists; nothing remains of a deleted
PodCliqueSet; and the final state equals the one a fault-free run reaches from the same specs (`digest`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from benchmarks.e2e.verify import check_overcommit
from grove_api.labels import (
    LABEL_PART_OF,
    LABEL_PCSG,
    LABEL_POD_TEMPLATE_HASH,
    LABEL_PODCLIQUE,
    LABEL_PODCLIQUE_POD_INDEX,
)
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import EVENTS, NODES, PODS, ResourceType

__all__ = ["KINDS", "Observer", "Violation"]

Obj = Mapping[str, Any]
PCS = ResourceType("grove.io", "v1alpha1", "podcliquesets", "PodCliqueSet")
PCLQ = ResourceType("grove.io", "v1alpha1", "podcliques", "PodClique")
PCSG = ResourceType("grove.io", "v1alpha1", "podcliquescalinggroups", "PodCliqueScalingGroup")
PODGANGS = ResourceType("scheduler.grove.io", "v1alpha1", "podgangs", "PodGang")
KINDS: dict[str, ResourceType] = {
    "pcs": PCS, "pclq": PCLQ, "pcsg": PCSG, "podgangs": PODGANGS, "pods": PODS, "nodes": NODES, "events": EVENTS,
}  # fmt: skip
OWNED = ("pclq", "pcsg", "podgangs", "pods")
LIFECYCLE_REASONS = frozenset({"GangTermination", "Preempted", "Preempting"})
"""Event reasons counted to show the run exercised gang termination (the operator's) and preemption (the
scheduler's); the reasons are the Kubernetes Events' public vocabulary, not the programs' code."""
_OWNER_KINDS = frozenset({"PodCliqueSet", "PodClique", "PodCliqueScalingGroup"})


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant: which, on what, in words, and when (seconds since the observer started)."""

    invariant: str
    subject: str
    detail: str
    at: float


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _key(obj: Obj) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or ''}/{meta.get('name')}"


def _live(obj: Obj) -> bool:
    return not _meta(obj).get("deletionTimestamp")


def _bound(pod: Obj | None) -> bool:
    return pod is not None and _live(pod) and bool((pod.get("spec") or {}).get("nodeName"))


@dataclass
class Observer:
    """Watches the whole cluster through `client`; `check` judges the live invariants, the rest judge an end state."""

    client: KubeClient
    recovery_window: float = 60.0
    event_bound: int = 100
    clock: Callable[[], float] = time.monotonic
    objects: dict[str, dict[str, Obj]] = field(default_factory=lambda: {kind: {} for kind in KINDS})
    violations: list[Violation] = field(default_factory=list)
    gangs_seen: set[str] = field(default_factory=set)
    gangs_bound: set[str] = field(default_factory=set)
    watch_restarts: int = 0
    _partial_since: dict[str, float] = field(default_factory=dict)
    _reported: set[tuple[str, str]] = field(default_factory=set)
    _events: Counter[str] = field(default_factory=Counter)
    lifecycle_events: Counter[str] = field(default_factory=Counter)
    """Events of the lifecycle features the run should exercise, by reason (gang termination, preemption)."""
    _event_uids: set[str] = field(default_factory=set)
    _synced: dict[str, asyncio.Event] = field(default_factory=lambda: {kind: asyncio.Event() for kind in KINDS})
    _start: float = 0.0

    def __post_init__(self) -> None:
        self._start = self.clock()

    # --- watching --------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """List and watch every kind until cancelled."""
        await asyncio.gather(*(self._watch(kind, rt) for kind, rt in KINDS.items()))

    async def synced(self) -> None:
        """Wait until every kind has been listed once."""
        for event in self._synced.values():
            await event.wait()

    async def _watch(self, kind: str, rt: ResourceType) -> None:
        while True:
            try:
                listing = await self.client.list(rt, None)
                fresh = {_key(obj): obj for obj in listing["items"]}
                for obj in fresh.values():
                    self._seen(kind, obj)
                self.objects[kind] = dict(fresh)
                self._synced[kind].set()
                rv = listing["metadata"]["resourceVersion"]
                async with self.client.watch(rt, None, resource_version=rv, timeout_seconds=3600) as stream:
                    async for event in stream:
                        obj = event.get("object") or {}
                        if event.get("type") == "DELETED":
                            self.objects[kind].pop(_key(obj), None)
                        elif event.get("type") in ("ADDED", "MODIFIED"):
                            self.objects[kind][_key(obj)] = obj
                            self._seen(kind, obj)
            except (TimeoutError, errors.ApiError, aiohttp.ClientError, KeyError, OSError, ValueError):
                self.watch_restarts += 1
                await asyncio.sleep(0.2)

    def _seen(self, kind: str, obj: Obj) -> None:
        uid = str(_meta(obj).get("uid") or "")
        if kind == "podgangs":
            self.gangs_seen.add(uid)
        elif kind == "events" and uid not in self._event_uids:
            self._event_uids.add(uid)
            self._events[str((obj.get("involvedObject") or {}).get("uid") or _key(obj))] += 1
            reason = str(obj.get("reason") or "")
            if reason in LIFECYCLE_REASONS:
                self.lifecycle_events[reason] += 1

    # --- live invariants -------------------------------------------------------------------------------------
    def violate(self, invariant: str, subject: str, detail: str) -> None:
        """Record a violation (once per invariant and subject)."""
        if (invariant, subject) not in self._reported:
            self._reported.add((invariant, subject))
            self.violations.append(Violation(invariant, subject, detail, round(self.clock() - self._start, 1)))

    def in_namespace(self, kind: str, namespace: str) -> list[Obj]:
        """The objects of a kind in one namespace."""
        return [obj for obj in self.objects[kind].values() if _meta(obj).get("namespace") == namespace]

    def gang_state(self, gang: Obj) -> tuple[int, bool]:
        """(pods bound, whether every group has at least `minReplicas` bound) of a PodGang."""
        namespace = _meta(gang).get("namespace")
        pods = self.objects["pods"]
        bound_total, complete = 0, True
        for group in (gang.get("spec") or {}).get("podgroups") or []:
            refs = group.get("podReferences") or []
            bound = sum(1 for ref in refs if _bound(pods.get(f"{ref.get('namespace') or namespace}/{ref.get('name')}")))
            bound_total += bound
            complete = complete and bound >= int(group.get("minReplicas", len(refs)))
        return bound_total, complete

    def check(self) -> None:
        """Judge the live invariants once (call every second or so)."""
        now = self.clock()
        live_pcs = {_key(p) for p in self.objects["pcs"].values() if _live(p)}
        partial = set()
        for gang in self.objects["podgangs"].values():
            uid = str(_meta(gang).get("uid"))
            bound, complete = self.gang_state(gang)
            if complete and bound:
                self.gangs_bound.add(uid)
            owner = f"{_meta(gang).get('namespace')}/{(_meta(gang).get('labels') or {}).get(LABEL_PART_OF)}"
            if bound and not complete and _live(gang) and owner in live_pcs:
                partial.add(uid)
                since = self._partial_since.setdefault(uid, now)
                if now - since > self.recovery_window:
                    self.violate(
                        "gang-below-minimum", _key(gang), f"{bound} pods bound, a group below minReplicas for "
                        f"{now - since:.0f} s (window {self.recovery_window:.0f} s)",
                    )  # fmt: skip
        self._partial_since = {uid: t for uid, t in self._partial_since.items() if uid in partial}
        for problem in check_overcommit(list(self.objects["nodes"].values()), list(self.objects["pods"].values())):
            self.violate("node-over-committed", problem.split()[1], problem)
        for pod in self.objects["pods"].values():  # a kubelet refuses a pod that does not fit: OutOf<resource>
            status = pod.get("status") or {}
            if status.get("phase") == "Failed" and str(status.get("reason", "")).startswith("OutOf"):
                node = str((pod.get("spec") or {}).get("nodeName"))
                self.violate("node-over-committed", node, f"pod {_key(pod)} refused by the kubelet: {status['reason']}")
        for subject, count in self._events.items():
            if count > self.event_bound:
                self.violate("event-storm", subject, f"{count} Events (bound {self.event_bound})")

    def max_events_per_object(self) -> int:
        """The most Events any one object got."""
        return max(self._events.values(), default=0)

    # --- end-state invariants --------------------------------------------------------------------------------
    def unsettled(self, namespace: str) -> list[str]:
        """Why the namespace is not converged yet (empty: converged): specs not observed, PodCliques without their
        pods, pods not bound, gangs incomplete."""
        reasons = []
        for kind in ("pcs", "pcsg"):
            for obj in self.in_namespace(kind, namespace):
                status = obj.get("status") or {}
                if _live(obj) and status.get("observedGeneration") != _meta(obj).get("generation"):
                    reasons.append(f"{kind} {_key(obj)} generation not observed")
        pods_of: dict[str, list[Obj]] = defaultdict(list)
        for pod in self.in_namespace("pods", namespace):
            pods_of[str((_meta(pod).get("labels") or {}).get(LABEL_PODCLIQUE))].append(pod)
            if not _bound(pod):
                gates = [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or []]
                reasons.append(f"pod {_key(pod)} not bound" + (f" (gated: {gates})" if gates else " (ungated)"))
        for pclq in self.in_namespace("pclq", namespace):
            live = [p for p in pods_of[str(_meta(pclq).get("name"))] if _live(p)]
            if _live(pclq) and len(live) != int((pclq.get("spec") or {}).get("replicas", 0)):
                reasons.append(f"pclq {_key(pclq)}: {len(live)} pods")
        for gang in self.in_namespace("podgangs", namespace):
            if not self.gang_state(gang)[1]:
                phase = (gang.get("status") or {}).get("phase")
                reasons.append(f"podgang {_key(gang)} incomplete (phase {phase})")
        return reasons

    def check_converged(self, namespace: str) -> None:
        """Pod indices and owners of a converged namespace."""
        pods_of: dict[str, list[str]] = defaultdict(list)
        for pod in self.in_namespace("pods", namespace):
            labels = _meta(pod).get("labels") or {}
            pods_of[str(labels.get(LABEL_PODCLIQUE))].append(str(labels.get(LABEL_PODCLIQUE_POD_INDEX)))
        for pclq in self.in_namespace("pclq", namespace):
            indices = sorted(pods_of[str(_meta(pclq).get("name"))], key=lambda i: (len(i), i))
            expected = [str(i) for i in range(int((pclq.get("spec") or {}).get("replicas", 0)))]
            if indices != expected:
                self.violate("pod-index", _key(pclq), f"pod indices {indices[:10]}, expected 0..{len(expected) - 1}")
        uids = {str(_meta(o).get("uid")) for kind in ("pcs", "pclq", "pcsg") for o in self.objects[kind].values()}
        for kind in OWNED:
            for obj in self.in_namespace(kind, namespace):
                for ref in _meta(obj).get("ownerReferences") or []:
                    if ref.get("kind") in _OWNER_KINDS and str(ref.get("uid")) not in uids:
                        self.violate("orphan", f"{kind} {_key(obj)}", f"owner {ref.get('kind')} {ref.get('name')} gone")

    def leftovers(self, namespace: str) -> list[str]:
        """Objects a deleted PodCliqueSet left behind in the namespace."""
        return [f"{kind} {_key(obj)}" for kind in ("pcs", *OWNED) for obj in self.in_namespace(kind, namespace)]

    def check_leaks(self, namespace: str) -> None:
        """Record everything still in the namespace as leaked."""
        for leftover in self.leftovers(namespace):
            self.violate("leaked", leftover, "still present after its PodCliqueSet was deleted")

    def digest(self, namespace: str, *, template_hash: bool = False) -> dict[str, Any]:
        """The converged state per PodCliqueSet with names relative to it (nodes excluded: placement may differ);
        with `template_hash`, each pod's template hash too (whether template changes were rolled out: without
        them, pods the operator created before a scale may carry another hash than fresh ones, which is allowed)."""
        out: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
        for kind in OWNED:
            for obj in self.in_namespace(kind, namespace):
                labels = _meta(obj).get("labels") or {}
                name = str(_meta(obj).get("name"))
                if kind == "pods":
                    entry: Any = [labels.get(LABEL_PODCLIQUE), labels.get(LABEL_PODCLIQUE_POD_INDEX), _bound(obj),
                                  labels.get(LABEL_POD_TEMPLATE_HASH) if template_hash else None]  # fmt: skip
                elif kind == "podgangs":
                    groups = (obj.get("spec") or {}).get("podgroups") or []
                    entry = [name, sorted((g.get("name"), g.get("minReplicas"), len(g.get("podReferences") or []))
                                          for g in groups)]  # fmt: skip
                else:
                    entry = [name, (obj.get("spec") or {}).get("replicas"), labels.get(LABEL_PCSG)]
                out[str(labels.get(LABEL_PART_OF))][kind].append(entry)
        return {pcs: {kind: sorted(map(str, entries)) for kind, entries in kinds.items()} for pcs, kinds in out.items()}

    def summary(self) -> dict[str, Any]:
        """The observer's figures for the results file."""
        by_kind = Counter(v.invariant for v in self.violations)
        return {
            "gangs_seen": len(self.gangs_seen),
            "gangs_bound": len(self.gangs_bound),
            "violations": len(self.violations),
            "violations_by_invariant": dict(by_kind),
            "violation_examples": [_asdict(v) for v in self.violations[:20]],
            "max_events_per_object": self.max_events_per_object(),
            "lifecycle_events": dict(self.lifecycle_events),
            "observer_watch_restarts": self.watch_restarts,
        }


def _asdict(violation: Violation) -> dict[str, Any]:
    return {"invariant": violation.invariant, "subject": violation.subject, "detail": violation.detail,
            "at": violation.at}  # fmt: skip


@contextlib.asynccontextmanager
async def observing(observer: Observer, period: float = 1.0) -> Any:
    """Run the observer's watches and its periodic `check` for the duration of the block (synced first)."""

    async def judge() -> None:
        while True:
            await asyncio.sleep(period)
            observer.check()

    tasks = [asyncio.ensure_future(observer.run())]
    try:
        await observer.synced()
        tasks.append(asyncio.ensure_future(judge()))
        yield observer
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def differences(got: Mapping[str, Any], want: Mapping[str, Any]) -> Iterable[str]:
    """PodCliqueSets whose digests differ between two runs."""
    for name in sorted(set(got) | set(want)):
        if got.get(name) != want.get(name):
            yield name


def entry_diff(chaos: Mapping[str, list[str]] | None, fault_free: Mapping[str, list[str]] | None) -> dict[str, Any]:
    """Per kind, the digest entries only the chaos run has and those only the fault-free run has (what to look at)."""
    chaos, fault_free = chaos or {}, fault_free or {}
    out: dict[str, Any] = {}
    for kind in sorted(set(chaos) | set(fault_free)):
        mine, theirs = set(chaos.get(kind, [])), set(fault_free.get(kind, []))
        if mine != theirs:
            out[kind] = {"chaos_only": sorted(mine - theirs), "fault_free_only": sorted(theirs - mine)}
    return out
