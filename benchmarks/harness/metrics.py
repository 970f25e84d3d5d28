"""Placement-quality metrics: allocation, stranded GPUs, topology spread, preferred hits, latency, proven bounds.

Definitions (benchmark-anchors §3.1, §5.3):

* GPUs allocated: (allocatable - free) / allocatable GPUs over the whole cluster, background included.
* Stranded GPUs: free GPUs on nodes that no pending (unplaced) gang could use. A pending gang can use a node
  when one of its pods fits there and the node's domain at every required key of that pod's scope passes the
  aggregate check (enough slots for each group's minimum). This is a necessary condition for a placement, so
  the count is a lower bound on the truly stranded GPUs. With nothing pending nothing is being denied: 0.
* Spread: distinct racks / blocks holding a placed gang's pods. Preferred hit: a preferred scope whose pods all
  landed in one domain of its key.
* `lp_bound`: the granularity-aware LP bound of §5.3 on the GPUs a gang sequence can place on a snapshot,
  solved with GLOP. Gangs with the same shape are aggregated. Per group and domain at the group's effective
  required level (group key, else gang key, else the whole cluster) a variable counts group instances placed
  there (fractional); groups at the gang's level share the gang's domain choice; domains a group cannot fill in
  isolation are excluded. Every domain D at every level used, and the whole cluster, caps the GPUs of the
  variables inside it by D's free GPUs, and for each pod size p caps pods of size >= p by sum over D's nodes of
  floor(free/p). Every real placement satisfies all of this, so the optimum is a valid upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from ortools.linear_solver import pywraplp

from grove_sched.model import GPU, GangRequest
from grove_sched.placement import BoolArray, CodeArray, IntArray, Snapshot

FloatArray = npt.NDArray[np.float64]

CLUSTER = ""


def allocated_gpus(snapshot: Snapshot) -> tuple[int, int]:
    """(allocated, allocatable) GPUs of the whole cluster."""
    gpu = snapshot.resource_index(GPU)
    if gpu is None:
        return 0, 0
    total = int(snapshot.allocatable[:, gpu].sum())
    return total - int(np.maximum(snapshot.free[:, gpu], 0).sum()), total


def domains_spanned(snapshot: Snapshot, nodes: Iterable[str], key: str) -> int:
    """Distinct domains of `key` among `nodes` (an unlabelled node counts as its own domain)."""
    dom = snapshot.domains(key)
    seen: set[int | str] = set()
    for node in nodes:
        code = int(dom[snapshot.node_index[node]])
        seen.add(code if code >= 0 else node)
    return len(seen)


def preferred_hits(snapshot: Snapshot, gang: GangRequest, assignments: Mapping[str, str]) -> tuple[int, int]:
    """(scopes kept within one preferred domain, preferred scopes with placed pods) for one placed gang."""
    scopes = [(set(assignments), gang.topology.preferred_key)]
    for cfg in gang.group_configs:
        members = {pod.name for grp in gang.groups if grp.name in cfg.group_names for pod in grp.pods}
        scopes.append((members, cfg.topology.preferred_key))
    scopes.extend(({pod.name for pod in grp.pods}, grp.topology.preferred_key) for grp in gang.groups)
    hits = total = 0
    for members, key in scopes:
        nodes = [node for pod, node in assignments.items() if pod in members]
        if key is None or not nodes:
            continue
        total += 1
        hits += domains_spanned(snapshot, nodes, key) == 1
    return hits, total


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 1]); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def optimality_gap(bound: float, achieved: float) -> float:
    """(bound - achieved) / bound, 0 when the bound is 0."""
    return 0.0 if bound <= 0 else max(0.0, (bound - achieved) / bound)


@dataclass(frozen=True, slots=True)
class _Group:
    """A group as the metrics see it: one pod request vector, pod count and minimum, effective required key."""

    req: tuple[int, ...]
    pods: int
    minimum: int
    key: str | None


def _shape(snapshot: Snapshot, gang: GangRequest) -> tuple[str | None, tuple[_Group, ...]]:
    groups = []
    for grp in gang.groups:
        requests = grp.pods[0].requests if grp.pods and grp.pods[0].requests is not None else grp.requests
        vec = tuple(int(x) for x in snapshot.vector(requests))
        groups.append(_Group(vec, len(grp.pods), grp.min_replicas, grp.topology.required_key))
    return gang.topology.required_key, tuple(groups)


def _usable_mask(snapshot: Snapshot, ok: BoolArray, shape: tuple[str | None, tuple[_Group, ...]]) -> BoolArray:
    """Nodes a gang of this shape could put a pod on (aggregate check per required domain)."""
    gang_key, groups = shape
    fits = []
    for grp in groups:
        req = np.asarray(grp.req, dtype=np.int64)
        used = np.flatnonzero(req > 0)
        per = (np.maximum(snapshot.free[:, used], 0) // req[used]).min(axis=1) if used.size else np.full(len(ok), 1)
        fits.append(np.where(ok, np.minimum(per, grp.pods), 0))
    usable = np.zeros(len(ok), dtype=np.bool_)
    gang_ok = _domain_ok(snapshot, gang_key, [(f, g.minimum) for f, g in zip(fits, groups, strict=True)])
    for f, grp in zip(fits, groups, strict=True):
        usable |= (f > 0) & gang_ok & _domain_ok(snapshot, grp.key, [(f, grp.minimum)])
    return usable


def _domain_ok(snapshot: Snapshot, key: str | None, needs: Sequence[tuple[IntArray, int]]) -> BoolArray:
    """Per node: its `key` domain has enough slots for every (fits, minimum) pair."""
    n = snapshot.num_nodes
    if key is None:
        return np.full(n, all(int(f.sum()) >= m for f, m in needs), dtype=np.bool_)
    dom = snapshot.domains(key)
    labelled = dom >= 0
    count = len(snapshot.domain_names(key))
    good = np.ones(count, dtype=np.bool_)
    for f, m in needs:
        good &= np.bincount(dom[labelled], weights=f[labelled], minlength=count) >= m
    result: BoolArray = labelled & good[np.maximum(dom, 0)]
    return result


def stranded_gpus(snapshot: Snapshot, pending: Sequence[GangRequest]) -> int:
    """Free GPUs on nodes no pending gang could use (see module docstring); 0 when nothing is pending."""
    gpu = snapshot.resource_index(GPU)
    if gpu is None or not pending:
        return 0
    ok = ~snapshot.unschedulable & ~snapshot.taint_matrix.any(axis=1)
    usable = np.zeros(snapshot.num_nodes, dtype=np.bool_)
    for shape in {_shape(snapshot, gang) for gang in pending}:
        usable |= _usable_mask(snapshot, ok, shape)
        if usable.all():
            break
    return int(np.maximum(snapshot.free[~usable, gpu], 0).sum())


def _nested(fine: CodeArray, coarse: CodeArray) -> bool:
    """Whether every domain of `fine` lies inside one domain of `coarse`."""
    both = (fine >= 0) & (coarse >= 0)
    if not both.any():
        return False
    pairs = np.unique(np.stack([fine[both], coarse[both]]), axis=1)
    return bool(np.unique(pairs[0]).size == pairs.shape[1]) and bool(((fine >= 0) <= (coarse >= 0)).all())


def lp_bound(snapshot: Snapshot, gangs: Sequence[GangRequest]) -> float:
    """Upper bound on the GPUs `gangs` can place on `snapshot` (LP of benchmark-anchors §5.3, module docstring)."""
    gpu = snapshot.resource_index(GPU)
    if gpu is None or not gangs:
        return 0.0
    ok = ~snapshot.unschedulable & ~snapshot.taint_matrix.any(axis=1)
    free: FloatArray = np.where(ok, np.maximum(snapshot.free[:, gpu], 0), 0).astype(np.float64)
    shapes: dict[tuple[str | None, tuple[tuple[int, int, int, str | None], ...]], int] = {}
    for gang in gangs:
        gang_key, members = _shape(snapshot, gang)
        shape = (gang_key, tuple((g.req[gpu], g.pods, g.minimum, g.key) for g in members if g.req[gpu] > 0))
        shapes[shape] = shapes.get(shape, 0) + 1
    keys = sorted({k for (gk, groups) in shapes for k in [gk, *(g[3] for g in groups)] if k is not None})
    columns: dict[str, CodeArray] = {CLUSTER: np.where(ok, 0, -1).astype(np.int32)}
    columns.update({k: np.where(ok, snapshot.domains(k), -1).astype(np.int32) for k in keys})
    sizes = sorted({g[0] for (_, groups) in shapes for g in groups})
    capacity: dict[str, dict[str | int, FloatArray]] = {}
    for level, col in columns.items():
        inside = col >= 0
        width = int(col.max(initial=-1)) + 1
        capacity[level] = {"gpu": np.bincount(col[inside], weights=free[inside], minlength=width).astype(np.float64)}
        for p in sizes:
            capacity[level][p] = np.bincount(col[inside], weights=np.floor(free[inside] / p), minlength=width).astype(
                np.float64
            )
    solver = pywraplp.Solver.CreateSolver("GLOP")
    rows: dict[tuple[str, int, str | int], pywraplp.Constraint] = {}

    def row(level: str, d: int, what: str | int) -> pywraplp.Constraint:
        key = (level, d, what)
        if key not in rows:
            rows[key] = solver.Constraint(-solver.infinity(), float(capacity[level][what][d]))
        return rows[key]

    parents = {
        level: [outer for outer in columns if outer == CLUSTER or _nested(columns[level], columns[outer])]
        for level in columns
    }
    objective = solver.Objective()
    objective.SetMaximization()
    for (gang_key, groups), count in shapes.items():
        gang_level = gang_key if gang_key is not None else CLUSTER
        picks: dict[int, pywraplp.Variable] = {}
        pick_row = solver.Constraint(0, count)
        for size, pods, minimum, group_key in groups:
            level = group_key if group_key is not None else gang_level
            col = columns[level]
            alone = solver.Constraint(0, count) if level != gang_level else None
            for d in np.flatnonzero(capacity[level][size] >= max(minimum, 1)).tolist():
                var = solver.NumVar(0, count, "")
                objective.SetCoefficient(var, float(size * pods))
                if alone is not None:
                    alone.SetCoefficient(var, 1)
                else:
                    if d not in picks:
                        picks[d] = solver.NumVar(0, count, "")
                        pick_row.SetCoefficient(picks[d], 1)
                    link = solver.Constraint(-solver.infinity(), 0)
                    link.SetCoefficient(var, 1)
                    link.SetCoefficient(picks[d], -1)
                member = int(np.flatnonzero(col == d)[0])
                for outer in parents[level]:
                    od = int(columns[outer][member])
                    row(outer, od, "gpu").SetCoefficient(var, float(size * pods))
                    for p in sizes:
                        if size >= p:
                            row(outer, od, p).SetCoefficient(var, float(pods))
    if solver.Solve() not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        return float(free.sum())
    return float(min(objective.Value(), free.sum()))
