"""GPU fragmentation: free GPUs that the cluster's typical GPU pod could no longer use on their node.

On a heterogeneous GPU cluster the GPUs left over at high load are mostly GPUs whose node ran out of CPU or
memory first (on the Alibaba openb trace every stranded GPU at 130% demand sat on a node with no free CPU). A
placement that leaves a node with 4 free GPUs and 2 free cores has in effect used up those GPUs. FGD (Weng et
al., ATC'23) measures this against the distribution of the workload's requests; we use one robust point of it,
the low quantile of CPU and memory per GPU among the GPU pods already bound, so the measure needs nothing but
the snapshot and stays pure and deterministic.

The profile is kept as a histogram on quarter-octave bins (bin b holds values in [2^(b/4), 2^((b+1)/4))), so
`Snapshot.with_assumed` and `without` update it in O(pods changed) and reading a quantile is a cumsum over 256
bins. A quantile is read as its bin's lower edge: at most 19% below the true value, erring towards calling
fewer GPUs unusable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from grove_sched.model import CPU, GPU, MEMORY

BINS = 256
PROFILE_QUANTILE = 0.1
"""Measured on openb at 130% demand (3 seeds): the 10th percentile beat the 25th and the median; a high quantile
calls GPUs unusable that small pods would still fill."""

_IntArray = npt.NDArray[np.int64]
_MAX_EDGE = 2**61  # the top bins' edges would not fit int64 arithmetic (`_snapshot.SATURATED`)


def shape_counts(requests: Sequence[Mapping[str, int]], sign: int = 1) -> _IntArray:
    """Histogram rows (CPU per GPU, memory per GPU) of the GPU pods among `requests`, times `sign`."""
    counts = np.zeros((2, BINS), dtype=np.int64)
    gpus = np.fromiter((r.get(GPU, 0) for r in requests), dtype=np.float64, count=len(requests))
    mask = gpus > 0
    if not mask.any():
        return counts
    for row, name in enumerate((CPU, MEMORY)):
        amounts = np.fromiter((r.get(name, 0) for r in requests), dtype=np.float64, count=len(requests))
        per_gpu = np.maximum(amounts[mask] / gpus[mask], 1.0)  # asking nothing lands in bin 0
        bins = np.clip((np.log2(per_gpu) * 4).astype(np.int64), 0, BINS - 1)
        counts[row] = sign * np.bincount(bins, minlength=BINS)
    return counts


@dataclass(frozen=True, slots=True)
class Profile:
    """CPU (millicores) and memory (bytes) a typical GPU pod asks per GPU; a floor for calling a GPU usable
    (0: pods hardly ask for it, so it never limits)."""

    cpu_per_gpu: int
    memory_per_gpu: int


def profile(counts: _IntArray, quantile: float = PROFILE_QUANTILE) -> Profile | None:
    """The `quantile` of each histogram row as its bin's lower edge; None without bound GPU pods."""
    total = int(counts[0].sum())
    if total <= 0:
        return None
    edges = []
    for row in counts:
        b = int(np.searchsorted(np.cumsum(row), quantile * total, side="left"))
        edges.append(min(int(2.0 ** (min(b, BINS - 1) / 4)), _MAX_EDGE) if b > 0 else 0)
    return Profile(edges[0], edges[1])


def unusable_gpus(free: _IntArray, gpu: int, cpu: int | None, memory: int | None, prof: Profile | None) -> _IntArray:
    """Per row of free vectors, free GPUs that a profile pod could not use for lack of CPU or memory."""
    gpus = np.maximum(free[..., gpu], 0)
    if prof is None:
        return np.zeros_like(gpus)
    usable = gpus
    for column, per_gpu in ((cpu, prof.cpu_per_gpu), (memory, prof.memory_per_gpu)):
        if column is not None and per_gpu > 0:
            usable = np.minimum(usable, np.maximum(free[..., column], 0) // per_gpu)
    result: _IntArray = gpus - usable
    return result


def may_fragment(
    free: _IntArray, req: _IntArray, maxpods: _IntArray, gpu: int, cpu: int | None, memory: int | None, prof: Profile
) -> npt.NDArray[np.bool_]:
    """Nodes where some placement of the gang could leave unusable GPUs (a cheap over-approximation).

    A node's GPUs stay usable while CPU left >= per-GPU need x GPUs left; each pod of group g moves that margin
    by (its CPU - need x its GPUs), so if the margin covers every group at its most pods on the node, nothing this
    gang does there can fragment it. Elsewhere the tier is 0, and an all-zero tier keeps the objective's weights
    (and so CP-SAT's search) exactly what they are without it."""
    result = np.zeros(free.shape[0], dtype=np.bool_)
    gpus = free[:, gpu]
    for column, per_gpu in ((cpu, prof.cpu_per_gpu), (memory, prof.memory_per_gpu)):
        if column is None or per_gpu <= 0:
            continue
        margin = free[:, column] - per_gpu * np.maximum(gpus, 0)
        drain = np.maximum(req[:, column] - per_gpu * req[:, gpu], 0)
        result |= margin < (maxpods * drain[:, None]).sum(axis=0)
    result &= gpus > 0
    return result
