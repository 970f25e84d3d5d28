"""Preemption benchmark: high-priority inference gangs arriving into a cluster full of low-priority batch gangs.

The cluster is `uniform(1000)` (8-GPU nodes, 50 racks of 20), filled rack by rack with batch gangs of 1-4 pods
(8, 4 or 2 GPUs each, priorities 0/10/20), so no GPU is free. Then `--gangs` inference gangs (priority 1000, 2, 4
or 8 pods of 8 GPUs, required into one rack) arrive one by one. Each arrival is handled twice, on two copies of
the cluster that evolve separately, in the same run:

* **gang preemption** (`grove_sched.preemption.select_victims`): whole lower-priority gangs, chosen jointly with
  the preemptor's rack;
* **pod-by-pod baseline**, modelled on kube-scheduler's DefaultPreemption: each pod of the preemptor in turn
  takes the node whose cheapest victim set (all lower-priority pods removed, then given back highest priority
  first while the pod still fits) is best by (highest victim priority, sum of victim priorities, number of
  victims, node name); victims are single pods. The preemptor is admitted only if placement then fits it with
  its rack constraint (kube-scheduler has no topology-aware preemption).

Reported per method: gangs admitted, GPUs evicted per GPU admitted, victim gangs left partially running (pods of
a gang below its minimum are useless to a gang workload) and the GPUs they hold, and the decision time per
arrival (victim search plus the preemptor's placement) in CPU time, not wall time, so a busy machine does not skew
it; the victims' termination is the same for both and not modelled. Deterministic per seed.
Run: `python -m benchmarks.preemption [--gangs 30] [--seed 0]`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from benchmarks.harness import clusters
from grove_sched.gangs import GangKey
from grove_sched.model import CPU, GPU, BoundPod, GangRequest, NodeInfo, PodGroup, PodRef, TopologyConstraint
from grove_sched.placement import Snapshot, assumed_pods
from grove_sched.preemption import PreemptionOptions, VictimGang, fits, select_victims

RACK = "topology.kubernetes.io/rack"
HIGH = 1000


@dataclass
class State:
    """One method's cluster: nodes, bound pods with their gang and priority."""

    nodes: list[NodeInfo]
    pods: dict[str, BoundPod]
    gang_of: dict[str, GangKey]
    priority: dict[GangKey, int]
    size: dict[GangKey, int]

    def snapshot(self) -> Snapshot:
        return Snapshot.build(self.nodes, list(self.pods.values()))

    def victims(self) -> list[VictimGang]:
        by_gang: dict[GangKey, list[BoundPod]] = {}
        for key, pod in sorted(self.pods.items()):
            by_gang.setdefault(self.gang_of[key], []).append(pod)
        return [VictimGang(g, self.priority[g], tuple(p)) for g, p in sorted(by_gang.items())]

    def evict(self, keys: Sequence[str]) -> None:
        for key in keys:
            self.pods.pop(key, None)

    def admit(self, request: GangRequest, pods: Sequence[BoundPod]) -> None:
        gang = GangKey(request.namespace, request.name)
        self.priority[gang] = request.priority
        self.size[gang] = len(pods)
        for pod in pods:
            key = f"{pod.namespace}/{pod.name}"
            self.pods[key] = pod
            self.gang_of[key] = gang

    def partial(self) -> tuple[int, int]:
        """Gangs with some but not all pods running, and the GPUs those pods hold."""
        running = Counter(self.gang_of[k] for k in self.pods)
        broken = {g for g, n in running.items() if 0 < n < self.size[g]}
        gpus = sum(int(p.requests.get(GPU, 0)) for k, p in self.pods.items() if self.gang_of[k] in broken)
        return len(broken), gpus


@dataclass
class Tally:
    admitted: int = 0
    admitted_gpus: int = 0
    evicted_gpus: int = 0
    seconds: list[float] = field(default_factory=list)


def filled(seed: int) -> State:
    """`uniform(1000)` with every GPU taken by batch gangs packed rack by rack."""
    nodes = list(clusters.uniform(1000).nodes)
    rnd = random.Random(seed)
    state = State(nodes, {}, {}, {}, {})
    free = [(n.name, int(n.allocatable[GPU])) for n in nodes]
    cursor = 0
    number = 0
    while cursor < len(free):
        per_pod = rnd.choice((8, 4, 2))
        gang = GangKey("batch", f"b{number:04d}")
        number += 1
        placed = 0
        for i in range(rnd.randint(1, 4)):
            while cursor < len(free) and free[cursor][1] < per_pod:
                cursor += 1
            if cursor >= len(free):
                break
            name, left = free[cursor]
            free[cursor] = (name, left - per_pod)
            pod = BoundPod(f"{gang.name}-{i}", gang.namespace, name, {"gang": gang.name}, {GPU: per_pod, CPU: 1000})
            key = f"{gang.namespace}/{pod.name}"
            state.pods[key] = pod
            state.gang_of[key] = gang
            placed += 1
        state.priority[gang] = rnd.choice((0, 10, 20))
        state.size[gang] = placed
    return state


def inference(number: int, rnd: random.Random) -> GangRequest:
    pods = rnd.choice((2, 4, 8))
    name = f"serve-{number:03d}"
    refs = tuple(PodRef(f"{name}-{i}") for i in range(pods))
    group = PodGroup("w", refs, pods, {GPU: 8, CPU: 1000}, {"app": name})
    return GangRequest(name, "serving", (group,), HIGH, TopologyConstraint(required_key=RACK))


def gang_step(state: State, request: GangRequest, options: PreemptionOptions) -> tuple[bool, int]:
    snapshot = state.snapshot()
    chosen = select_victims(snapshot, request, state.victims(), options)
    if chosen is None:
        return False, 0
    state.evict([k for v in chosen.victims for k in v.pod_keys])
    state.admit(request, assumed_pods(request, chosen.placement))
    return True, chosen.cost.gpus


def pod_step(state: State, request: GangRequest, options: PreemptionOptions) -> tuple[bool, int]:
    """DefaultPreemption, pod by pod (module docstring)."""
    gpus_on: dict[str, int] = {n.name: int(n.allocatable[GPU]) for n in state.nodes}
    on_node: dict[str, list[str]] = {}
    for key, pod in state.pods.items():
        gpus_on[pod.node] -= int(pod.requests.get(GPU, 0))
        on_node.setdefault(pod.node, []).append(key)
    evicted: list[str] = []
    for _ in request.groups[0].pods:
        need = int(request.groups[0].requests.get(GPU, 0))
        best: tuple[tuple[int, int, int, str], list[str]] | None = None
        for node in sorted(gpus_on):
            lower = [k for k in on_node.get(node, []) if state.priority[state.gang_of[k]] < request.priority]
            room = gpus_on[node] + sum(int(state.pods[k].requests.get(GPU, 0)) for k in lower)
            if room < need:
                continue
            victims = list(lower)
            for key in sorted(lower, key=lambda k: -state.priority[state.gang_of[k]]):
                gpus = int(state.pods[key].requests.get(GPU, 0))
                if room - gpus >= need:
                    room -= gpus
                    victims.remove(key)
            prios = [state.priority[state.gang_of[k]] for k in victims]
            rank = (max(prios, default=-1), sum(prios), len(victims), node)
            if best is None or rank < best[0]:
                best = (rank, victims)
        if best is None:
            break
        node = best[0][3]
        for key in best[1]:
            gpus_on[node] += int(state.pods[key].requests.get(GPU, 0))
            on_node[node].remove(key)
        gpus_on[node] -= need  # nominated for this pod
        evicted += best[1]
    gone = sum(int(state.pods[k].requests.get(GPU, 0)) for k in evicted)
    state.evict(evicted)
    placement = fits(state.snapshot(), request, (), options.placement)
    if placement is None:
        return False, gone
    state.admit(request, assumed_pods(request, placement))
    return True, gone


def run(gangs: int, seed: int) -> dict[str, Tally]:
    options = PreemptionOptions()
    states = {"gang preemption": filled(seed), "pod-by-pod baseline": filled(seed)}
    steps = {"gang preemption": gang_step, "pod-by-pod baseline": pod_step}
    tallies = {name: Tally() for name in states}
    rnd = random.Random(seed + 1)
    arrivals = [inference(i, rnd) for i in range(gangs)]
    for request in arrivals:
        for name, state in states.items():
            start = time.process_time()
            admitted, evicted = steps[name](state, request, options)
            tallies[name].seconds.append(time.process_time() - start)
            tallies[name].evicted_gpus += evicted
            if admitted:
                tallies[name].admitted += 1
                tallies[name].admitted_gpus += 8 * len(request.groups[0].pods)
    for name, state in states.items():
        broken, held = state.partial()
        print_row(name, tallies[name], broken, held, gangs)
    return tallies


def print_row(name: str, tally: Tally, broken: int, held: int, gangs: int) -> None:
    ratio = tally.evicted_gpus / tally.admitted_gpus if tally.admitted_gpus else float("inf")
    times = sorted(tally.seconds) or [0.0]
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    print(
        f"| {name} | {tally.admitted}/{gangs} | {tally.admitted_gpus} | {tally.evicted_gpus} | {ratio:.2f} | "
        f"{broken} ({held} GPUs) | {statistics.median(times) * 1000:.0f} | {p95 * 1000:.0f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.preemption", description=__doc__.split("\n")[0])
    parser.add_argument("--gangs", type=int, default=30, help="high-priority gangs arriving")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"uniform-1000 full of batch gangs, {args.gangs} inference gangs (priority {HIGH}, rack), seed {args.seed}")
    print()
    print(
        "| method | gangs admitted | GPUs admitted | GPUs evicted | evicted per admitted | victim gangs left partial "
        "| decision CPU ms (median) | decision CPU ms (p95) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    run(args.gangs, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
