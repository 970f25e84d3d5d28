"""The immutable, numpy-backed cluster view that `place` reads.

Placement needs per-node integer vectors and label columns it can filter with array operations, not Python
objects per node. The snapshot is built once per cycle (or derived cheaply with `with_assumed`) and never
mutated: arrays are write-protected so a placement cannot corrupt the view another caller holds. Nodes are
sorted by name so that input order never changes an answer.

Amounts are int64 and never wrap: requests count as at least 0, allocatable and per-node sums are bounded by
`SATURATED` (a node's usage that reaches it means "full", and stays full: `without` gives no capacity back
there). The scheduler's quantities are far smaller (`grove_sched.quantity.MAX_QUANTITY`), so this only guards
against objects no API server would hold; below the bound every sum is exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from grove_sched.model import BASE_RESOURCES, PODS, BoundPod, NodeInfo, PodAffinityTerm, Taint
from grove_sched.placement._fragment import Profile, profile, shape_counts

IntArray = npt.NDArray[np.int64]
CodeArray = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]
_T = TypeVar("_T", bound=np.generic)

SATURATED = 2**61
"""The magnitude at which free and used amounts stop counting (the difference of two such columns fits int64)."""


@dataclass(frozen=True, slots=True)
class LabelColumns:
    """Labels of many objects as one integer code column per key (-1 = key absent)."""

    codes: Mapping[str, CodeArray]
    vocab: Mapping[str, tuple[str, ...]]
    size: int

    @staticmethod
    def encode(labels: Sequence[Mapping[str, str]]) -> LabelColumns:
        """Encode label maps; codes follow first appearance, so equal inputs give equal columns."""
        return LabelColumns({}, {}, 0).extended(labels)

    def extended(self, labels: Sequence[Mapping[str, str]]) -> LabelColumns:
        """These columns plus rows for `labels` (existing codes are kept, new values get new codes)."""
        keys: dict[str, None] = {}
        for mapping in labels:
            keys.update(dict.fromkeys(mapping))
        columns = dict(self.codes)
        vocab = dict(self.vocab)
        size = self.size + len(labels)
        for key in keys:
            values = [mapping.get(key) for mapping in labels]
            known = vocab.get(key, ())
            index = {value: code for code, value in enumerate(known)}
            for value in values:
                if value is not None and value not in index:
                    index[value] = len(index)
            new = np.fromiter((-1 if v is None else index[v] for v in values), dtype=np.int32, count=len(values))
            old = columns.get(key)
            column = np.concatenate([old if old is not None else np.full(self.size, -1, dtype=np.int32), new])
            column.flags.writeable = False
            columns[key] = column
            vocab[key] = tuple(index)
        for key, old in self.codes.items():
            if key not in keys:
                column = np.concatenate([old, np.full(len(labels), -1, dtype=np.int32)])
                column.flags.writeable = False
                columns[key] = column
        return LabelColumns(codes=columns, vocab=vocab, size=size)

    def rows(self, keep: BoolArray) -> LabelColumns:
        """These columns restricted to the rows where `keep` is set (codes and vocabularies are kept)."""
        columns: dict[str, CodeArray] = {}
        for key, old in self.codes.items():
            column = old[keep]
            column.flags.writeable = False
            columns[key] = column
        return LabelColumns(codes=columns, vocab=self.vocab, size=int(keep.sum()))

    def column(self, key: str) -> CodeArray:
        """The code column for `key`, all -1 when no object carries it."""
        found = self.codes.get(key)
        return found if found is not None else np.full(self.size, -1, dtype=np.int32)

    def codes_of(self, key: str, values: Iterable[str]) -> list[int]:
        """Codes of the given values of `key` that occur at all."""
        vocab = self.vocab.get(key, ())
        wanted = set(values)
        return [code for code, value in enumerate(vocab) if value in wanted]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Nodes (sorted by name) with free/allocatable matrices, label columns, taints and bound pods."""

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
    pods: tuple[BoundPod, ...]
    pod_node: IntArray
    pod_labels: LabelColumns
    pod_namespaces: tuple[str, ...]
    anti_affinity_pods: tuple[int, ...]
    gpu_pod_shapes: IntArray
    """Histogram of bound GPU pods' CPU and memory per GPU (`_fragment.shape_counts`)."""

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
        """Node → domain id for a topology label key (-1 where the node lacks the label)."""
        return self.node_labels.column(key)

    def domain_names(self, key: str) -> tuple[str, ...]:
        """Domain id → label value for `key`."""
        return self.node_labels.vocab.get(key, ())

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
            pods=tuple(kept),
            pod_node=_frozen(pod_node),
            pod_labels=LabelColumns.encode([pod.labels for pod in kept]),
            pod_namespaces=tuple(pod.namespace for pod in kept),
            anti_affinity_pods=tuple(i for i, pod in enumerate(kept) if pod.anti_affinity),
            gpu_pod_shapes=_frozen(shape_counts([pod.requests for pod in kept])),
        )

    def with_assumed(self, pods: Sequence[BoundPod]) -> Snapshot:
        """A new snapshot with `pods` additionally bound; node arrays are reused, only usage changes."""
        res_index = {name: i for i, name in enumerate(self.resources)}
        unknown = {name for pod in pods for name, amount in pod.requests.items() if amount and name not in res_index}
        if unknown:
            raise KeyError(f"resources unknown to the snapshot: {sorted(unknown)}")
        kept = [pod for pod in pods if pod.node in self.node_index]
        used, pod_node = _pod_usage(kept, self.node_index, res_index, self.num_nodes, len(self.resources))
        all_pods = self.pods + tuple(kept)
        offset = len(self.pods)
        return Snapshot(
            node_names=self.node_names,
            node_index=self.node_index,
            resources=self.resources,
            allocatable=self.allocatable,
            free=_frozen(np.maximum(self.free - used, -SATURATED)),
            node_labels=self.node_labels,
            taints=self.taints,
            taint_matrix=self.taint_matrix,
            unschedulable=self.unschedulable,
            pod_count=_frozen(self.pod_count + np.bincount(pod_node, minlength=self.num_nodes)),
            pods=all_pods,
            pod_node=_frozen(np.concatenate([self.pod_node, pod_node])),
            pod_labels=self.pod_labels.extended([pod.labels for pod in kept]),
            pod_namespaces=self.pod_namespaces + tuple(pod.namespace for pod in kept),
            anti_affinity_pods=self.anti_affinity_pods
            + tuple(offset + i for i, pod in enumerate(kept) if pod.anti_affinity),
            gpu_pod_shapes=_frozen(self.gpu_pod_shapes + shape_counts([pod.requests for pod in kept])),
        )

    def without(self, pods: Iterable[str]) -> Snapshot:
        """A new snapshot with the named bound pods gone (they departed); node arrays are reused.

        Each entry is `namespace/name` (that pod only) or a bare `name` (pods of that name in every namespace).
        Unknown entries are ignored, so removing an already-removed pod is harmless.
        """
        wanted = set(pods)
        if not wanted:
            return self
        keep = np.fromiter(
            (pod.name not in wanted and f"{pod.namespace}/{pod.name}" not in wanted for pod in self.pods),
            dtype=np.bool_,
            count=len(self.pods),
        )
        if keep.all():
            return self
        res_index = {name: i for i, name in enumerate(self.resources)}
        gone = [pod for pod, kept in zip(self.pods, keep, strict=True) if not kept]
        freed, gone_node = _pod_usage(gone, self.node_index, res_index, self.num_nodes, len(self.resources))
        new_index = np.cumsum(keep) - 1
        return Snapshot(
            node_names=self.node_names,
            node_index=self.node_index,
            resources=self.resources,
            allocatable=self.allocatable,
            free=_frozen(np.where(self.free <= -SATURATED, self.free, np.minimum(self.free + freed, SATURATED))),
            node_labels=self.node_labels,
            taints=self.taints,
            taint_matrix=self.taint_matrix,
            unschedulable=self.unschedulable,
            pod_count=_frozen(self.pod_count - np.bincount(gone_node, minlength=self.num_nodes)),
            pods=tuple(pod for pod, kept in zip(self.pods, keep, strict=True) if kept),
            pod_node=_frozen(self.pod_node[keep]),
            pod_labels=self.pod_labels.rows(keep),
            pod_namespaces=tuple(ns for ns, kept in zip(self.pod_namespaces, keep, strict=True) if kept),
            anti_affinity_pods=tuple(int(new_index[i]) for i in self.anti_affinity_pods if keep[i]),
            gpu_pod_shapes=_frozen(self.gpu_pod_shapes + shape_counts([pod.requests for pod in gone], sign=-1)),
        )

    def anti_affinity_terms(self) -> Iterable[tuple[int, PodAffinityTerm]]:
        """(node, term) for every required anti-affinity term of a bound pod (they repel incoming pods)."""
        for i in self.anti_affinity_pods:
            for term in self.pods[i].anti_affinity:
                yield int(self.pod_node[i]), term


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
