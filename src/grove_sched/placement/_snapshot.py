"""The immutable, numpy-backed cluster view that `place` reads.

Placement needs per-node integer vectors and label columns it can filter with array operations, not Python
objects per node. A snapshot is built once (`build`) and then derived per cycle (`with_assumed` adds pods,
`without` removes them); it is never mutated: arrays are write-protected so a placement cannot corrupt the view
another caller holds. Nodes are sorted by name so that input order never changes an answer.

Pods are rows of append-only columns shared between a snapshot and those derived from it (`_columns`), so a
derivation costs the pods it adds plus one copy of the per-node arrays, whatever the number of pods bound. A
removed pod keeps its row, marked departed in `pod_alive` (a tombstone): it no longer consumes capacity nor takes
part in inter-pod rules. The scheduler cache rebuilds from scratch when departed rows pile up.

Amounts are int64 and never wrap: requests count as at least 0, allocatable and per-node sums are bounded by
`SATURATED` (a node's usage that reaches it means "full", and stays full: `without` gives no capacity back
there). The scheduler's quantities are far smaller (`grove_sched.quantity.MAX_QUANTITY`), so this only guards
against objects no API server would hold; below the bound every sum is exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from grove_sched.model import BASE_RESOURCES, GPU, PODS, BoundPod, NodeInfo, PodAffinityTerm, Taint
from grove_sched.placement._columns import ArrayLog, BoolArray, CodeArray, IntArray, LabelColumns, ListLog
from grove_sched.placement._fragment import Profile, profile, shape_counts

_T = TypeVar("_T", bound=np.generic)

__all__ = ["NAMESPACE", "SATURATED", "BoolArray", "CodeArray", "IntArray", "LabelColumns", "Snapshot"]

SATURATED = 2**61
"""The magnitude at which free and used amounts stop counting (the difference of two such columns fits int64)."""
MAX_TOTALS = 16
"""Per-domain totals a snapshot keeps (and hands on); the hierarchy's grouping and scope levels need a few."""
NAMESPACE = "namespace"
"""The one key of `Snapshot.pod_namespaces`."""


@dataclass(frozen=True, slots=True)
class _PodLogs:
    """The shared storage behind a snapshot's pod rows."""

    pods: ListLog[BoundPod]
    node: ArrayLog
    alive: ArrayLog
    anti: ArrayLog
    size: int

    @staticmethod
    def of(pods: Sequence[BoundPod], node: IntArray) -> _PodLogs:
        anti = np.asarray([i for i, pod in enumerate(pods) if pod.anti_affinity], dtype=np.int64)
        return _PodLogs(
            ListLog(list(pods)), ArrayLog(node), ArrayLog(np.ones(len(pods), dtype=np.bool_)), ArrayLog(anti), len(pods)
        )

    def extended(self, pods: Sequence[BoundPod], node: IntArray, anti_rows: int) -> _PodLogs:
        anti = np.asarray([self.size + i for i, pod in enumerate(pods) if pod.anti_affinity], dtype=np.int64)
        return _PodLogs(
            self.pods.extend(self.size, pods),
            self.node.extend(self.size, node),
            self.alive.extend(self.size, np.ones(len(pods), dtype=np.bool_)),
            self.anti.extend(anti_rows, anti),
            self.size + len(pods),
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Nodes (sorted by name) with free/allocatable matrices, label columns, taints and bound pods.

    Pod fields are per row: `pods`, `pod_node`, `pod_labels` and `pod_namespaces` include departed rows, which
    `pod_alive` marks False; `live_pods` is the bound pods themselves.
    """

    node_names: tuple[str, ...]
    node_index: Mapping[str, int]
    resources: tuple[str, ...]
    allocatable: IntArray
    free: IntArray
    node_labels: LabelColumns
    taints: tuple[Taint, ...]
    taint_matrix: BoolArray
    unschedulable: BoolArray
    pod_count: IntArray
    pod_labels: LabelColumns
    pod_namespaces: LabelColumns
    gpu_pod_shapes: IntArray
    """Histogram of bound GPU pods' CPU and memory per GPU (`_fragment.shape_counts`)."""
    _logs: _PodLogs
    _alive: ArrayLog
    """Departed rows fork this column (the others stay shared)."""
    _anti_rows: int
    _totals: dict[tuple[int, str], tuple[CodeArray, IntArray]] = field(default_factory=dict, compare=False)
    """`domain_totals` asked of this snapshot; derived snapshots update them by the nodes that changed."""

    @property
    def pods(self) -> Sequence[BoundPod]:
        """Every pod row, departed ones included."""
        return self._logs.pods.view(self._logs.size)

    @property
    def pod_node(self) -> IntArray:
        """Node index of every pod row."""
        result: IntArray = self._logs.node.view(self._logs.size)
        return result

    @property
    def pod_alive(self) -> BoolArray:
        """Whether each pod row is still bound (False: it departed, see `without`)."""
        result: BoolArray = self._alive.view(self._logs.size)
        return result

    @property
    def anti_affinity_pods(self) -> IntArray:
        """Rows of bound pods that carry required anti-affinity terms."""
        rows: IntArray = self._logs.anti.view(self._anti_rows)
        alive = self.pod_alive
        result: IntArray = rows[alive[rows]] if rows.size else rows
        return result

    @property
    def live_pods(self) -> tuple[BoundPod, ...]:
        """The bound pods, in row order (costs a pass over every row: for tests and reports)."""
        return tuple(pod for pod, alive in zip(self.pods, self.pod_alive, strict=True) if alive)

    @property
    def num_pods(self) -> int:
        """Bound pods (departed rows excluded)."""
        return int(self.pod_alive.sum())

    def domain_totals(self, domains: CodeArray, what: str) -> IntArray:
        """Per domain id of `domains` (node -> id, -1 = none): "room" = free GPUs (negatives count 0) or "busy" =
        nodes with a pod bound. Snapshots derived from this one update the totals asked of it by the nodes that
        changed instead of summing every node again (per-domain aggregates a cycle reads before per-node work)."""
        key = (id(domains), what)
        found = self._totals.get(key)
        if found is not None and found[0] is domains:
            return found[1]
        labelled = domains >= 0
        count = max(int(domains.max(initial=-1)) + 1, 1)
        totals = np.bincount(domains[labelled], weights=self._node_values(what)[labelled], minlength=count)
        result = _frozen(totals.astype(np.int64))
        if len(self._totals) < MAX_TOTALS:
            self._totals[key] = (domains, result)
        return result

    def _node_values(self, what: str) -> IntArray:
        if what == "busy":
            return (self.pod_count > 0).astype(np.int64)
        gpu = self.resource_index(GPU)
        if gpu is None:
            return np.zeros(self.num_nodes, dtype=np.int64)
        result: IntArray = np.maximum(self.free[:, gpu], 0)
        return result

    def _derived_totals(self, child: Snapshot, nodes: IntArray) -> None:
        """Carry this snapshot's totals over to `child`, which differs from it on `nodes` only."""
        nodes = np.unique(nodes)
        for key, (domains, totals) in list(self._totals.items()):
            what = key[1]
            delta = child._node_values(what)[nodes] - self._node_values(what)[nodes]
            ids = domains[nodes]
            keep = (ids >= 0) & (delta != 0)
            updated = totals.copy()
            np.add.at(updated, ids[keep], delta[keep])
            child._totals[key] = (domains, _frozen(updated))

    def namespace_mask(self, namespaces: Iterable[str]) -> BoolArray:
        """Pod rows in any of `namespaces`."""
        column = self.pod_namespaces.column(NAMESPACE)
        result: BoolArray = np.isin(column, np.asarray(self.pod_namespaces.codes_of(NAMESPACE, set(namespaces))))
        return result

    @property
    def gpu_pod_profile(self) -> Profile | None:
        """What a typical bound GPU pod asks per GPU (None when no GPU pod is bound)."""
        return profile(self.gpu_pod_shapes)

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return len(self.node_names)

    @property
    def empty(self) -> BoolArray:
        """Nodes with nothing bound (opening one breaks up whole-node capacity)."""
        result: BoolArray = self.pod_count == 0
        return result

    def resource_index(self, name: str) -> int | None:
        """Column of a resource in the vectors, or None when no node or pod mentions it."""
        try:
            return self.resources.index(name)
        except ValueError:
            return None

    def domains(self, key: str) -> CodeArray:
        """Node → domain id for a topology label key (-1 where the node lacks the label); the same array object for
        as long as the nodes do not change (`domain_totals` keys on it)."""
        memo = self.node_labels.memo
        found: CodeArray | None = memo.get(("domains", key))
        if found is None:
            found = memo[("domains", key)] = self.node_labels.column(key)
        return found

    def domain_names(self, key: str) -> tuple[str, ...]:
        """Domain id → label value for `key`."""
        return tuple(self.node_labels.vocab.get(key, ()))

    def vector(self, requests: Mapping[str, int], count_pod: bool = True) -> IntArray:
        """A request map as a vector in this snapshot's resource order (`pods` counts 1)."""
        vec = np.zeros(len(self.resources), dtype=np.int64)
        for name, amount in requests.items():
            idx = self.resource_index(name)
            if idx is not None:
                vec[idx] = min(amount, SATURATED)  # more than any node: fits nowhere
            elif amount > 0:
                raise KeyError(name)
        if count_pod:
            vec[self.resources.index(PODS)] = 1
        return vec

    @staticmethod
    def build(nodes: Sequence[NodeInfo], pods: Sequence[BoundPod]) -> Snapshot:
        """Build a snapshot; pods on unknown nodes are ignored (they consume nothing we can place on)."""
        ordered = sorted(nodes, key=lambda node: node.name)
        names = tuple(node.name for node in ordered)
        index = {name: i for i, name in enumerate(names)}
        if len(index) != len(names):
            raise ValueError("duplicate node names in snapshot")
        extra: set[str] = set()
        for node in ordered:
            extra.update(node.allocatable)
        for pod in pods:
            extra.update(pod.requests)
        resources = BASE_RESOURCES + tuple(sorted(extra - set(BASE_RESOURCES)))
        res_index = {name: i for i, name in enumerate(resources)}
        alloc = np.zeros((len(names), len(resources)), dtype=np.int64)
        for row, node in enumerate(ordered):
            for name, amount in node.allocatable.items():
                try:
                    alloc[row, res_index[name]] = amount
                except OverflowError:
                    alloc[row, res_index[name]] = SATURATED if amount > 0 else -SATURATED
        alloc = np.clip(alloc, -SATURATED, SATURATED)
        taints = tuple(sorted({t for node in ordered for t in node.taints}, key=lambda t: (t.key, t.value, t.effect)))
        taint_index = {t: i for i, t in enumerate(taints)}
        taint_matrix = np.zeros((len(names), len(taints)), dtype=np.bool_)
        for row, node in enumerate(ordered):
            for t in node.taints:
                taint_matrix[row, taint_index[t]] = True
        unschedulable = np.fromiter((node.unschedulable for node in ordered), dtype=np.bool_, count=len(names))
        kept = [pod for pod in pods if pod.node in index]
        used, pod_node = _pod_usage(kept, index, res_index, len(names), len(resources))
        logs = _PodLogs.of(kept, pod_node)
        return Snapshot(
            node_names=names,
            node_index=index,
            resources=resources,
            allocatable=_frozen(alloc),
            free=_frozen(alloc - used),
            node_labels=LabelColumns.encode([node.labels for node in ordered]),
            taints=taints,
            taint_matrix=_frozen(taint_matrix),
            unschedulable=_frozen(unschedulable),
            pod_count=_frozen(np.bincount(pod_node, minlength=len(names)).astype(np.int64)),
            pod_labels=LabelColumns.encode([pod.labels for pod in kept]),
            pod_namespaces=LabelColumns.encode([{NAMESPACE: pod.namespace} for pod in kept]),
            gpu_pod_shapes=_frozen(shape_counts([pod.requests for pod in kept])),
            _logs=logs,
            _alive=logs.alive,
            _anti_rows=logs.anti.size,
        )

    def with_assumed(self, pods: Sequence[BoundPod]) -> Snapshot:
        """A new snapshot with `pods` additionally bound; costs these pods and one copy of the per-node arrays."""
        res_index = {name: i for i, name in enumerate(self.resources)}
        unknown = {name for pod in pods for name, amount in pod.requests.items() if amount and name not in res_index}
        if unknown:
            raise KeyError(f"resources unknown to the snapshot: {sorted(unknown)}")
        kept = [pod for pod in pods if pod.node in self.node_index]
        if not kept:
            return self
        rows, columns, amounts, pod_node = _sparse_usage(kept, self.node_index, res_index)
        free = self.free.copy()
        free[rows, columns] = np.maximum(free[rows, columns] - amounts, -SATURATED)  # one cell per (node, resource)
        pod_count = self.pod_count.copy()
        np.add.at(pod_count, pod_node, 1)
        logs = self._logs
        if self._alive is not logs.alive:  # rows departed here: the alive column is this snapshot's own
            logs = _PodLogs(logs.pods, logs.node, self._alive, logs.anti, logs.size)
        grown = logs.extended(kept, pod_node, self._anti_rows)
        child = Snapshot(
            node_names=self.node_names,
            node_index=self.node_index,
            resources=self.resources,
            allocatable=self.allocatable,
            free=_frozen(free),
            node_labels=self.node_labels,
            taints=self.taints,
            taint_matrix=self.taint_matrix,
            unschedulable=self.unschedulable,
            pod_count=_frozen(pod_count),
            pod_labels=self.pod_labels.extended([pod.labels for pod in kept]),
            pod_namespaces=self.pod_namespaces.extended([{NAMESPACE: pod.namespace} for pod in kept]),
            gpu_pod_shapes=_frozen(self.gpu_pod_shapes + shape_counts([pod.requests for pod in kept])),
            _logs=grown,
            _alive=grown.alive,
            _anti_rows=grown.anti.size,
        )
        self._derived_totals(child, pod_node)
        return child

    def without(self, pods: Iterable[str]) -> Snapshot:
        """A new snapshot with the named bound pods gone (they departed); node arrays are reused.

        Each entry is `namespace/name` (that pod only) or a bare `name` (pods of that name in every namespace).
        Unknown entries are ignored, so removing an already-removed pod is harmless. This scans every row; the
        scheduler cache, which knows the rows, calls `without_rows`.
        """
        wanted = set(pods)
        if not wanted:
            return self
        rows = [
            i
            for i, (pod, alive) in enumerate(zip(self.pods, self.pod_alive, strict=True))
            if alive and (pod.name in wanted or f"{pod.namespace}/{pod.name}" in wanted)
        ]
        return self.without_rows(rows)

    def without_rows(self, rows: Iterable[int]) -> Snapshot:
        """A new snapshot whose pod rows `rows` departed (rows already departed are ignored)."""
        alive = self.pod_alive
        gone_rows = np.asarray(sorted({int(r) for r in rows}), dtype=np.int64)
        gone_rows = gone_rows[(gone_rows >= 0) & (gone_rows < alive.size)]
        gone_rows = gone_rows[alive[gone_rows]]
        if not gone_rows.size:
            return self
        res_index = {name: i for i, name in enumerate(self.resources)}
        gone = [self.pods[int(r)] for r in gone_rows]
        rows_, columns, amounts, gone_node = _sparse_usage(gone, self.node_index, res_index)
        free = self.free.copy()
        before = free[rows_, columns]
        # a saturated amount stays saturated: freeing capacity never brings a full node back
        free[rows_, columns] = np.where(before <= -SATURATED, before, np.minimum(before + amounts, SATURATED))
        still = alive.copy()
        still[gone_rows] = False
        pod_count = self.pod_count.copy()
        np.subtract.at(pod_count, gone_node, 1)
        child = Snapshot(
            node_names=self.node_names,
            node_index=self.node_index,
            resources=self.resources,
            allocatable=self.allocatable,
            free=_frozen(free),
            node_labels=self.node_labels,
            taints=self.taints,
            taint_matrix=self.taint_matrix,
            unschedulable=self.unschedulable,
            pod_count=_frozen(pod_count),
            pod_labels=self.pod_labels,
            pod_namespaces=self.pod_namespaces,
            gpu_pod_shapes=_frozen(self.gpu_pod_shapes + shape_counts([pod.requests for pod in gone], sign=-1)),
            _logs=self._logs,
            _alive=ArrayLog(still),
            _anti_rows=self._anti_rows,
        )
        self._derived_totals(child, gone_node)
        return child

    def anti_affinity_terms(self) -> Iterable[tuple[int, PodAffinityTerm]]:
        """(node, term) for every required anti-affinity term of a bound pod (they repel incoming pods)."""
        pods, nodes = self.pods, self.pod_node
        for i in self.anti_affinity_pods:
            for term in pods[int(i)].anti_affinity:
                yield int(nodes[i]), term


def _sparse_usage(
    pods: Sequence[BoundPod], index: Mapping[str, int], res_index: Mapping[str, int]
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """(node rows, resource columns, amounts) of the pods' summed requests per node and resource (a `pods` slot
    each; sums are exact, then saturated), and each pod's node row: what applying a few pods to the per-node
    arrays needs."""
    totals: dict[tuple[int, int], int] = {}
    pods_column = res_index[PODS]
    pod_node = []
    for pod in pods:
        node = index[pod.node]
        pod_node.append(node)
        totals[(node, pods_column)] = totals.get((node, pods_column), 0) + 1
        for name, amount in pod.requests.items():
            if name != PODS and amount > 0:
                cell = (node, res_index[name])
                totals[cell] = totals.get(cell, 0) + amount
    cells = list(totals)
    return (
        np.asarray([r for r, _ in cells], dtype=np.int64),
        np.asarray([c for _, c in cells], dtype=np.int64),
        np.asarray([min(totals[cell], SATURATED) for cell in cells], dtype=np.int64),
        np.asarray(pod_node, dtype=np.int64),
    )


def _pod_usage(
    pods: Sequence[BoundPod], index: Mapping[str, int], res_index: Mapping[str, int], n_nodes: int, n_res: int
) -> tuple[IntArray, IntArray]:
    """Sum pod requests per node (every pod also uses one `pods` slot); one vectorised pass per resource."""
    pod_node = np.fromiter((index[pod.node] for pod in pods), dtype=np.int64, count=len(pods))
    used = np.zeros((n_nodes, n_res), dtype=np.int64)
    names: dict[str, None] = {}
    for pod in pods:
        names.update(dict.fromkeys(pod.requests))
    for name in names:
        if name == PODS:
            continue
        amounts = np.maximum(_amounts(pods, name), 0)
        if amounts.size and int(amounts.max()) > SATURATED // amounts.size:  # the sum could leave int64
            column = np.bincount(pod_node, weights=amounts.astype(np.float64), minlength=n_nodes)
            column = np.minimum(column, SATURATED).astype(np.int64)
        else:
            column = np.zeros(n_nodes, dtype=np.int64)
            np.add.at(column, pod_node, amounts)  # exact int64 sums (float weights could round byte counts)
        used[:, res_index[name]] = column
    used[:, res_index[PODS]] += np.bincount(pod_node, minlength=n_nodes)
    return used, pod_node


def _amounts(pods: Sequence[BoundPod], name: str) -> IntArray:
    """One resource's request per pod; an amount beyond int64 reads as `SATURATED`."""
    try:
        return np.fromiter((pod.requests.get(name, 0) for pod in pods), dtype=np.int64, count=len(pods))
    except OverflowError:
        clipped = (max(-SATURATED, min(pod.requests.get(name, 0), SATURATED)) for pod in pods)
        return np.fromiter(clipped, dtype=np.int64, count=len(pods))


def _frozen(array: npt.NDArray[_T]) -> npt.NDArray[_T]:
    """Write-protect an array so snapshots stay immutable."""
    array.flags.writeable = False
    return array
