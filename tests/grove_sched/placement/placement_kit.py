"""Test kit for placement: small builders and an independent checker and brute force.

The checker and the brute force are written from the specification, in plain Python over pod counts, without
using the code under test, so that they can catch mistakes in it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence

from grove_sched.model import (
    BLOCK_KEY,
    CPU,
    DEFAULT_LEVELS,
    GPU,
    HOSTNAME_KEY,
    MEMORY,
    PODS,
    RACK_KEY,
    BoundPod,
    GangRequest,
    NodeInfo,
    Placement,
    PodGroup,
    PodRef,
    Taint,
    TopologyConstraint,
)

Counts = dict[tuple[str, str], int]


def node(
    name: str,
    rack: str | None = "r0",
    gpu: int = 8,
    cpu: int = 64_000,
    block: str | None = None,
    taints: tuple[Taint, ...] = (),
    unschedulable: bool = False,
    labels: Mapping[str, str] | None = None,
) -> NodeInfo:
    """A GPU node with hostname/rack/block labels."""
    lab = {HOSTNAME_KEY: name, **(labels or {})}
    if rack is not None:
        lab[RACK_KEY] = rack
    if block is not None:
        lab[BLOCK_KEY] = block
    alloc = {CPU: cpu, MEMORY: 512 * 2**30, PODS: 110, GPU: gpu}
    return NodeInfo(name, lab, alloc, taints, unschedulable)


def bound(name: str, node_name: str, gpu: int = 0, cpu: int = 0, labels: Mapping[str, str] | None = None) -> BoundPod:
    """A background pod using resources on a node."""
    return BoundPod(name, "default", node_name, labels or {"app": "bg"}, {GPU: gpu, CPU: cpu})


def group(
    name: str, count: int, minimum: int | None = None, gpu: int = 1, cpu: int = 1000, **kwargs: object
) -> PodGroup:
    """A homogeneous group of `count` pods named `<name>-<i>`."""
    pods = tuple(PodRef(f"{name}-{i}", f"uid-{name}-{i}") for i in range(count))
    kwargs.setdefault("labels", {"app": name})
    return PodGroup(name, pods, count if minimum is None else minimum, {GPU: gpu, CPU: cpu}, **kwargs)  # type: ignore[arg-type]


def gang(*groups: PodGroup, required: str | None = None, preferred: str | None = None, **kwargs: object) -> GangRequest:
    """A gang in namespace `default`."""
    return GangRequest("gang", "default", groups, topology=TopologyConstraint(required, preferred), **kwargs)  # type: ignore[arg-type]


def requests_of(g: PodGroup, pod: PodRef) -> Mapping[str, int]:
    """Requests of one pod (override or template)."""
    return pod.requests if pod.requests is not None else g.requests


def counts_of(g: GangRequest, placement: Placement) -> Counts:
    """Pods per (group name, node name) of a placement."""
    out: Counts = {}
    for grp in g.groups:
        for pod in grp.pods:
            node_name = placement.assignments.get(pod.name)
            if node_name is not None:
                out[(grp.name, node_name)] = out.get((grp.name, node_name), 0) + 1
    return out


def _match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def violations(nodes: Sequence[NodeInfo], pods: Sequence[BoundPod], g: GangRequest, counts: Counts) -> list[str]:
    """Every broken hard rule of a placement given as counts (empty list = valid)."""
    out: list[str] = []
    by_name = {n.name: n for n in nodes}
    used: dict[str, dict[str, int]] = {n.name: {} for n in nodes}
    for p in pods:
        if p.node in used:
            for r, v in {**p.requests, PODS: 1}.items():
                used[p.node][r] = used[p.node].get(r, 0) + v
    groups = {grp.name: grp for grp in g.groups}
    for (gname, nname), c in counts.items():
        grp = groups[gname]
        n = by_name[nname]
        for r, v in {**grp.requests, PODS: 1}.items():
            used[nname][r] = used[nname].get(r, 0) + v * c
        if n.unschedulable:
            out.append(f"{nname} is cordoned")
        for t in n.taints:
            if t.effect in ("NoSchedule", "NoExecute") and not any(
                (tol.operator == "Exists" and (not tol.key or tol.key == t.key))
                or (tol.key == t.key and tol.value == t.value)
                for tol in grp.tolerations
            ):
                out.append(f"{gname} on tainted {nname}")
        if not _match(n.labels, grp.node_selector):
            out.append(f"{gname} on {nname} breaks nodeSelector")
        for term in grp.pod_anti_affinity:
            key = term.topology_key
            dom = n.labels.get(key)
            near = [p for p in pods if by_name[p.node].labels.get(key) == dom and dom is not None]
            if any(_match(p.labels, term.selector.match_labels) for p in near):
                out.append(f"{gname} on {nname} breaks anti-affinity to bound pods")
            for (h, m), k in counts.items():
                if (
                    dom is not None
                    and by_name[m].labels.get(key) == dom
                    and _match(groups[h].labels, term.selector.match_labels)
                ) and ((h, m) != (gname, nname) or c > 1 or k > 1):
                    out.append(f"{gname} on {nname} shares {key}={dom} with {h}")
    for nname, res in used.items():
        for r, v in res.items():
            if v > by_name[nname].allocatable.get(r, 0):
                out.append(f"{nname} over-committed on {r}")
    for grp in g.groups:
        placed = sum(c for (h, _), c in counts.items() if h == grp.name)
        if counts and placed < grp.min_replicas:
            out.append(f"{grp.name} has {placed} < min {grp.min_replicas}")
    scopes: list[tuple[tuple[str, ...], str | None]] = [(tuple(groups), g.topology.required_key)]
    scopes += [(cfg.group_names, cfg.topology.required_key) for cfg in g.group_configs]
    scopes += [((grp.name,), grp.topology.required_key) for grp in g.groups]
    for names, scope_key in scopes:
        if scope_key:
            values = {by_name[n].labels.get(scope_key) for (h, n), c in counts.items() if h in names and c}
            if len(values) > 1 or None in values:
                out.append(f"{names} spread over {scope_key}: {values}")
    return out


def hierarchy(nodes: Sequence[NodeInfo], g: GangRequest) -> list[str]:
    """The documented levels: the default hierarchy's keys that some node carries (broadest first), then every
    other key a topology constraint of the gang names."""
    declared = [k for k in g.topology_levels or DEFAULT_LEVELS if any(k in n.labels for n in nodes)]
    scopes = [g.topology, *(cfg.topology for cfg in g.group_configs), *(grp.topology for grp in g.groups)]
    extra = {k for t in scopes for k in (t.required_key, t.preferred_key) if k and k not in declared}
    return declared + sorted(extra)


def _chain(levels: list[str], nodes: Sequence[NodeInfo], g: GangRequest, key: str) -> list[str]:
    """A key and every broader declared level (broadest first); a key outside the hierarchy stands alone."""
    declared = [k for k in g.topology_levels or DEFAULT_LEVELS if any(k in n.labels for n in nodes)]
    return declared[: declared.index(key) + 1] if key in declared else [key]


def _domain(n: NodeInfo, chain: list[str]) -> tuple[str | None, ...] | None:
    """A node's domain at the last level of `chain`: its value there and at every broader level (None: unlabelled)."""
    if chain[-1] not in n.labels:
        return None
    return tuple(n.labels.get(k) for k in chain)


def objective(nodes: Sequence[NodeInfo], pods: Sequence[BoundPod], g: GangRequest, counts: Counts) -> tuple[int, ...]:
    """The documented tiers as a tuple (lexicographic, lower is better), computed from scratch."""
    by_name = {n.name: n for n in nodes}
    busy = {p.node for p in pods}
    free_gpu = {
        n.name: n.allocatable.get(GPU, 0) - sum(p.requests.get(GPU, 0) for p in pods if p.node == n.name) for n in nodes
    }
    groups = {grp.name: grp for grp in g.groups}
    levels = hierarchy(nodes, g)
    declared = [k for k in levels if k in (g.topology_levels or DEFAULT_LEVELS)]
    missing = sum(len(grp.pods) for grp in g.groups) - sum(counts.values())
    prefs: list[tuple[tuple[str, ...], str | None]] = [(tuple(groups), g.topology.preferred_key)]
    prefs += [(cfg.group_names, cfg.topology.preferred_key) for cfg in g.group_configs]
    prefs += [((grp.name,), grp.topology.preferred_key) for grp in g.groups]
    violations_ = [0] * len(levels)
    for names, key in prefs:
        if key:
            chain = _chain(levels, nodes, g, key)
            for i in range(len(chain)):
                doms = {
                    _domain(by_name[n], chain[: i + 1]) or f"<{n}>" for (h, n), c in counts.items() if h in names and c
                }
                violations_[levels.index(chain[i])] += max(0, len(doms) - 1)
    touched = {n for (_, n), c in counts.items() if c}
    opened = []
    grouping = [i for i, key in enumerate(declared) if key != HOSTNAME_KEY][-1:]  # the narrowest above the hosts
    for i in grouping:
        chain = declared[: i + 1]
        empty = {_domain(n, chain) for n in nodes} - {_domain(by_name[b], chain) for b in busy} - {None}
        opened.append(len({_domain(by_name[n], chain) for n in touched} & empty))
    empty_nodes = len(touched - busy)
    stranded = sum(free_gpu[n] for n in touched) - sum(
        groups[h].requests.get(GPU, 0) * c for (h, _), c in counts.items()
    )
    fragmented = _fragmented(nodes, pods, g, counts, touched)
    required: list[tuple[tuple[str, ...], str | None]] = [(tuple(groups), g.topology.required_key)]
    required += [(cfg.group_names, cfg.topology.required_key) for cfg in g.group_configs]
    required += [((grp.name,), grp.topology.required_key) for grp in g.groups]
    chains = [(names, _chain(levels, nodes, g, key)) for names, key in required if key]
    room = 0  # at each scope's own level only: the broader levels are not a tier (see _objective's tier 4)
    for names, chain in chains:
        doms = {_domain(by_name[n], chain) for (h, n), c in counts.items() if h in names and c} - {None}
        room += sum(max(free_gpu[n.name], 0) for n in nodes if _domain(n, chain) in doms)
    return (missing, *violations_, *opened, room, fragmented, empty_nodes, stranded, 0)


def _profile_floor(per_gpu: list[float]) -> int:
    """The documented profile: the 10th percentile of the values, read as its quarter-octave bin's lower edge."""
    ordered = sorted(per_gpu)
    value = ordered[math.ceil(0.1 * len(ordered)) - 1]
    b = int(math.log2(max(value, 1.0)) * 4)
    return int(2.0 ** (b / 4)) if b > 0 else 0


def _fragmented(
    nodes: Sequence[NodeInfo], pods: Sequence[BoundPod], g: GangRequest, counts: Counts, touched: set[str]
) -> int:
    """Tier 5: free GPUs left on touched nodes that a profile pod (CPU and memory per GPU) could not use."""
    gpu_pods = [p for p in pods if p.requests.get(GPU, 0) > 0]
    if not gpu_pods:
        return 0
    need = {r: _profile_floor([p.requests.get(r, 0) / p.requests[GPU] for p in gpu_pods]) for r in (CPU, MEMORY)}
    groups = {grp.name: grp for grp in g.groups}
    total = 0
    for n in nodes:
        if n.name not in touched:
            continue
        left = {r: n.allocatable.get(r, 0) for r in (GPU, CPU, MEMORY)}
        for p in pods:
            if p.node == n.name:
                for r in left:
                    left[r] -= p.requests.get(r, 0)
        for (h, name), c in counts.items():
            if name == n.name:
                for r in left:
                    left[r] -= groups[h].requests.get(r, 0) * c
        usable = max(left[GPU], 0)
        for r in (CPU, MEMORY):
            if need[r] > 0:
                usable = min(usable, max(left[r], 0) // need[r])
        total += max(left[GPU], 0) - usable
    return total


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    for cut in itertools.combinations(range(total + parts - 1), parts - 1):
        edges = (-1, *cut, total + parts - 1)
        yield tuple(edges[i + 1] - edges[i] - 1 for i in range(parts))


def brute_force(nodes: Sequence[NodeInfo], pods: Sequence[BoundPod], g: GangRequest) -> tuple[int, ...] | None:
    """The best objective over every valid count assignment, or None if none places the gang."""
    names = [n.name for n in nodes]
    per_group: list[list[tuple[int, ...]]] = []
    for grp in g.groups:
        options = [c for k in range(grp.min_replicas, len(grp.pods) + 1) for c in _compositions(k, len(names))]
        per_group.append(options)
    best: tuple[int, ...] | None = None
    for combo in itertools.product(*per_group):
        counts = {
            (grp.name, names[i]): c for grp, row in zip(g.groups, combo, strict=True) for i, c in enumerate(row) if c
        }
        if not counts:
            continue  # a placement binds at least one pod
        if violations(nodes, pods, g, counts):
            continue
        value = objective(nodes, pods, g, counts)
        if best is None or value < best:
            best = value
    return best
