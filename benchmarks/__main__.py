"""`python -m benchmarks quick|full|<suite> [--out benchmarks/results]`: run a benchmark suite and write its report.

`make bench` runs `quick`, `make bench-full` runs `full`. Suites are listed in `benchmarks.harness.suites`; each
has a mode, and the CLI dispatches on it, so the end-to-end mode (`e2e`: grove-sim, operator and scheduler as
separate processes) slots in as another mode without changing the placement-only path. The run stops with a
non-zero status if any strategy ever returns a placement that breaks a hard constraint.
"""

from __future__ import annotations

import argparse
import secrets
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness import report
from benchmarks.harness.runner import InvalidDecision, WorkloadResult, default_strategies, run_workload
from benchmarks.harness.suites import HELD_OUT, PLACEMENT, SEEDS, SUITES, Suite, held_out_seeds

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    # argparse %-formats help text, and descriptions say "130%".
    listing = "; ".join(f"{s.name}: {s.description}" for s in SUITES.values()).replace("%", "%%")
    parser.add_argument(
        "suite",
        choices=[*SUITES, "e2e"],
        help=f"suite to run ({listing}; e2e: grove-sim, operator and scheduler processes, see `e2e --help`)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder (default: benchmarks/results)")
    parser.add_argument("--seed", type=int, default=0, help="seed for background load and synthesised gangs")
    parser.add_argument(
        "--strategies",
        default="first-fit,best-fit,kai-greedy,grove-greedy,cpsat",
        help="comma-separated strategies (first-fit, best-fit, kai-greedy, grove-greedy, cpsat, cpsat-exact)",
    )
    parser.add_argument(
        "--held-out",
        type=int,
        default=HELD_OUT,
        help=f"held-out seeds per sequence-sensitive workload (default {HELD_OUT}; 0: tuning seeds only)",
    )
    parser.add_argument(
        "--master-seed",
        type=int,
        default=None,
        help="seed from which the held-out seeds are drawn (default: a fresh one, recorded in the results)",
    )
    parser.add_argument("--only", default="", help="run only workloads whose name contains this text")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def run_placement(suite: Suite, args: argparse.Namespace, held_out: list[int]) -> list[WorkloadResult]:
    """Run every workload of a placement-only suite with the chosen strategies, on the tuning seeds and then on
    the held-out ones."""
    strategies = default_strategies([name for name in args.strategies.split(",") if name])
    results = []
    chosen = suite.build(args.seed)
    if held_out and suite.held_out is not None:
        chosen += suite.held_out(held_out)
    for workload in chosen:
        if args.only and args.only not in workload.name:
            continue
        result = run_workload(workload, strategies, progress=not args.no_progress)
        print(f"{workload.name}: {result.seconds:.1f} s", file=sys.stderr)
        results.append(result)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the process exit status."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["e2e"]:
        from benchmarks.e2e.cli import main as e2e_main  # its own flags: `python -m benchmarks e2e --help`

        return e2e_main(given[1:])
    args = _parser().parse_args(given)
    suite = SUITES[args.suite]
    if suite.mode != PLACEMENT:
        print(f"suite {suite.name} has unsupported mode {suite.mode}", file=sys.stderr)
        return 2
    master = args.master_seed if args.master_seed is not None else secrets.randbelow(2**31)
    tuning = list(range(args.seed, args.seed + SEEDS))
    held_out = held_out_seeds(master, args.held_out, tuning) if args.held_out > 0 else []
    try:
        results = run_placement(suite, args, held_out)
    except InvalidDecision as err:
        print(f"invalid placement, aborting: {err}", file=sys.stderr)
        return 1
    shown = ["python", "-m", "benchmarks", *given]
    seeds = report.HeldOut(master, tuple(held_out)) if held_out else None
    folder = report.write(results, suite.name, args.out, shlex.join(shown), plots=not args.no_plots, held_out=seeds)
    print(report.table(results))
    for line in report.findings(results):
        print(f"- {line}")
    print(f"results in {folder}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
