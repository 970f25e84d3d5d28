"""Placement latency benchmark: total `place` time per gang (prefilter + model build + solve).

Synthetic GPU clusters (8 GPUs/node, zone > block > rack > host, 100 nodes per rack, random background load)
and the gang shapes of placement-notes §2, plus many-pod 1-GPU gangs with a required block. Each row places
`--count` gangs of one shape in a row on each seeded cluster, every placement committed before the next (as in a
burst), so the samples are different placements, not repeats of one: with at least 100 samples the p99 is a real
99th percentile, with fewer the table says "max of N". CP-SAT and greedy-only run the same sequence in the same
process, so their ratio is comparable. `--resident-pods` adds small CPU pods until the cluster holds that many
bound pods (the 50,000-node / 500,000-pod target). Prints a Markdown table; `--out` also writes it to a file.

Run: `python -m benchmarks.placement_speed [--sizes 1000 5000] [--seeds N] [--count N] [--out FILE]`.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import time
from dataclasses import dataclass, field
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
from grove_sched.placement import Snapshot, assumed_pods, place

RACK = "topology.kubernetes.io/rack"
BLOCK = "topology.kubernetes.io/block"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
GIB = 2**30
REAL_P99 = 100
"""Samples from which the table reports a 99th percentile rather than the maximum."""


def cluster(
    num_nodes: int,
    seed: int,
    per_rack: int = 100,
    load: tuple[float, float] = (0.35, 0.95),
    resident: int = 0,
) -> tuple[list[NodeInfo], list[BoundPod]]:
    """Racks of `per_rack` nodes, 5 racks per block, 5 blocks per zone; per-block load drawn from `load`;
    CPU-only pods (0.1 core, 256 MiB) spread over the nodes until `resident` pods are bound."""
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
    small = {CPU: 100, MEMORY: 256 * 2**20}
    for j in range(max(0, resident - len(pods))):
        node = nodes[j % num_nodes].name
        pods.append(BoundPod(f"svc-{j}", "services", node, {"app": f"svc-{j % 97}"}, small))
    return nodes, pods


def _group(
    name: str, count: int, minimum: int, gpu: int, topo: TopologyConstraint | None = None, cpu: int | None = None
) -> PodGroup:
    requests = {GPU: gpu, CPU: 16_000 * gpu if cpu is None else cpu, MEMORY: 128 * GIB * max(gpu, 1)}
    pods = tuple(PodRef(f"{name}-{i}", f"uid-{name}-{i}") for i in range(count))
    return PodGroup(name, pods, minimum, requests, {"app": name}, topology=topo or TopologyConstraint())


def gang_shapes() -> dict[str, GangRequest]:
    """The shapes of placement-notes §2, a many-replica 1-GPU gang, and many-pod 1-GPU gangs in one block."""
    rack = TopologyConstraint(required_key=RACK)
    block = TopologyConstraint(required_key=BLOCK)
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
        "B: 16x8-GPU, required block": GangRequest("b", "bench", (_group("b-w", 16, 16, 8),), topology=block),
        "H: 64x1-GPU, required block": GangRequest("h", "bench", (_group("h-w", 64, 64, 1),), topology=block),
        "H2: 256x1-GPU, required block": GangRequest("h2", "bench", (_group("h2-w", 256, 256, 1),), topology=block),
    }


def _renamed(gang: GangRequest, k: int) -> GangRequest:
    """The k-th gang of a sequence: the same shape with its own pod names."""
    groups = tuple(
        PodGroup(
            grp.name,
            tuple(PodRef(f"{p.name}-{k}", f"{p.uid}-{k}") for p in grp.pods),
            grp.min_replicas,
            grp.requests,
            grp.labels,
            topology=grp.topology,
        )
        for grp in gang.groups
    )
    return GangRequest(f"{gang.name}-{k}", gang.namespace, groups, topology=gang.topology)


@dataclass
class _Run:
    """One strategy's sequence over every seeded cluster: times (ms) and outcomes."""

    ms: list[float]
    cpu: list[float] = field(default_factory=list)
    """CPU time of the process per call (ms): on a machine shared with other work, the part load cannot inflate
    by waiting for a core (CP-SAT runs single-threaded in the calling thread)."""
    placed: int = 0
    from_cpsat: int = 0
    scores: list[float] | None = None
    keys: list[tuple[int, ...]] | None = None


def _sequence(snap: Snapshot, gang: GangRequest, count: int, options: PlacementOptions, run: _Run) -> None:
    """Place `count` gangs of one shape in a row, committing each placement."""
    for k in range(count):
        request = _renamed(gang, k)
        start, cpu = time.perf_counter(), time.process_time()
        out: PlacementResult = place(snap, request, options)
        run.ms.append((time.perf_counter() - start) * 1000.0)
        run.cpu.append((time.process_time() - cpu) * 1000.0)
        if isinstance(out, Placement):
            run.placed += 1
            run.from_cpsat += out.stats.path == "cpsat"
            if run.scores is not None:
                run.scores.append(out.score)
            if run.keys is not None:
                run.keys.append(out.objective.key)
            snap = snap.with_assumed(assumed_pods(request, out))
        elif run.keys is not None:
            run.keys.append(())


def _pct(values: list[float], q: float) -> str:
    """The q-quantile, or "max of N" when there are too few samples for it to mean anything."""
    ordered = sorted(values)
    if len(ordered) < REAL_P99 and q > 0.9:
        return f"{ordered[-1]:.1f} (max of {len(ordered)})"
    return f"{ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]:.1f}"


# name -> (per-block load range, nodes per rack); the last one (placement-notes' 16-node racks) makes CP-SAT work.
LOADS: dict[str, tuple[tuple[float, float], int]] = {
    "typical": ((0.35, 0.95), 100),
    "tight": ((0.7, 1.0), 100),
    "tight, 16-node racks": ((0.7, 1.0), 16),
}


def run(sizes: list[int], seeds: int, count: int, loads: list[str], resident: int, shapes: str) -> str:
    """Benchmark every shape at every size and load; returns the Markdown table and notes."""
    cpsat = PlacementOptions()
    greedy_only = PlacementOptions(use_cpsat=False)
    rows = [
        "| nodes | load | gang | samples | total median ms | total p99 ms | total CPU median / p99 ms "
        "| greedy-only median ms | greedy-only p99 ms | ratio (median) | placed | answer from cpsat "
        "| better than greedy | mean score |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    for size in sizes:
        for load_name in loads:
            load, per_rack = LOADS[load_name]
            snaps = []
            for seed in range(seeds):
                nodes, pods = cluster(size, seed, per_rack=per_rack, load=load, resident=resident)
                start = time.perf_counter()
                snaps.append(Snapshot.build(nodes, pods))
                ms = (time.perf_counter() - start) * 1000.0
                notes.append(f"Snapshot.build, {size} nodes / {len(pods)} pods ({load_name}): {ms:.0f} ms")
                del nodes, pods
            for label, gang in gang_shapes().items():
                if shapes and not any(label.startswith(f"{s}:") for s in shapes.split(",")):
                    continue
                rows.append(_row(size, load_name, label, gang, snaps, count, cpsat, greedy_only))
                print(rows[-1], file=sys.stderr)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    notes.append(f"peak resident memory of the benchmark process (snapshots of every seed held at once): {rss:.0f} MiB")
    return "\n".join(rows) + "\n\n" + "\n".join(f"- {note}" for note in notes)


def _row(
    size: int,
    load: str,
    label: str,
    gang: GangRequest,
    snaps: list[Snapshot],
    count: int,
    cpsat: PlacementOptions,
    greedy_only: PlacementOptions,
) -> str:
    """One table row: `count` gangs in a row on every snapshot, with CP-SAT and greedy-only."""
    place(snaps[0], gang, cpsat)  # warm-up
    cp = _Run([], scores=[], keys=[])
    gr = _Run([], keys=[])
    for snap in snaps:
        _sequence(snap, gang, count, cpsat, cp)
        _sequence(snap, gang, count, greedy_only, gr)
    better = sum(1 for a, b in zip(cp.keys or [], gr.keys or [], strict=True) if a and (not b or a < b))
    med_cp, med_gr = statistics.median(cp.ms), statistics.median(gr.ms)
    return (
        f"| {size} | {load} | {label} | {len(cp.ms)} | {med_cp:.1f} | {_pct(cp.ms, 0.99)} "
        f"| {statistics.median(cp.cpu):.1f} / {_pct(cp.cpu, 0.99)} | {med_gr:.1f} "
        f"| {_pct(gr.ms, 0.99)} | {med_cp / med_gr:.1f}x | {cp.placed}/{len(cp.ms)} | {cp.from_cpsat} | {better} "
        f"| {statistics.fmean(cp.scores) if cp.scores else 0:.2f} |"
    )


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--count", type=int, default=25, help="gangs placed in a row per seeded cluster and shape")
    parser.add_argument("--loads", nargs="+", default=list(LOADS), choices=list(LOADS))
    parser.add_argument("--resident-pods", type=int, default=0, help="bound pods per cluster (CPU pods fill up)")
    parser.add_argument("--shapes", default="", help="comma-separated shape letters (default: every shape)")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    text = run(args.sizes, args.seeds, args.count, args.loads, args.resident_pods, args.shapes)
    command = "python -m benchmarks.placement_speed " + " ".join(argv if argv is not None else sys.argv[1:])
    header = (
        f"# Placement latency per gang: `{command.strip()}`\n\n"
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; each row places `--count` gangs of one shape in a "
        "row on each seeded cluster (committing every placement), with CP-SAT and with greedy only (`use_cpsat="
        "False`), in the same process. p99 is the 99th percentile of at least 100 samples, else the maximum. "
        "Total CPU is this process's CPU time per call, which waiting for a core on a shared machine does not "
        f"inflate; load average when the run ended: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.\n\n"
    )
    print(header + text)
    if args.out is not None:
        args.out.write_text(header + text + "\n")


if __name__ == "__main__":
    main()
