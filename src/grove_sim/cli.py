"""``grove-sim up``: run a simulated cluster in the foreground until SIGTERM/SIGINT.

The kubeconfig is written only once the server listens, so scripts can wait for the file to appear and then use
``kubectl`` or the operator/scheduler against it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import uvloop

from grove_sim.auth.authorizer import MODES
from grove_sim.cluster import ClusterShapeError, nodes_from_file, nodes_from_flags
from grove_sim.controllers.eventttl import DEFAULT_EVENT_TTL
from grove_sim.http.fault_config import FaultConfig, parse_faults
from grove_sim.server import SimOptions, SimServer, write_kubeconfig

__all__ = ["build_parser", "main", "options", "options_from_args", "tune_gc"]

GC_THRESHOLD = (50_000, 20, 10)
"""Collector thresholds for a process that owns a large store (CPython's default is 700, 10, 10)."""


def tune_gc() -> None:
    """Make the cyclic collector cheap for a store of millions of acyclic dicts and lists.

    Stored objects are plain JSON trees without reference cycles, yet with the default thresholds every few
    hundred allocations trigger a young collection and the store's growth triggers repeated full ones, which
    walk every stored container: measured in-process at 20,000 pods, a quarter to a third of the CPU per write.
    Objects alive after start-up (the seeded nodes) go to the permanent generation, and collections run after
    50,000 net allocations instead of 700. Cyclic garbage (asyncio and aiohttp internals) is still collected.
    Only the ``grove-sim up`` process does this; an embedding process keeps its own policy.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def _exec_image(text: str) -> tuple[str, str]:
    """``PREFIX=COMMAND``, or ``PREFIX`` alone (the containers must then set ``command``)."""
    prefix, sep, command = text.partition("=")
    if not prefix or (sep and not command.strip()):
        raise argparse.ArgumentTypeError(f"expected PREFIX or PREFIX=COMMAND, got {text!r}")
    return prefix, command


def _faults(text: str) -> FaultConfig:
    try:
        raw = Path(text[1:]).read_text(encoding="utf-8") if text.startswith("@") else text
        return parse_faults(json.loads(raw))
    except (OSError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"invalid fault configuration: {exc}") from exc


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog="grove-sim", description="A simulated Kubernetes cluster for Grove.")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="run the simulated API server, nodes and kubelets in the foreground")
    up.add_argument("--kubeconfig", required=True, type=Path, help="where to write the kubeconfig once ready")
    up.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    up.add_argument("--port", type=int, default=0, help="port to listen on (0 = any free port)")
    up.add_argument("--nodes", type=int, default=0, help="number of identical simulated nodes")
    up.add_argument("--gpus-per-node", type=int, default=8, help="nvidia.com/gpu per node with --nodes")
    up.add_argument("--topology", default="block=2,rack=4", help="topology domains for --nodes, e.g. block=2,rack=4")
    up.add_argument("--cluster", type=Path, help="a cluster shape YAML file or an openb node CSV")
    up.add_argument("--ready-delay", type=float, default=0.0, help="seconds from Running to Ready")
    up.add_argument("--delete-delay", type=float, default=0.05, help="seconds before a gracefully deleted pod goes")
    up.add_argument(
        "--exec-image",
        action="append",
        type=_exec_image,
        default=[],
        metavar="PREFIX[=COMMAND]",
        help="run containers whose image starts with PREFIX as local processes: the container's command and args "
        "looked up on PATH, else COMMAND and the args (repeatable)",
    )
    up.add_argument(
        "--restart-backoff",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="kubelet's crash-loop backoff: a failed container's second restart waits this long, doubling (default 10)",
    )
    up.add_argument(
        "--max-restart-backoff", type=float, default=300.0, metavar="SECONDS", help="cap of that backoff (default 300)"
    )
    up.add_argument(
        "--audit-log-path",
        default=None,
        metavar="PATH",
        help="append one audit event per request (JSON lines, as kube-apiserver's --audit-log-path)",
    )
    up.add_argument(
        "--authorization-mode",
        choices=MODES,
        default="AlwaysAllow",
        help="AlwaysAllow (default) or RBAC: Roles, ClusterRoles and their bindings decide, as kube-apiserver's",
    )
    up.add_argument(
        "--faults",
        type=_faults,
        default=None,
        metavar="JSON|@FILE",
        help="inject faults from the start (errors, latency, dropped/expired watches, pause; seeded); see "
        "docs/sim-authorization-and-faults.md; change at run time with PUT /sim/faults",
    )
    up.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a CA of the cluster's own; the kubeconfig carries it as certificate-authority-data",
    )
    up.add_argument(
        "--default-scheduler",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="bind pods naming default-scheduler (or no scheduler) as kube-scheduler would (default on)",
    )
    up.add_argument(
        "--hpa-controller",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="scale the targets of HorizontalPodAutoscalers from the pods' simulated usage (default on)",
    )
    up.add_argument(
        "--hpa-sync-period",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="seconds between two syncs of each HorizontalPodAutoscaler (default 15)",
    )
    up.add_argument(
        "--event-ttl",
        type=float,
        default=DEFAULT_EVENT_TTL,
        metavar="SECONDS",
        help="Events are deleted this long after their last write (kube-apiserver's --event-ttl; default 3600)",
    )
    up.add_argument("--log-level", default="INFO", help="Python logging level")
    return parser


async def _serve(args: argparse.Namespace, options: SimOptions) -> None:
    server = SimServer(options)
    url = await server.start(args.host, args.port)
    tune_gc()
    write_kubeconfig(args.kubeconfig, url, ca_data=server.ca_pem)
    logging.getLogger("grove_sim").info("grove-sim serving %s (kubeconfig %s)", url, args.kubeconfig)
    print(f"grove-sim ready: {url} kubeconfig={args.kubeconfig}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()


def options_from_args(args: argparse.Namespace) -> SimOptions:
    """The ``SimOptions`` of parsed ``grove-sim up`` arguments; raises ClusterShapeError or OSError for a bad
    cluster shape."""
    nodes = []
    if args.cluster is not None:
        nodes = nodes_from_file(args.cluster)
    if args.nodes:
        nodes += nodes_from_flags(args.nodes, args.gpus_per_node, args.topology)
    return SimOptions(
        nodes=nodes,
        ready_delay=args.ready_delay,
        delete_delay=args.delete_delay,
        exec_images=dict(args.exec_image),
        restart_backoff=args.restart_backoff,
        max_restart_backoff=args.max_restart_backoff,
        audit_log=args.audit_log_path,
        authorization_mode=args.authorization_mode,
        faults=args.faults,
        tls=args.tls,
        default_scheduler=args.default_scheduler,
        hpa_controller=args.hpa_controller,
        hpa_sync_period=args.hpa_sync_period,
        event_ttl=args.event_ttl,
    )


def options(flags: Sequence[str]) -> SimOptions:
    """The ``SimOptions`` that ``grove-sim up FLAGS`` would run with, so an embedded server (``SimCluster``) and a
    ``grove-sim`` process are set up by the same flags."""
    return options_from_args(build_parser().parse_args(["up", "--kubeconfig", os.devnull, *flags]))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``grove-sim`` console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        sim_options = options_from_args(args)
    except (ClusterShapeError, OSError) as exc:
        print(f"grove-sim: {exc}", file=sys.stderr)
        return 2
    if os.environ.get("GROVE_EVENT_LOOP", "").strip().lower() == "asyncio":
        asyncio.run(_serve(args, sim_options))
    else:
        uvloop.run(_serve(args, sim_options))  # sockets, timers and callbacks in C: the server is all HTTP
    return 0


if __name__ == "__main__":
    sys.exit(main())
