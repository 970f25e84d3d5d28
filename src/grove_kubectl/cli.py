"""`kubectl-grove`: parse kubectl's flags, run one command, print text or `-o json|yaml`.

kubectl hands a plugin every argument after `grove` unchanged, so the flags a kubectl user types (`-n`,
`--namespace=`, `-A`, `--context`, `--kubeconfig`, `-o`) are accepted before or after the command's argument.
Errors are one line on stderr, `error: ...`, and exit code 1, as kubectl reports them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from grove_kubectl import convert, placement, render, top, tree, why
from grove_kubectl.kinds import PODCLIQUESETS, PODGANGS, PODGANGSETS, parse_target
from grove_kubectl.output import PlacementOutput, TopOutput, TreeOutput, WhyOutput
from grove_kubectl.session import CommandError, Session
from grove_runtime import errors
from grove_runtime.resources import PODS

__all__ = ["build_parser", "main"]


def _common() -> argparse.ArgumentParser:
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument("--kubeconfig", help="path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    flags.add_argument("--context", help="the kubeconfig context to use")
    flags.add_argument("-n", "--namespace", help="the namespace (default: the context's, else default)")
    flags.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (top only counts all)")
    flags.add_argument("-o", "--output", choices=("json", "yaml"), help="print JSON or YAML instead of text")
    return flags


def build_parser() -> argparse.ArgumentParser:
    """The command line: `kubectl grove COMMAND [TARGET] [flags]`."""
    common = _common()
    parser = argparse.ArgumentParser(
        prog="kubectl grove", description="See Grove workloads: their tree, placement, why they wait, GPU use."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("tree", parents=[common], help="pcs/NAME or pgs/NAME: the whole hierarchy").add_argument("target")
    sub.add_parser(
        "placement", parents=[common], help="pcs/NAME, pgs/NAME or podgang/NAME: pods by domain, constraints, score"
    ).add_argument("target")
    sub.add_parser(
        "why", parents=[common], help="pod/NAME, podgang/NAME, pcs/NAME or pgs/NAME: why it is not running"
    ).add_argument("target")
    sub.add_parser("top", parents=[common], help="GPU allocation by topology domain (a heat map)")
    conv = sub.add_parser("convert", parents=[common], help="-f FILE: the PodCliqueSet equivalent to a PodGangSet")
    conv.add_argument("-f", "--filename", required=True, help="a file of grove.dynamo.ai/v1 objects, or - for stdin")
    return parser


async def _run(args: argparse.Namespace) -> str:
    if args.command == "convert":
        return convert.render(convert.convert_file(args.filename), args.output or "yaml")
    session = await Session.open(args.kubeconfig, args.context, args.namespace, args.all_namespaces)
    try:
        colour = render.palette()
        if session.namespace is None and args.command != "top":
            raise CommandError(f"{args.command} looks at one object: give -n NAMESPACE instead of -A")
        if args.command == "tree":
            rt, name = parse_target(args.target, (PODCLIQUESETS, PODGANGSETS))
            out_tree: TreeOutput = await tree.build_tree(session, rt, name)
            return _print(out_tree, args.output, lambda: render.tree_lines(out_tree.root, colour))
        if args.command == "placement":
            rt, name = parse_target(args.target, (PODCLIQUESETS, PODGANGSETS, PODGANGS))
            out_place: PlacementOutput = await placement.build_placement(session, rt, name, args.target)
            return _print(out_place, args.output, lambda: placement.lines(out_place, colour))
        if args.command == "why":
            rt, name = parse_target(args.target, (PODS, PODGANGS, PODCLIQUESETS, PODGANGSETS))
            out_why: WhyOutput = await why.build_why(session, rt, name, args.target)
            return _print(out_why, args.output, lambda: why.lines(out_why, colour))
        out_top: TopOutput = await top.build_top(session)
        return _print(out_top, args.output, lambda: top.lines(out_top, colour))
    finally:
        await session.close()


def _print(model: TreeOutput | PlacementOutput | WhyOutput | TopOutput, fmt: str | None, text: object) -> str:
    if fmt:
        return render.dump(model, fmt)
    assert callable(text)
    return "\n".join(text()).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `kubectl-grove` console script."""
    args = build_parser().parse_args(argv)
    try:
        sys.stdout.write(asyncio.run(_run(args)))
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except errors.ApiError as exc:
        print(f"Error from server ({type(exc).__name__}): {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
