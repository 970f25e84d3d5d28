"""Assemble a `GangRequest` from a PodGang object and its pods, or say why the gang cannot be placed yet.

Why: the PodGang is the operator's statement of *which* pods form a gang and *how many* of each group must start
together; the pods say *what* each needs. This module is the one pure translation between the two, so that the
readiness rule (every PodGroup has at least `minReplicas` ungated, unbound pods with our scheduler name) and the
"malformed PodGang" rules live in one tested place. A pod without the `grove.io/podgang` label is a gang of one.
References to missing pods and `minReplicas` above the references are only malformed once the operator is done
creating the gang (no `Initialized` condition, or `Initialized=True`); while it reports `Initialized=False` they
just mean "not ready yet", so a gang being built is never reported as broken.

Pods of a gang that are already bound (an earlier attempt placed the minimum, the gang grew since) count towards
`minReplicas`; the remaining pods are then extras, pinned by a node selector to the domains the bound pods already
occupy for every required topology key, so a later attempt never breaks a required constraint.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from grove_api.labels import LABEL_MANAGED_BY, LABEL_PODGANG, LABEL_SCHEDULER_NAME, MANAGED_BY_VALUE
from grove_api.podgang import CONDITION_INITIALIZED
from grove_sched.model import GangRequest, GroupConfig, PodGroup, PodRef, TopologyConstraint
from grove_sched.podspec import pod_terms
from grove_sched.quantity import pod_demand

__all__ = [
    "Assembly",
    "AssemblyContext",
    "GangKey",
    "Malformed",
    "ReadyGang",
    "Waiting",
    "assemble",
    "gang_key_of_pod",
    "is_ours",
    "is_pending",
    "min_replicas",
    "serves",
    "topology_keys",
]

Obj = Mapping[str, Any]
Names = str | Collection[str]
"""The `schedulerName`s this scheduler serves: one name, or several (`grove-scheduler --scheduler-name` repeated)."""


def serves(names: Names, value: object) -> bool:
    """Whether `value` (a pod's `schedulerName`, a PodGang's scheduler label) is one of the served names."""
    if isinstance(names, str):
        return value == names
    return isinstance(value, str) and value in names


def _shown(names: Names) -> str:
    return names if isinstance(names, str) else " or ".join(sorted(names))


@dataclass(frozen=True, slots=True, order=True)
class GangKey:
    """Identity of a gang: a PodGang, or (`single=True`) one unlabelled pod that is a gang of its own."""

    namespace: str
    name: str
    single: bool = False

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" + (" (pod)" if self.single else "")


@dataclass(frozen=True, slots=True)
class AssemblyContext:
    """What assembly needs from the rest of the scheduler, as plain values and lookups."""

    scheduler_name: Names
    node_label_keys: Collection[str]
    node_labels: Callable[[str], Mapping[str, str] | None]
    priority_of: Callable[[str], int | None] = field(default=lambda _name: None)
    topology_levels: Callable[[Obj | None, Collection[str]], tuple[str, ...]] = field(default=lambda _pg, _keys: ())
    """The gang's topology hierarchy from its PodGang and the keys its constraints use (`grove_sched.topology`)."""
    default_priority: int | None = None
    """Value of the `globalDefault` PriorityClass, for pods whose priority no class names."""


@dataclass(frozen=True, slots=True)
class ReadyGang:
    """A gang to place now: the request, the pending pods by name and the already bound pods by name."""

    key: GangKey
    request: GangRequest
    pods: Mapping[str, Obj]
    bound: Mapping[str, Obj]
    required_pods: int


@dataclass(frozen=True, slots=True)
class Waiting:
    """Nothing to place yet (pods still gated or missing, or everything bound); not worth reporting."""

    key: GangKey
    reason: str


@dataclass(frozen=True, slots=True)
class Malformed:
    """The PodGang itself is wrong; the reasons go into its `Scheduled` condition and a Warning event."""

    key: GangKey
    reasons: tuple[str, ...]


Assembly = ReadyGang | Waiting | Malformed


def gang_key_of_pod(pod: Obj) -> GangKey:
    """The gang a pod belongs to: its `grove.io/podgang` label, else itself."""
    meta = pod.get("metadata") or {}
    gang = (meta.get("labels") or {}).get(LABEL_PODGANG)
    namespace = str(meta.get("namespace", ""))
    if gang:
        return GangKey(namespace, str(gang))
    return GangKey(namespace, str(meta.get("name", "")), single=True)


def is_pending(pod: Obj, scheduler_name: Names) -> bool:
    """Whether we may place this pod now: ours (its `schedulerName` is one we serve), unbound, ungated, not
    terminating or finished."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    return (
        serves(scheduler_name, spec.get("schedulerName"))
        and not spec.get("nodeName")
        and not spec.get("schedulingGates")
        and not meta.get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    )


def is_ours(podgang: Obj, pods: Mapping[str, Obj], scheduler_name: Names) -> bool:
    """Whether a PodGang is for this scheduler: its `grove.io/scheduler-name` label, else any member pod's name."""
    label = ((podgang.get("metadata") or {}).get("labels") or {}).get(LABEL_SCHEDULER_NAME)
    if label:
        return serves(scheduler_name, label)
    return any(serves(scheduler_name, (pod.get("spec") or {}).get("schedulerName")) for pod in pods.values())


def min_replicas(group: Obj) -> int:
    """A PodGroup's `minReplicas` as found; a value that is not a whole number counts as 0 (the API validates it, so
    only a malformed object gets here, and assembly reports that one as malformed)."""
    try:
        return int(group.get("minReplicas") or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


def _creating(podgang: Obj) -> bool:
    """The operator marks a PodGang `Initialized=False` while it still creates pods; references fill in meanwhile.

    The operator creates the PodGang first and writes that condition in a second request, so a PodGang it manages
    with no `Initialized` condition yet is still being created too (judging it malformed would cost a backoff).
    """
    conditions = [c for c in (podgang.get("status") or {}).get("conditions") or () if isinstance(c, Mapping)]
    initialized = [c for c in conditions if c.get("type") == CONDITION_INITIALIZED]
    if initialized:
        return any(c.get("status") != "True" for c in initialized)
    labels = (podgang.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(LABEL_MANAGED_BY) == MANAGED_BY_VALUE)


def _is_bound(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName")) and not (pod.get("metadata") or {}).get("deletionTimestamp")


def _constraint(raw: Obj | None) -> TopologyConstraint:
    pack = (raw or {}).get("packConstraint") or {}
    return TopologyConstraint(required_key=pack.get("required") or None, preferred_key=pack.get("preferred") or None)


def topology_keys(podgang: Obj) -> set[str]:
    """Every node label key a PodGang's topology constraints mention."""
    spec = podgang.get("spec") or {}
    scopes = [spec.get("topologyConstraint")]
    scopes += [c.get("topologyConstraint") for c in spec.get("topologyConstraintGroupConfigs") or ()]
    scopes += [g.get("topologyConstraint") for g in spec.get("podgroups") or ()]
    keys: set[str] = set()
    for scope in scopes:
        c = _constraint(scope)
        keys.update(k for k in (c.required_key, c.preferred_key) if k)
    return keys


def _priority(pods: Sequence[Obj], class_name: str | None, ctx: AssemblyContext) -> int:
    """PriorityClass value of the gang (its own class, else the pods'), else the pods' resolved `spec.priority`, else
    (a priority of 0, what grove-sim's admission leaves) the `globalDefault` class's value."""
    names = [class_name] if class_name else []
    names += [str(p["spec"]["priorityClassName"]) for p in pods if (p.get("spec") or {}).get("priorityClassName")]
    for name in names:
        value = ctx.priority_of(name)
        if value is not None:
            return value
    explicit = [int(p["spec"]["priority"]) for p in pods if (p.get("spec") or {}).get("priority") is not None]
    return max(explicit, default=0) or (ctx.default_priority or 0)


def _group(
    name: str, pods: Sequence[Obj], min_replicas: int, topology: TopologyConstraint, pin: Mapping[str, str]
) -> PodGroup:
    """A PodGroup whose template (labels, selectors, affinity) is its first pod by name."""
    ordered = sorted(pods, key=lambda p: str(p["metadata"]["name"]))
    template = pod_terms(ordered[0])
    base = pod_demand(ordered[0])
    refs = []
    for pod in ordered:
        requests = pod_demand(pod)
        meta = pod["metadata"]
        override = None if requests == base else MappingProxyType(requests)
        refs.append(PodRef(str(meta["name"]), str(meta.get("uid", "")), override))
    selector = dict(template.node_selector)
    selector.update(pin)
    return PodGroup(
        name=name,
        pods=tuple(refs),
        min_replicas=min_replicas,
        requests=MappingProxyType(base),
        labels=template.labels,
        node_selector=MappingProxyType(selector),
        required_node_terms=template.required_node_terms,
        preferred_node_terms=template.preferred_node_terms,
        tolerations=template.tolerations,
        pod_affinity=template.pod_affinity,
        pod_anti_affinity=template.pod_anti_affinity,
        preferred_pod_affinity=template.preferred_pod_affinity,
        preferred_pod_anti_affinity=template.preferred_pod_anti_affinity,
        topology=topology,
    )


def _single(key: GangKey, pod: Obj | None, ctx: AssemblyContext) -> Assembly:
    if pod is None or not is_pending(pod, ctx.scheduler_name):
        return Waiting(key, "pod is gone, bound, gated or not ours")
    group = _group(key.name, [pod], 1, TopologyConstraint(), {})
    levels = ctx.topology_levels(None, ())
    request = GangRequest(
        key.name, key.namespace, (group,), priority=_priority([pod], None, ctx), topology_levels=levels
    )
    return ReadyGang(key, request, MappingProxyType({key.name: pod}), MappingProxyType({}), 1)


def _pins(
    bound_by_group: Mapping[str, Sequence[Obj]],
    scopes: Sequence[tuple[TopologyConstraint, Sequence[str]]],
    ctx: AssemblyContext,
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Node selectors that keep new pods in the required domains already used by bound pods of the same scope."""
    pins: dict[str, dict[str, str]] = {name: {} for name in bound_by_group}
    problems: list[str] = []
    for topo, groups in scopes:
        key = topo.required_key
        if not key:
            continue
        values = set()
        for g in groups:
            for pod in bound_by_group.get(g, ()):
                labels = ctx.node_labels(str(pod["spec"]["nodeName"])) or {}
                if key in labels:
                    values.add(labels[key])
        if len(values) > 1:
            problems.append(f"bound pods already span {len(values)} {key} domains ({', '.join(sorted(values))})")
        elif values:
            value = values.pop()
            for g in groups:
                pins.setdefault(g, {})[key] = value
    return pins, problems


def assemble(key: GangKey, podgang: Obj | None, pods: Mapping[str, Obj], ctx: AssemblyContext) -> Assembly:
    """Assemble the gang `key` from its PodGang (None for a gang of one or a PodGang not seen yet) and its pods.

    `pods` holds the namespace's pods that are referenced by the PodGang or labelled with it, by name. A pod spec
    the scheduler cannot read (an invalid quantity) makes the gang malformed rather than crashing the cycle.
    """
    try:
        return _assemble(key, podgang, pods, ctx)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        return Malformed(key, (f"cannot read the gang's pods: {err}",))


def _assemble(key: GangKey, podgang: Obj | None, pods: Mapping[str, Obj], ctx: AssemblyContext) -> Assembly:
    if key.single:
        return _single(key, pods.get(key.name), ctx)
    if podgang is None:
        return Waiting(key, "PodGang not found")
    if not is_ours(podgang, pods, ctx.scheduler_name):
        return Waiting(key, f"PodGang is not for {_shown(ctx.scheduler_name)}")
    spec = podgang.get("spec") or {}
    raw_groups = spec.get("podgroups") or []
    if not raw_groups:
        return Malformed(key, (f"PodGang {key.name} has no podgroups",))
    reasons: list[str] = []
    membership: list[str] = []
    missing_keys = sorted(k for k in topology_keys(podgang) if k not in ctx.node_label_keys)
    reasons += [f"topology key {k} is carried by no node" for k in missing_keys]
    pending: dict[str, list[Obj]] = {}
    bound: dict[str, list[Obj]] = {}
    mins: dict[str, int] = {}
    topologies: dict[str, TopologyConstraint] = {}
    waiting: list[str] = []
    for raw in raw_groups:
        name = str(raw.get("name", ""))
        refs = raw.get("podReferences") or []
        minimum = int(raw.get("minReplicas") or 0)
        topologies[name] = _constraint(raw.get("topologyConstraint"))
        missing = [str(r.get("name")) for r in refs if str(r.get("name")) not in pods]
        if missing:
            shown = ", ".join(sorted(missing)[:5]) + (" …" if len(missing) > 5 else "")
            membership.append(f"PodGroup {name} references {len(missing)} pod(s) that do not exist: {shown}")
        if minimum > len(refs):
            membership.append(f"PodGroup {name} needs minReplicas={minimum} but references only {len(refs)} pod(s)")
        members = [pods[str(r.get("name"))] for r in refs if str(r.get("name")) in pods]
        bound[name] = [p for p in members if _is_bound(p)]
        pending[name] = [p for p in members if is_pending(p, ctx.scheduler_name)]
        mins[name] = max(0, minimum - len(bound[name]))
        if len(pending[name]) < mins[name]:
            waiting.append(f"{name}: {len(pending[name])} of {mins[name]} pods ready")
    if membership and _creating(podgang):
        return Waiting(key, "the operator is still creating the gang's pods: " + "; ".join(membership))
    reasons += membership
    if reasons:
        return Malformed(key, tuple(reasons))
    if waiting:
        return Waiting(key, "; ".join(waiting))
    if not any(pending.values()):
        return Waiting(key, "every pod is bound")
    gang_topo = _constraint(spec.get("topologyConstraint"))
    configs = tuple(
        GroupConfig(
            str(c.get("name", "")),
            tuple(str(n) for n in c.get("podGroupNames") or ()),
            _constraint(c.get("topologyConstraint")),
        )
        for c in spec.get("topologyConstraintGroupConfigs") or ()
    )
    names = [str(r.get("name", "")) for r in raw_groups]
    scopes = [(gang_topo, names)] + [(c.topology, list(c.group_names)) for c in configs]
    scopes += [(topologies[n], [n]) for n in names]
    pins, problems = _pins(bound, scopes, ctx)
    if problems:
        return Malformed(key, tuple(problems))
    live = [n for n in names if pending[n]]
    groups = tuple(_group(n, pending[n], mins[n], topologies[n], pins.get(n, {})) for n in live)
    live_set = set(live)
    configs = tuple(
        GroupConfig(c.name, tuple(n for n in c.group_names if n in live_set), c.topology)
        for c in configs
        if any(n in live_set for n in c.group_names)
    )
    all_pending = [p for n in live for p in pending[n]]
    request = GangRequest(
        name=key.name,
        namespace=key.namespace,
        groups=groups,
        priority=_priority(all_pending, spec.get("priorityClassName"), ctx),
        topology=gang_topo,
        group_configs=configs,
        topology_levels=ctx.topology_levels(podgang, topology_keys(podgang)),
    )
    by_name = {str(p["metadata"]["name"]): p for p in all_pending}
    bound_by_name = {str(p["metadata"]["name"]): p for n in names for p in bound[n]}
    return ReadyGang(key, request, MappingProxyType(by_name), MappingProxyType(bound_by_name), sum(mins.values()))
