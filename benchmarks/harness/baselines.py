"""Greedy baselines the CP-SAT placement is measured against, implemented here so they run in the same process.

All three honour the same hard constraints as `place` for the benchmark's gangs: per-node resources (every
resource, including the pod count), schedulable and untainted nodes only, each group's minimum placed
all-or-nothing, and required topology at gang, group-config and group scope (all pods of the scope in one domain
of the key). They do not implement node affinity, tolerations or inter-pod affinity; benchmark gangs use none.

The gang is a tree of scopes (gang → group configs → groups). A scope with a required key tries its candidate
domains (those passing the aggregate slot check) in the strategy's order; inside a domain each child is placed
in turn, and if any child fails the domain is rolled back and the next one is tried (KAI's domain-level
backtracking). Leaves place identical pods one at a time on the first node in the strategy's node order that
fits; for identical pods that equals filling nodes in that order, which is how it is computed.

* `first-fit`: domains and nodes in name order; preferred constraints ignored.
* `best-fit` (Kueue BestFit-like): the domain with the least free capacity (in pods of this scope) that fits;
  nodes tightest first (fewest free GPUs, then CPU); a preferred key is tried as if required first, then relaxed.
* `kai-greedy` (KAI-like): the fullest domain that fits (fewest free GPUs, then CPU); nodes ordered by the free
  capacity of their preferred-level domain (more first, to concentrate the gang), then tightest node first;
  preferred keys are tried first like best-fit. Extra pods above each group's minimum are placed best-effort
  in the group's chosen domain after every minimum is in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from benchmarks.harness.strategies import Decision
from grove_sched.model import CPU, GPU, GangRequest, TopologyConstraint
from grove_sched.placement import BoolArray, IntArray, Snapshot

FIRST_FIT = "first-fit"
BEST_FIT = "best-fit"
KAI = "kai-greedy"
KINDS: tuple[str, ...] = (FIRST_FIT, BEST_FIT, KAI)


@dataclass(frozen=True, slots=True)
class _Leaf:
    """Identical pods of one PodGroup (a group splits when its pods' requests differ)."""

    pods: tuple[str, ...]
    minimum: int
    req: IntArray


@dataclass(slots=True)
class _Scope:
    """A node of the gang's constraint tree; children are scopes or leaf indices."""

    required: str | None
    preferred: str | None
    children: list[_Scope | int] = field(default_factory=list)

    def leaves(self) -> list[int]:
        """Leaf indices anywhere below this scope."""
        out: list[int] = []
        for child in self.children:
            out.extend(child.leaves() if isinstance(child, _Scope) else [child])
        return out


def _leaves(snapshot: Snapshot, gang: GangRequest) -> tuple[list[_Leaf], dict[str, list[int]]]:
    """Split groups into identical-pod leaves; the group minimum goes to its leaves in order."""
    leaves: list[_Leaf] = []
    by_group: dict[str, list[int]] = {}
    for grp in gang.groups:
        split: dict[tuple[int, ...], list[str]] = {}
        for pod in grp.pods:
            vec = snapshot.vector(pod.requests if pod.requests is not None else grp.requests)
            split.setdefault(tuple(int(x) for x in vec), []).append(pod.name)
        left = grp.min_replicas
        by_group[grp.name] = []
        for vec_key, names in split.items():
            take = min(left, len(names))
            left -= take
            by_group[grp.name].append(len(leaves))
            leaves.append(_Leaf(tuple(names), take, np.asarray(vec_key, dtype=np.int64)))
    return leaves, by_group


def _tree(gang: GangRequest, by_group: dict[str, list[int]]) -> _Scope:
    """gang scope → group-config scopes → group scopes (or bare leaves when a group has no constraint)."""

    def group_node(name: str, topo: TopologyConstraint, into: _Scope) -> None:
        if topo.required_key or topo.preferred_key:
            into.children.append(_Scope(topo.required_key, topo.preferred_key, list(by_group[name])))
        else:
            into.children.extend(by_group[name])

    root = _Scope(gang.topology.required_key, gang.topology.preferred_key)
    topo_of = {grp.name: grp.topology for grp in gang.groups}
    in_config: set[str] = set()
    for cfg in gang.group_configs:
        scope = _Scope(cfg.topology.required_key, cfg.topology.preferred_key)
        for name in cfg.group_names:
            if name not in in_config:
                in_config.add(name)
                group_node(name, topo_of[name], scope)
        root.children.append(scope)
    for grp in gang.groups:
        if grp.name not in in_config:
            group_node(grp.name, grp.topology, root)
    return root


class _Attempt:
    """Mutable state of one gang attempt: free capacity, placed counts and the domain each leaf used."""

    def __init__(self, kind: str, snapshot: Snapshot, leaves: list[_Leaf]) -> None:
        self.kind = kind
        self.snapshot = snapshot
        self.leaves = leaves
        self.free: IntArray = snapshot.free.copy()
        self.placed: list[tuple[int, int, int]] = []  # (leaf, node, count)
        self.where: dict[int, BoolArray] = {}
        self.gpu = snapshot.resource_index(GPU)
        self.cpu = snapshot.resource_index(CPU)
        self.ok: BoolArray = ~snapshot.unschedulable & ~snapshot.taint_matrix.any(axis=1)

    def fits(self, leaf: int, mask: BoolArray) -> IntArray:
        """Pods of `leaf` each node can still take (0 outside `mask`)."""
        req = self.leaves[leaf].req
        used = np.flatnonzero(req > 0)
        free = np.maximum(self.free[:, used], 0)
        per_node = (free // req[used]).min(axis=1) if used.size else np.full(len(self.free), 1 << 30)
        result: IntArray = np.where(mask & self.ok, per_node, 0)
        return result

    def _column(self, index: int | None) -> IntArray:
        if index is None:
            return np.zeros(len(self.free), dtype=np.int64)
        column: IntArray = self.free[:, index]
        return column

    def node_order(self, nodes: IntArray, prefer: str | None) -> IntArray:
        """Nodes in the order this strategy tries them."""
        if self.kind == FIRST_FIT or nodes.size == 0:
            return nodes
        gpu, cpu = self._column(self.gpu)[nodes], self._column(self.cpu)[nodes]
        keys: list[IntArray] = [nodes, cpu, gpu]
        if self.kind == KAI and prefer is not None:
            dom = self.snapshot.domains(prefer)
            sub = np.maximum(dom, 0)
            capacity = np.bincount(sub, weights=self._column(self.gpu), minlength=int(sub.max(initial=0)) + 1)
            keys.append(-capacity[sub[nodes]].astype(np.int64))
        return nodes[np.lexsort(keys)]

    def place_leaf(self, leaf: int, mask: BoolArray, count: int, prefer: str | None, partial: bool = False) -> bool:
        """Place `count` pods of `leaf` on nodes in `mask` (fewer allowed only when `partial`)."""
        if count <= 0:
            self.where[leaf] = mask
            return True
        fits = self.fits(leaf, mask)
        nodes = self.node_order(np.flatnonzero(fits > 0), prefer)
        take = np.minimum(fits[nodes], np.maximum(count - (np.cumsum(fits[nodes]) - fits[nodes]), 0))
        if int(take.sum()) < count and not partial:
            return False
        req = self.leaves[leaf].req
        for node, k in zip(nodes[take > 0].tolist(), take[take > 0].tolist(), strict=True):
            self.free[node] -= req * k
            self.placed.append((leaf, node, k))
        self.where[leaf] = mask
        return True

    def domains(self, scope: _Scope, key: str, mask: BoolArray) -> list[BoolArray]:
        """Domains of `key` inside `mask` that pass the aggregate check, in this strategy's order."""
        dom = self.snapshot.domains(key)
        labelled = mask & (dom >= 0)
        names = self.snapshot.domain_names(key)
        count = len(names)
        if count == 0 or not labelled.any():
            return []
        good = np.ones(count, dtype=np.bool_)
        slots = np.zeros(count, dtype=np.int64)
        for leaf in scope.leaves():
            per = np.bincount(dom[labelled], weights=self.fits(leaf, labelled)[labelled], minlength=count)
            good &= per >= self.leaves[leaf].minimum
            slots += per.astype(np.int64)
        ids = np.flatnonzero(good)
        if self.kind == FIRST_FIT:
            order = sorted(ids.tolist(), key=lambda d: names[d])
        elif self.kind == BEST_FIT:
            order = sorted(ids.tolist(), key=lambda d: (int(slots[d]), names[d]))
        else:
            gpus = np.bincount(dom[labelled], weights=self._column(self.gpu)[labelled], minlength=count)
            cpus = np.bincount(dom[labelled], weights=self._column(self.cpu)[labelled], minlength=count)
            order = sorted(ids.tolist(), key=lambda d: (float(gpus[d]), float(cpus[d]), names[d]))
        return [labelled & (dom == d) for d in order]

    def place_scope(self, scope: _Scope, mask: BoolArray, prefer: str | None) -> bool:
        """Place the minimum of every leaf under `scope` inside `mask`, trying domains with rollback."""
        prefer = scope.preferred if self.kind == KAI and scope.preferred else prefer
        if scope.required:
            candidates = self.domains(scope, scope.required, mask)
        elif scope.preferred and self.kind != FIRST_FIT:
            candidates = [*self.domains(scope, scope.preferred, mask), mask]
        else:
            candidates = [mask]
        for domain in candidates:
            free, placed, where = self.free.copy(), len(self.placed), dict(self.where)
            if all(self._child(child, domain, prefer) for child in scope.children):
                return True
            self.free, self.where = free, where
            del self.placed[placed:]
        return False

    def _child(self, child: _Scope | int, mask: BoolArray, prefer: str | None) -> bool:
        if isinstance(child, _Scope):
            return self.place_scope(child, mask, prefer)
        return self.place_leaf(child, mask, self.leaves[child].minimum, prefer)

    def assignments(self) -> dict[str, str]:
        """Hand pods (in order) to the placed (node, count) slots."""
        names = self.snapshot.node_names
        cursor = [0] * len(self.leaves)
        out: dict[str, str] = {}
        for leaf, node, k in self.placed:
            pods = self.leaves[leaf].pods
            for pod in pods[cursor[leaf] : cursor[leaf] + k]:
                out[pod] = names[node]
            cursor[leaf] += k
        return out


@dataclass(frozen=True, slots=True)
class Greedy:
    """One of the greedy baselines (`kind` in KINDS)."""

    kind: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown baseline {self.kind!r}; choose from {', '.join(KINDS)}")

    @property
    def name(self) -> str:
        """The baseline's table name."""
        return self.kind

    def __call__(self, snapshot: Snapshot, gang: GangRequest) -> Decision | None:
        """Place the gang's minimum (plus best-effort extras) or return None."""
        leaves, by_group = _leaves(snapshot, gang)
        attempt = _Attempt(self.kind, snapshot, leaves)
        everywhere = np.ones(snapshot.num_nodes, dtype=np.bool_)
        if not attempt.place_scope(_tree(gang, by_group), everywhere, None):
            return None
        for index, leaf in enumerate(leaves):
            extra = len(leaf.pods) - leaf.minimum
            if extra > 0:
                attempt.place_leaf(index, attempt.where.get(index, everywhere), extra, None, partial=True)
        return Decision(MappingProxyType(attempt.assignments()), None, self.kind)


def baselines(kinds: Sequence[str] = KINDS) -> list[Greedy]:
    """The requested greedy baselines, in order."""
    return [Greedy(kind) for kind in kinds]
