"""Placement latency benchmark: total `place` time per gang (prefilter + model build + solve).

Synthetic GPU clusters (8 GPUs/node, zone > block > rack > host, 100 nodes per rack, random background load)
and the gang shapes of placement-notes §2. Each shape runs with CP-SAT and greedy-only in the same process, so
the ratio is comparable. Prints a Markdown table. Run: `python -m benchmarks.placement_speed [--seeds N]`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from grove_sched.model import (
    CPU,
    GPU,
    MEMORY,
    PODS,
    BoundPod,
    GangRequest,
    NodeInfo,
    Placement,
    PlacementOptions,
    PlacementResult,
    PodGroup,
    PodRef,
    Taint,
    TopologyConstraint,
)
from grove_sched.placement import Snapshot, place

RACK = "topology.kubernetes.io/rack"
BLOCK = "topology.kubernetes.io/block"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
GIB = 2**30


def cluster(
    num_nodes: int, seed: int, per_rack: int = 100, load: tuple[float, float] = (0.35, 0.95)
) -> tuple[list[NodeInfo], list[BoundPod]]:
    """Racks of `per_rack` nodes, 5 racks per block, 5 blocks per zone; per-block load drawn from `load`."""
    rnd = random.Random(seed)
    nodes: list[NodeInfo] = []
    pods: list[BoundPod] = []
    load_by_block: dict[int, float] = {}
    for i in range(num_nodes):
        rack = i // per_rack
        block = rack // 5
        name = f"node-{i:05d}"
        labels = {HOST: name, RACK: f"rack-{rack:03d}", BLOCK: f"block-{block:02d}", ZONE: f"zone-{block // 5}"}
        taints = (Taint("maintenance", "true", "NoSchedule"),) if rnd.random() < 0.03 else ()
        alloc = {CPU: 192_000, MEMORY: 2048 * GIB, PODS: 110, GPU: 8}
        nodes.append(NodeInfo(name, labels, alloc, taints))
        level = load_by_block.setdefault(block, rnd.uniform(*load))
        if rnd.random() < min(1.0, max(0.0, level + rnd.gauss(0, 0.15))):
            used = rnd.randint(1, 8)
            for k in range(used):
                requests = {GPU: 1, CPU: rnd.choice((4_000, 8_000, 24_000)), MEMORY: 64 * GIB}
                pods.append(BoundPod(f"bg-{i}-{k}", "background", name, {"app": "background"}, requests))
    return nodes, pods


def _group(
    name: str, count: int, minimum: int, gpu: int, topo: TopologyConstraint | None = None, cpu: int | None = None
) -> PodGroup:
    requests = {GPU: gpu, CPU: 16_000 * gpu if cpu is None else cpu, MEMORY: 128 * GIB * max(gpu, 1)}
    pods = tuple(PodRef(f"{name}-{i}", f"uid-{name}-{i}") for i in range(count))
    return PodGroup(name, pods, minimum, requests, {"app": name}, topology=topo or TopologyConstraint())


def gang_shapes() -> dict[str, GangRequest]:
    """The shapes of placement-notes §2 plus a many-replica 1-GPU gang."""
    rack = TopologyConstraint(required_key=RACK)
    return {
        "A: 4x8-GPU, required rack": GangRequest("a", "bench", (_group("a-w", 4, 4, 8),), topology=rack),
        "A2: 2x4 prefill + 4x4 decode, required rack": GangRequest(
            "a2", "bench", (_group("a2-p", 2, 2, 4), _group("a2-d", 4, 4, 4)), topology=rack
        ),
        "C: 3x4 prefill + 5x2 decode, per-group rack, preferred block": GangRequest(
            "c",
            "bench",
            (_group("c-p", 3, 3, 4, rack), _group("c-d", 5, 4, 2, rack)),
            topology=TopologyConstraint(preferred_key=BLOCK),
        ),
        "D: 32x1-GPU (min 24), no topology": GangRequest("d", "bench", (_group("d-w", 32, 24, 1),)),
        "E: 3x3 + 2x5 + 4x2-GPU, required rack": GangRequest(
            "e", "bench", (_group("e-a", 3, 3, 3), _group("e-b", 2, 2, 5), _group("e-c", 4, 4, 2)), topology=rack
        ),
        "F: 6x CPU-bound (1 GPU, 96 cores), required rack": GangRequest(
            "f", "bench", (_group("f-w", 6, 6, 1, cpu=96_000),), topology=rack
        ),
        "G: 2 groups of 12x4-GPU, each required rack, no gang key": GangRequest(
            "g", "bench", (_group("g-x", 12, 12, 4, rack), _group("g-y", 12, 12, 4, rack))
        ),
        "B: 16x8-GPU, required block": GangRequest(
            "b", "bench", (_group("b-w", 16, 16, 8),), topology=TopologyConstraint(required_key=BLOCK)
        ),
    }


def _timed_place(snap: Snapshot, gang: GangRequest, options: PlacementOptions) -> tuple[float, PlacementResult]:
    """Wall time of one `place` call in milliseconds, and its result."""
    start = time.perf_counter()
    out = place(snap, gang, options)
    return (time.perf_counter() - start) * 1000.0, out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# name -> (per-block load range, nodes per rack); the last one (placement-notes' 16-node racks) makes CP-SAT work.
LOADS: dict[str, tuple[tuple[float, float], int]] = {
    "typical": ((0.35, 0.95), 100),
    "tight": ((0.7, 1.0), 100),
    "tight, 16-node racks": ((0.7, 1.0), 16),
}


def run(sizes: list[int], seeds: int, repeats: int) -> str:
    """Benchmark every shape at every size and load; returns the Markdown table."""
    cpsat = PlacementOptions()
    greedy_only = PlacementOptions(use_cpsat=False)
    rows = [
        "| nodes | load | gang | total median ms | total p99 ms | greedy-only median ms | greedy-only p99 ms "
        "| ratio (median) | placed | answer from cpsat | better than greedy | mean score |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    build_times: list[str] = []
    for size in sizes:
        for load_name, (load, per_rack) in LOADS.items():
            snaps = []
            for seed in range(seeds):
                nodes, pods = cluster(size, seed, per_rack=per_rack, load=load)
                start = time.perf_counter()
                snaps.append(Snapshot.build(nodes, pods))
                ms = (time.perf_counter() - start) * 1000.0
                build_times.append(f"{size} nodes / {len(pods)} pods ({load_name}): {ms:.0f} ms")
            for label, gang in gang_shapes().items():
                rows.append(_row(size, load_name, label, gang, snaps, repeats, cpsat, greedy_only))
    return "\n".join(rows) + "\n\nSnapshot.build: " + "; ".join(build_times)


def _row(
    size: int,
    load: str,
    label: str,
    gang: GangRequest,
    snaps: list[Snapshot],
    repeats: int,
    cpsat: PlacementOptions,
    greedy_only: PlacementOptions,
) -> str:
    """One table row: timings over every snapshot x repeat, quality per snapshot."""
    place(snaps[0], gang, cpsat)  # warm-up
    t_cp: list[float] = []
    t_gr: list[float] = []
    placed = better = from_cpsat = 0
    scores: list[float] = []
    for snap in snaps:
        for _ in range(repeats):
            ms_cp, res_cp = _timed_place(snap, gang, cpsat)
            ms_gr, res_gr = _timed_place(snap, gang, greedy_only)
            t_cp.append(ms_cp)
            t_gr.append(ms_gr)
        if isinstance(res_cp, Placement):
            placed += 1
            scores.append(res_cp.score)
            from_cpsat += res_cp.stats.path == "cpsat"
            if not isinstance(res_gr, Placement) or res_cp.objective.key < res_gr.objective.key:
                better += 1
    med_cp, med_gr = statistics.median(t_cp), statistics.median(t_gr)
    return (
        f"| {size} | {load} | {label} | {med_cp:.1f} | {_pct(t_cp, 0.99):.1f} | {med_gr:.1f} | {_pct(t_gr, 0.99):.1f} "
        f"| {med_cp / med_gr:.1f}x | {placed}/{len(snaps)} | {from_cpsat} | {better} "
        f"| {statistics.fmean(scores) if scores else 0:.2f} |"
    )


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(run(args.sizes, args.seeds, args.repeats))


if __name__ == "__main__":
    main()
