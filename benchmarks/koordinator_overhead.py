"""What the Koordinator and Reservation support adds to a scheduling cycle, against one placement of the same gang.

Every cycle now reads the gang's Koordinator annotations (`gang_hints`) and, while Available Reservations exist,
layers their holds onto the snapshot (`Snapshot.with_assumed`). This times both (medians over repeats, one
process) beside `place` of a 64-pod rack-packed gang on 256 empty 8-GPU nodes, so the ratio says what it costs.

Run: `python -m benchmarks.koordinator_overhead [--out FILE]`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grove_sched import model as m
from grove_sched.koordinator import gang_hints
from grove_sched.placement import Snapshot, place
from grove_sched.reservations.model import PHASE_AVAILABLE, ReservationView, holds


def median_us(work: Callable[[], Any], repeats: int) -> float:
    """Median wall time of `work` in microseconds."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def main(argv: list[str] | None = None) -> None:
    """Print (and with --out write) the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    allocatable = {m.CPU: 64_000, m.MEMORY: 2**39, m.PODS: 110, m.GPU: 8}
    nodes = [m.NodeInfo(f"n{i}", {m.HOSTNAME_KEY: f"n{i}", m.RACK_KEY: f"r{i // 8}"}, allocatable) for i in range(256)]
    snapshot = Snapshot.build(nodes, [])
    group = m.PodGroup("w", tuple(m.PodRef(f"w-{i}") for i in range(64)), 64, {m.GPU: 2, m.CPU: 1000})
    request = m.GangRequest("g", "default", (group,), topology=m.TopologyConstraint(required_key=m.RACK_KEY))
    pods = [{"metadata": {"name": f"w-{i}", "namespace": "default"}, "spec": {}} for i in range(64)]
    timeout = {"scheduling.koordinator.sh/gang-timeout": "30s"}
    annotated = [{**p, "metadata": {**p["metadata"], "annotations": timeout}} for p in pods]
    podgang = {"metadata": {"name": "g", "annotations": {"team": "a"}}}
    views = [
        ReservationView(f"r{i}", 2, {m.GPU: 8}, {}, (), PHASE_AVAILABLE, (f"n{2 * i}", f"n{2 * i + 1}"))
        for i in range(20)
    ]
    held = [pod for view in views for pod in holds(view, {})]
    base = median_us(lambda: place(snapshot, request), 30)
    rows = [
        ("place: 64-pod rack-packed gang, 256 nodes (baseline)", base),
        ("gang_hints: 64 pods, no Koordinator annotation", median_us(lambda: gang_hints(podgang, pods), 300)),
        ("gang_hints: 64 pods annotated", median_us(lambda: gang_hints(podgang, annotated), 300)),
        ("with_assumed: holds of 20 Reservations (40 nodes)", median_us(lambda: snapshot.with_assumed(held), 100)),
    ]
    lines = ["| step | median µs | / place |", "|---|---:|---:|"]
    lines += [f"| {name} | {us:.1f} | {us / base:.3f} |" for name, us in rows]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(f"Command: python -m benchmarks.koordinator_overhead --out {args.out}\n\n{text}\n")


if __name__ == "__main__":
    main()
