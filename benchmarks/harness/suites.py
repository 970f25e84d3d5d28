"""Named benchmark suites: which workloads on which clusters, for `python -m benchmarks <suite>`.

`quick` is sized to finish in under 5 minutes on 2 cores (1,000-node and openb clusters, every workload kind);
`full` runs every workload at its intended scale (5,000-node TAS shapes included). Each suite is a function of
the seed so a run is reproducible. The workloads whose CP-SAT-vs-greedy verdict flips with the arrival order
(disagg, openb) run on `SEEDS` consecutive seeds from the given one and are reported as means (per-seed
numbers in results.json); the TAS shapes and knavigator are not sequence-sensitive and run once. The
sequence-sensitive workloads also run on `HELD_OUT` held-out seeds drawn per run from a master seed the report
records (`held_out_seeds`), because the solver's settings were tuned on seeds 0-2. Suites carry
a mode; only "placement" (in-process) exists today, and an "e2e" mode (grove-sim + operator + scheduler
processes) registers here when those components are ready.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from benchmarks.harness import clusters, workloads
from benchmarks.harness.workloads import Workload

PLACEMENT = "placement"
SEEDS = 3
"""Seeds per sequence-sensitive workload, in quick and full alike."""
HELD_OUT = 8
"""Held-out seeds per sequence-sensitive workload, drawn afresh per run from a recorded master seed."""


def held_out_seeds(master: int, count: int, tuning: Sequence[int]) -> list[int]:
    """`count` distinct seeds from `random.Random(master)`, none of them a tuning seed: the same master seed
    gives the same seeds, so a run's results file names how to reproduce it."""
    rng = random.Random(master)
    seeds: list[int] = []
    while len(seeds) < count:
        seed = rng.randrange(2**31)
        if seed not in tuning and seed not in seeds:
            seeds.append(seed)
    return seeds


@dataclass(frozen=True, slots=True)
class Suite:
    """A named list of workloads and the mode that runs them."""

    name: str
    mode: str
    build: Callable[[int], list[Workload]]
    description: str
    held_out: Callable[[Sequence[int]], list[Workload]] | None = None
    """The sequence-sensitive workloads again, on the given held-out seeds (`held_out_seeds`)."""


def _tas(seed: int) -> list[Workload]:
    loaded = clusters.with_background(clusters.uniform(5000), 0.6, seed)
    plain = clusters.uniform(5000)
    out = [workloads.tas(loaded, gangs, 4) for gangs in (750, 1500, 2250)]
    out += [workloads.tas(plain, gangs, 1000) for gangs in (3, 6, 9)]
    return out


def _seeds(seed: int) -> list[int]:
    return list(range(seed, seed + SEEDS))


LOOKAHEAD_MAX_NODES = 1000
"""The queue look-ahead (`cpsat-ahead`) runs on the disaggregated sequences up to this size: at 5,000 nodes its
rollouts would take most of an hour per seed."""


def _disagg_on(nodes: int, load: float) -> Callable[[int], Workload]:
    def build(seed: int) -> Workload:
        workload = workloads.disagg(clusters.with_background(clusters.uniform(nodes), load, seed), 1.1, seed)
        return replace(workload, compare_lookahead=nodes <= LOOKAHEAD_MAX_NODES)

    return build


def _openb_seeded(seed: int) -> Workload:
    return workloads.openb(clusters.openb(), 1.3, seed, levels=(1.0,))


def _disagg(seed: int) -> list[Workload]:
    return [
        workloads.seeded(_disagg_on(1000, 0.5), _seeds(seed)),
        workloads.seeded(_disagg_on(5000, 0.6), _seeds(seed)),
    ]


def _openb(seed: int) -> list[Workload]:
    return [workloads.seeded(_openb_seeded, _seeds(seed))]


def _knavigator(seed: int) -> list[Workload]:
    return [workloads.knavigator(clusters.knavigator())]


def _held_out_quick(seeds: Sequence[int]) -> list[Workload]:
    return [workloads.held_out(_disagg_on(1000, 0.5), seeds), workloads.held_out(_openb_seeded, seeds)]


def _held_out_disagg(seeds: Sequence[int]) -> list[Workload]:
    return [workloads.held_out(_disagg_on(1000, 0.5), seeds), workloads.held_out(_disagg_on(5000, 0.6), seeds)]


def _held_out_openb(seeds: Sequence[int]) -> list[Workload]:
    return [workloads.held_out(_openb_seeded, seeds)]


def _held_out_full(seeds: Sequence[int]) -> list[Workload]:
    return [*_held_out_disagg(seeds), *_held_out_openb(seeds)]


def _quick(seed: int) -> list[Workload]:
    small = clusters.uniform(1000)
    loaded = clusters.with_background(small, 0.5, seed)
    return [
        workloads.tas(loaded, 750, 4),
        workloads.tas(small, 3, 1000),
        workloads.seeded(_disagg_on(1000, 0.5), _seeds(seed)),
        *_openb(seed),
        *_knavigator(seed),
    ]


def _full(seed: int) -> list[Workload]:
    return [*_tas(seed), *_disagg(seed), *_openb(seed), *_knavigator(seed)]


SUITES: dict[str, Suite] = {
    suite.name: suite
    for suite in (
        Suite("quick", PLACEMENT, _quick, "every workload kind at 1,000 nodes / openb (make bench)", _held_out_quick),
        Suite("full", PLACEMENT, _full, "every workload at its intended scale (make bench-full)", _held_out_full),
        Suite("tas", PLACEMENT, _tas, "kube-scheduler TAS shapes on 5,000 nodes"),
        Suite("disagg", PLACEMENT, _disagg, "disaggregated-inference gangs on 1,000 and 5,000 nodes", _held_out_disagg),
        Suite("openb", PLACEMENT, _openb, "Alibaba openb trace as gangs, up to 130% demand", _held_out_openb),
        Suite("knavigator", PLACEMENT, _knavigator, "knavigator burst: 53 gangs on 32 nodes"),
    )
}
