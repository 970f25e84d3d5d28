"""Queues benchmark: two teams with GPU quotas 60/40 and unbounded demand on 1,000 nodes; how close the allocated
shares come to the fair shares, and how fast a starved team reclaims its quota.

In-process against the scheduler's own parts, no API server: the queue book and gate (`grove_sched.tenancy`:
admission, fair share, the rank the scheduling queue orders by, the reclaim choice), real placement (`place`) on a
`Snapshot` of `uniform(1000)` (8 GPUs a node, 50 racks), and the preemption victim search (`select_victims`).
One scheduling cycle = the best-ranked pending gang (lowest distance of its queue to its fair share, then age) is
placed, or, when it does not fit, reclaims whole gangs of the other queue (evicted gangs go back to their queue's
pending list, as the operator recreates their pods) and is placed into what they freed; pod termination and API
round trips are not modelled. Each team always has 16 gangs pending (unbounded demand): 1 x 8, 2 x 4, 2 x 8 or
4 x 8 GPUs (the last required into one rack).

Two scenarios, each run with queues and, as the baseline in the same run, without (no Queue: gangs in arrival
order, no reclaim):

* **both**: both teams start together on an empty cluster; allocated vs fair share once no cycle changes anything;
* **starved**: team a fills the cluster while b is idle, then b asks: cycles, reclaims, evicted GPUs and CPU time
  until b holds its fair share (to within one gang), and the shares at the end.

Decision times are CPU time (`time.thread_time`). Deterministic per seed.
Run: `python -m benchmarks.queues [--nodes 1000] [--seed 0]`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from benchmarks.harness import clusters
from grove_api.labels import LABEL_KAI_QUEUE, LABEL_PODGANG
from grove_sched.gangs import GangKey, ReadyGang
from grove_sched.model import CPU, GPU, GangRequest, Placement, PodGroup, PodRef, TopologyConstraint
from grove_sched.placement import Snapshot, assumed_pods, place
from grove_sched.preemption import PreemptionOptions, VictimGang, select_victims
from grove_sched.tenancy import QueueBook, QueueGate

RACK = "topology.kubernetes.io/rack"
SHAPES = ((1, 8, None), (2, 4, None), (2, 8, None), (4, 8, RACK))
PENDING = 16
LOOKAHEAD = 8
"""Gangs per team a cycle may try when the ones before do not fit (so small gangs fill what big ones cannot)."""
TEAMS = ("team-a", "team-b")


def queue_obj(name: str, quota: float) -> dict[str, Any]:
    share = {"quota": quota, "limit": -1, "overQuotaWeight": 1}
    return {"metadata": {"name": name}, "spec": {"resources": {"gpu": share}}}


@dataclass
class Run:
    """One cluster with its queues (or none), pending gangs per team, and counters."""

    queues: bool
    snapshot: Snapshot
    rng: random.Random
    quotas: dict[str, float]
    book: QueueBook = field(init=False)
    gate: QueueGate = field(init=False)
    pending: dict[str, deque[ReadyGang]] = field(default_factory=dict)
    arrival: dict[GangKey, int] = field(default_factory=dict)
    serial: int = 0
    reclaims: int = 0
    evicted_gpus: int = 0
    cycles: int = 0
    decision_cpu: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.book = QueueBook()
        self.gate = QueueGate(self.book)
        if self.queues:
            for team, quota in self.quotas.items():
                self.book.set_queue(queue_obj(team, quota))
        self.pending = {team: deque() for team in TEAMS}

    def ask(self, team: str) -> None:
        """Top `team` up to `PENDING` waiting gangs (unbounded demand)."""
        while len(self.pending[team]) < PENDING:
            self.pending[team].append(self.new_gang(team))

    def new_gang(self, team: str) -> ReadyGang:
        pods, gpus, required = self.rng.choice(SHAPES)
        name = f"{team}-{self.serial}"
        self.serial += 1
        labels = {LABEL_PODGANG: name, LABEL_KAI_QUEUE: team}
        refs = tuple(PodRef(f"{name}-{i}") for i in range(pods))
        group = PodGroup("w", refs, pods, {GPU: gpus, CPU: 4000}, labels, topology=TopologyConstraint(required))
        key = GangKey("default", name)
        self.arrival[key] = self.serial
        request = GangRequest(name, "default", (group,))
        objs = {ref.name: {"metadata": {"name": ref.name, "labels": labels}} for ref in refs}
        return ReadyGang(key, request, objs, {}, pods)

    def requeue(self, victim: VictimGang) -> None:
        """An evicted gang comes back to its team's pending list (the operator recreates its pods)."""
        team = str(victim.pods[0].labels[LABEL_KAI_QUEUE])
        pods = len(victim.pods)
        gpus = int(victim.pods[0].requests.get(GPU, 0))
        required = next((r for p, g, r in SHAPES if p == pods and g == gpus), None)
        labels = dict(victim.pods[0].labels)
        refs = tuple(PodRef(p.name) for p in victim.pods)
        group = PodGroup("w", refs, pods, {GPU: gpus, CPU: 4000}, labels, topology=TopologyConstraint(required))
        request = GangRequest(victim.key.name, "default", (group,))
        objs = {ref.name: {"metadata": {"name": ref.name, "labels": labels}} for ref in refs}
        self.pending[team].appendleft(ReadyGang(victim.key, request, objs, {}, pods))

    def held(self) -> dict[str, int]:
        """GPUs per team in the snapshot."""
        out = dict.fromkeys(TEAMS, 0)
        for pod in self.snapshot.live_pods:
            out[str(pod.labels[LABEL_KAI_QUEUE])] += int(pod.requests.get(GPU, 0))
        return out

    def candidates(self) -> list[VictimGang]:
        by_gang: dict[GangKey, list[Any]] = {}
        for pod in self.snapshot.live_pods:
            by_gang.setdefault(GangKey("default", str(pod.labels[LABEL_PODGANG])), []).append(pod)
        return [VictimGang(key, 0, tuple(pods)) for key, pods in sorted(by_gang.items())]

    def order(self, teams: Sequence[str]) -> list[ReadyGang]:
        """The teams' head gangs, best first: the queue's distance to its fair share (with queues), then age."""
        heads = [gang for t in teams for gang in list(self.pending[t])[:LOOKAHEAD]]
        if self.queues:  # every pending gang asks (the scheduler's attempts register each one's demand)
            for gang in (g for t in teams for g in self.pending[t]):
                self.gate.admit(gang, None, self.snapshot)
            return sorted(heads, key=lambda g: (self.gate.rank(g.key), self.arrival[g.key]))
        return sorted(heads, key=lambda g: self.arrival[g.key])

    def cycle(self, teams: Sequence[str]) -> bool:
        """Try the best head gang, then the next; True when something changed."""
        for gang in self.order(teams):
            team = str(next(iter(gang.pods.values()))["metadata"]["labels"][LABEL_KAI_QUEUE])
            start = time.thread_time()
            if self.queues and self.gate.admit(gang, None, self.snapshot) is not None:
                continue
            result = place(self.snapshot, gang.request)
            if isinstance(result, Placement) and result.assignments:
                self.snapshot = self.snapshot.with_assumed(list(assumed_pods(gang.request, result)))
            elif self.queues:
                victims = self.gate.victims(gang, self.candidates())
                selection = select_victims(self.snapshot, gang.request, victims, PreemptionOptions())
                if selection is None:
                    self.decision_cpu.append(time.thread_time() - start)
                    continue
                freed = self.snapshot.without(k for v in selection.victims for k in v.pod_keys)
                self.snapshot = freed.with_assumed(list(assumed_pods(gang.request, selection.placement)))
                self.reclaims += 1
                self.evicted_gpus += selection.cost.gpus
                for victim in selection.victims:
                    self.requeue(victim)
            else:
                continue
            self.decision_cpu.append(time.thread_time() - start)
            self.cycles += 1
            self.pending[team].remove(gang)
            self.gate.forget(gang.key)
            return True
        return False

    def fair(self) -> dict[str, float]:
        self.book.observe(self.snapshot)
        figures = self.book.figures()
        return {t: figures.fair.get(t, (0.0, 0.0, 0.0))[0] for t in TEAMS}


def converge(run: Run, teams: Sequence[str], limit: int = 100_000) -> None:
    for _ in range(limit):
        for team in teams:
            run.ask(team)
        if not run.cycle(teams):
            return


def scenario_both(nodes: int, seed: int, queues: bool, quotas: dict[str, float]) -> dict[str, Any]:
    cluster = clusters.uniform(nodes, nodes_per_rack=20)
    run = Run(queues, Snapshot.build(list(cluster.nodes), []), random.Random(seed), quotas)
    start = time.thread_time()
    converge(run, TEAMS)
    return _summary(run, cluster.total_gpus, time.thread_time() - start)


def scenario_starved(nodes: int, seed: int, queues: bool, quotas: dict[str, float]) -> dict[str, Any]:
    cluster = clusters.uniform(nodes, nodes_per_rack=20)
    run = Run(queues, Snapshot.build(list(cluster.nodes), []), random.Random(seed), quotas)
    converge(run, TEAMS[:1])
    cycles0, reclaims0, cpu0 = run.cycles, run.reclaims, len(run.decision_cpu)
    reached = None
    target = quotas["team-b"]  # b's fair share once both ask without bound (the table's final column shows it)
    for _ in range(100_000):
        for team in TEAMS:
            run.ask(team)
        if reached is None and run.held()["team-b"] >= target - 32:
            reached = (run.cycles - cycles0, run.reclaims - reclaims0, sum(run.decision_cpu[cpu0:]))
        if not run.cycle(TEAMS):
            break
    summary = _summary(run, cluster.total_gpus, sum(run.decision_cpu[cpu0:]))
    summary["to_quota"] = reached
    return summary


def _summary(run: Run, total: int, cpu: float) -> dict[str, Any]:
    held = run.held()
    fair = run.fair() if run.queues else {t: run.quotas[t] for t in TEAMS}
    return {
        "held": held,
        "fair": fair,
        "error": max(abs(held[t] - fair[t]) for t in TEAMS) / total,
        "cycles": run.cycles,
        "reclaims": run.reclaims,
        "evicted_gpus": run.evicted_gpus,
        "cpu": cpu,
        "median_ms": 1000 * statistics.median(run.decision_cpu) if run.decision_cpu else 0.0,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.queues", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown report here")
    args = parser.parse_args(argv)
    total = clusters.uniform(args.nodes, nodes_per_rack=20).total_gpus
    quotas = {"team-a": 0.6 * total, "team-b": 0.4 * total}
    lines = [
        "# Queues: two teams with GPU quotas 60/40 and unbounded demand",
        "",
        f"Command: `.venv/bin/python -m benchmarks.queues --nodes {args.nodes} --seed {args.seed} "
        "--out benchmarks/results/queues.md` (in-process: "
        "queue book and gate, `place`, `select_victims` on a Snapshot; no API server, pod termination not "
        "modelled; CPU times).",
        "",
        f"uniform-{args.nodes} ({total} GPUs, racks of 20 nodes), "
        f"quotas team-a {quotas['team-a']:g} / team-b {quotas['team-b']:g}, "
        f"gangs 1x8, 2x4, 2x8, 4x8 GPUs (4x8 in one rack), {PENDING} pending per team, seed {args.seed}",
        "",
        "| scenario | queues | team-a GPUs (fair) | team-b GPUs (fair) | max error / capacity | cycles | reclaims "
        "| GPUs evicted | decision CPU ms (median) | CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    starved_to_quota: dict[bool, Any] = {}
    for name, scenario in (("both", scenario_both), ("starved", scenario_starved)):
        for queues in (True, False):
            s = scenario(args.nodes, args.seed, queues, quotas)
            if name == "starved":
                starved_to_quota[queues] = s["to_quota"]
            lines.append(
                f"| {name} | {'yes' if queues else 'no (baseline)'} | {s['held']['team-a']} ({s['fair']['team-a']:g}) "
                f"| {s['held']['team-b']} ({s['fair']['team-b']:g}) | {100 * s['error']:.2f}% | {s['cycles']} "
                f"| {s['reclaims']} | {s['evicted_gpus']} | {s['median_ms']:.1f} | {s['cpu']:.1f} |"
            )
            print(lines[-1], flush=True)
    lines.append("")
    reached = starved_to_quota[True]
    if reached is None:
        lines.append("Starved team-b never reached its fair share with queues.")
    else:
        cycles, reclaims, cpu = reached
        lines.append(
            f"Starved team-b reached its fair share (to within one 4x8 gang) after {cycles} scheduling cycles, "
            f"{reclaims} of them reclaims, {cpu:.1f} s of scheduler CPU (victims' termination not included); "
            f"without queues it never does (baseline: {'never' if starved_to_quota[False] is None else 'reached'})."
        )
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out is not None:
        args.out.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
