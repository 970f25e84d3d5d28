"""`python -m benchmarks.chaos [--gangs N --nodes N --seed S ...]`: run the chaos suite, write its results file.

`make chaos` runs the full suite; the results go to `benchmarks/results/chaos.json` (every figure, the command and
the seed) and `chaos.md` (the table the README quotes). The exit status is 1 when an invariant was violated, a
disruption was not survived, the run did not converge, or the fuzzing found something.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.chaos.report import passed, write
from benchmarks.chaos.runner import ChaosConfig, run_chaos

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results"


def _parser() -> argparse.ArgumentParser:
    defaults = ChaosConfig()
    parser = argparse.ArgumentParser(prog="python -m benchmarks.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of the workload, faults and kills")
    parser.add_argument("--gangs", type=int, default=defaults.gangs, help="stop driving once this many gangs bound")
    parser.add_argument("--nodes", type=int, default=defaults.nodes, help="simulated nodes (8 GPUs each)")
    parser.add_argument("--replicas", type=int, default=defaults.replicas, help="replicas of each program")
    parser.add_argument("--live", type=int, default=defaults.live, help="PodCliqueSets alive at once, at most")
    parser.add_argument("--budget", type=float, default=defaults.budget_s, help="seconds of driving, at most")
    parser.add_argument("--fuzz", type=int, default=defaults.fuzz_examples, help="generated PodCliqueSets")
    parser.add_argument("--converge-timeout", type=float, default=defaults.converge_timeout, help="seconds")
    parser.add_argument(
        "--rolling-updates",
        action=argparse.BooleanOptionalAction,
        default=defaults.rolling_updates,
        help="also change clique templates, which the operator rolls out (default on)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    parser.add_argument("--name", default="chaos", help="results file name (without extension)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    config = ChaosConfig(
        seed=args.seed, gangs=args.gangs, nodes=args.nodes, replicas=args.replicas, live=args.live,
        budget_s=args.budget, fuzz_examples=args.fuzz, converge_timeout=args.converge_timeout,
        rolling_updates=args.rolling_updates,
    )  # fmt: skip
    result = run_chaos(config, progress=not args.no_progress)
    command = "python -m benchmarks.chaos " + " ".join(sys.argv[1:] if argv is None else argv)
    path = write(result, config, command.strip(), args.out, args.name)
    print(f"results: {path}", file=sys.stderr)
    return 0 if passed(result) else 1


if __name__ == "__main__":
    sys.exit(main())
