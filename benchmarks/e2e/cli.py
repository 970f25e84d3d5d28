"""`python -m benchmarks e2e [quick|full|SCENARIO ...] [overrides]`: run end-to-end scenarios and report them.

Presets: `quick` (make bench: tas-quick, disagg-quick) and `full` (make bench-full: tas-5000, disagg-full).
Overrides (`--nodes`, `--pcs`, `--rate`, ...) apply to every selected scenario. Exit status 1 if any run fails
verification (or a program dies), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.e2e import report
from benchmarks.e2e.runner import E2EError, run_scenario
from benchmarks.e2e.scenarios import PRESETS, SCENARIOS, Scenario
from benchmarks.sim_throughput_proc import SimStartError

__all__ = ["main", "select"]

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results"


def _parser() -> argparse.ArgumentParser:
    listing = "; ".join(f"{name}: {s.description}" for name, s in SCENARIOS.items()).replace("%", "%%")  # for argparse
    parser = argparse.ArgumentParser(prog="python -m benchmarks e2e", description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "targets",
        nargs="*",
        default=["quick"],
        help=f"presets ({', '.join(PRESETS)}) or scenarios ({listing}); default quick",
    )
    parser.add_argument("--nodes", type=int, help="simulated nodes")
    parser.add_argument("--gpus-per-node", type=int, help="GPUs per node")
    parser.add_argument("--topology", help="grove-sim topology, e.g. block=10,rack=5 (50 racks)")
    parser.add_argument(
        "--pcs", "--gangs", dest="pcs", type=int, help="PodCliqueSets to create (tas: one gang each; disagg: two)"
    )
    parser.add_argument("--pods-per-gang", type=int, help="pods per gang (tas)")
    parser.add_argument("--gpus-per-pod", type=int, help="GPUs per pod (tas)")
    parser.add_argument("--rate", type=float, help="PodCliqueSets created per second (0: as fast as possible)")
    parser.add_argument("--background", type=float, help="fraction of GPUs used by pods bound before the run")
    parser.add_argument("--timeout", type=float, help="seconds to wait for every pod to be bound")
    parser.add_argument("--seed", type=int, help="seed of the background load")
    parser.add_argument("--runs", type=int, default=1, help="runs per scenario (the table adds their median)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder (default: benchmarks/results)")
    parser.add_argument("--label", help="results subfolder e2e-<label> (default: the targets joined by '+')")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run operator and scheduler under cProfile; report their hot spots "
        "(the environment variable GROVE_E2E_PROFILE_DIR keeps the .prof files there)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def select(targets: Sequence[str], overrides: dict[str, Any]) -> list[Scenario]:
    """The scenarios named by presets and scenario names (in order, without repeats), with the overrides applied."""
    names: list[str] = []
    for target in targets:
        for name in PRESETS.get(target, (target,)):
            if name not in SCENARIOS:
                raise KeyError(f"unknown preset or scenario {name!r}: {', '.join([*PRESETS, *SCENARIOS])}")
            if name not in names:
                names.append(name)
    return [SCENARIOS[name].with_overrides(**overrides) for name in names]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected scenarios; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    overrides = {
        key: getattr(args, key)
        for key in (
            "nodes", "gpus_per_node", "topology", "pcs", "pods_per_gang", "gpus_per_pod", "rate", "background",
            "timeout", "seed",
        )
    }  # fmt: skip
    try:
        scenarios = select(args.targets, overrides)
    except (KeyError, ValueError) as err:
        parser.error(str(err))
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    label = args.label or "+".join(args.targets)
    shown = shlex.join(["python", "-m", "benchmarks", "e2e", *(sys.argv[2:] if argv is None else argv)])
    folder = args.out / f"e2e-{label}"
    failed = False
    for scenario in scenarios:
        for run in range(args.runs):
            print(f"e2e {scenario.name} run {run + 1}/{args.runs}: {scenario.summary()}", file=sys.stderr)
            try:
                result = run_scenario(scenario, progress=not args.no_progress, profile=args.profile)
            except (E2EError, SimStartError, RuntimeError) as err:
                print(f"e2e {scenario.name}: run failed: {err}", file=sys.stderr)
                return 1
            numbers = result["numbers"]
            rate = numbers["pods_per_s"]
            print(
                f"  {numbers['pods_bound']}/{scenario.expected_pods} pods bound, "
                f"{'-' if rate is None else f'{rate:.1f}'} pods/s, gang p50 {numbers['gang_latency_ms']['p50']} ms, "
                f"{result['seconds']['total']:.0f} s in all",
                file=sys.stderr,
            )
            for program, rows in result["profile"].items():
                print(f"  {program} hot spots (own time):", file=sys.stderr)
                for row in rows[:8]:
                    print(f"    {row['tottime_s']:8.2f} s  {row['function']}", file=sys.stderr)
            if not result["verify"]["ok"]:
                failed = True
                print(f"  VERIFICATION FAILED (logs: {result['logs']}):", file=sys.stderr)
                for problem in result["verify"]["problems"]:
                    print(f"    {problem}", file=sys.stderr)
            by_scenario.setdefault(scenario.name, []).append(result)
            # after every run, so a later crash or Ctrl-C keeps what was measured
            folder = report.write(by_scenario, label, args.out, shown, plots=not args.no_plots)
    print(report.table(by_scenario))
    print(f"results in {folder}", file=sys.stderr)
    return 1 if failed else 0
