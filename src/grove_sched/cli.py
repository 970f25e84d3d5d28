"""`grove-scheduler`: parse flags, configure JSON logging, build the scheduler and run it until told to stop.

Configuration is found as kubectl finds it (`--kubeconfig`, `$KUBECONFIG`, in-cluster, `~/.kube/config`). Exit
codes: 0 after SIGTERM/SIGINT, 1 when the Lease was lost (the process must restart to re-join the election, as
controller-runtime prescribes) or a component crashed, 2 when it cannot start (bad flags, no configuration, a
listener address that cannot be bound).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence

import structlog

from grove_runtime import cmdline
from grove_runtime import logging as grove_logging
from grove_runtime.client import KubeClient
from grove_runtime.health import Address
from grove_runtime.heap import tune_gc
from grove_runtime.leaderelection import LeadershipLost
from grove_sched.app import build
from grove_sched.config import SchedulerConfig

__all__ = ["main", "parse_args"]

log = structlog.get_logger("grove_sched.cli")


def parse_args(argv: Sequence[str] | None = None) -> SchedulerConfig:
    """Flags → configuration."""
    defaults = SchedulerConfig()
    parser = argparse.ArgumentParser(prog="grove-scheduler", description="CP-SAT gang scheduler for Grove PodGangs.")
    cmdline.add_kubeconfig_flag(parser)
    parser.add_argument(
        "--scheduler-name",
        action="append",
        default=None,
        help=f"spec.schedulerName to serve; repeat to serve several (e.g. kai-scheduler, koord-scheduler) "
        f"(default: {defaults.scheduler_name})",
    )
    cmdline.add_listener_flags(
        parser,
        health=None,
        metrics=Address(defaults.metrics_host, defaults.metrics_port or 0),
        health_note=" (default: on the metrics listener)",
    )
    cmdline.add_leader_election_flags(parser, lease_name=defaults.lease.name)
    parser.add_argument("--bind-concurrency", type=int, default=defaults.bind_concurrency)
    parser.add_argument(
        "--inline-solve-limit",
        type=float,
        default=defaults.inline_solve_limit,
        help="solve on the event loop while solves take at most this many CPU seconds (0: always in a worker thread)",
    )
    parser.add_argument(
        "--lookahead-gangs",
        type=int,
        default=defaults.lookahead_gangs,
        help="choose among a gang's good placements the one that leaves the most room for this many gangs queued "
        "behind it (0: off; each placement then costs greedy rollouts of the queue)",
    )
    parser.add_argument(
        "--default-topology-levels",
        default=",".join(defaults.placement.default_levels),
        help="node label keys, broadest first, of the topology hierarchy used for gangs whose PodGang names no "
        "ClusterTopologyBinding the scheduler can use (comma-separated)",
    )
    parser.add_argument(
        "--status-settle",
        type=float,
        default=defaults.status_settle,
        help="seconds a PodGang status that is still moving (no verdict yet, or scheduled but not Running) waits "
        "before it is written, so one write carries the gang's outcome (0: write every state as it arrives)",
    )
    parser.add_argument(
        "--preemption",
        action=argparse.BooleanOptionalAction,
        default=defaults.preemption,
        help="preempt lower-priority whole gangs for a gang that does not fit",
    )
    parser.add_argument(
        "--preemption-eviction",
        choices=("delete", "evict"),
        default=defaults.preemption_eviction,
        help="remove victims by graceful DELETE or through the Eviction API (honours PodDisruptionBudgets)",
    )
    parser.add_argument(
        "--defrag-report",
        action=argparse.BooleanOptionalAction,
        default=defaults.defrag_report,
        help="for a gang that does not fit only because free capacity is scattered, report (Event, log, metrics) "
        "the fewest lower-priority gangs whose move would let it fit; nothing is moved",
    )
    parser.add_argument(
        "--default-queue",
        default=defaults.default_queue,
        help="queue of gangs without a kai.scheduler/queue label (queues apply once a scheduling.run.ai Queue exists)",
    )
    parser.add_argument(
        "--queue-status-interval",
        type=float,
        default=defaults.queue_status_interval,
        help="seconds between Queue status writes (only changed statuses are written)",
    )
    parser.add_argument(
        "--reservations",
        action=argparse.BooleanOptionalAction,
        default=defaults.reservations,
        help="place and honour Koordinator Reservations (scheduling.koordinator.sh/v1alpha1)",
    )
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    if args.queue_status_interval <= 0:
        parser.error("--queue-status-interval: must be > 0 seconds")
    if args.lookahead_gangs < 0:
        parser.error("--lookahead-gangs: must be >= 0")
    if args.status_settle < 0:
        parser.error("--status-settle: must be >= 0 seconds")
    names = tuple(dict.fromkeys(name.strip() for name in args.scheduler_name or [defaults.scheduler_name]))
    if not all(names):
        parser.error("--scheduler-name: must not be empty")
    levels = tuple(key.strip() for key in args.default_topology_levels.split(",") if key.strip())
    if len(set(levels)) != len(levels):
        parser.error("--default-topology-levels: a key appears twice")
    metrics: Address | None = args.metrics
    separate = hasattr(args, "health")
    health: Address | None = args.health if separate else None
    return SchedulerConfig(
        scheduler_name=names[0],
        extra_scheduler_names=names[1:],
        kubeconfig=args.kubeconfig,
        metrics_host=metrics.host if metrics is not None else defaults.metrics_host,
        metrics_port=metrics.port if metrics is not None else None,
        probes_with_metrics=not separate,
        health_host=health.host if health is not None else defaults.health_host,
        health_port=health.port if health is not None else None,
        leader_elect=args.leader_elect,
        lease=cmdline.lease_settings(parser, args),
        bind_concurrency=args.bind_concurrency,
        inline_solve_limit=args.inline_solve_limit,
        lookahead_gangs=args.lookahead_gangs,
        status_settle=args.status_settle,
        preemption=args.preemption,
        preemption_eviction=args.preemption_eviction,
        defrag_report=args.defrag_report,
        default_queue=args.default_queue,
        queue_status_interval=args.queue_status_interval,
        reservations=args.reservations,
        log_level=args.log_level,
        placement=dataclasses.replace(defaults.placement, default_levels=levels),
    )


async def run(config: SchedulerConfig) -> int:
    """Run one scheduler process; returns the exit code."""
    client = await KubeClient.from_kubeconfig(config.kubeconfig)
    try:
        app = build(config, client)
        app.manager.freeze_heap_when_synced = True
        await app.manager.run()
        return 0
    except LeadershipLost as exc:
        log.error("leadership lost, exiting", lease=str(exc))
        return 1
    finally:
        await client.close()


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point `grove-scheduler`."""
    config = parse_args(argv)
    grove_logging.configure(config.log_level)
    tune_gc()
    sys.exit(cmdline.run_program("grove-scheduler", run(config)))


if __name__ == "__main__":
    main()
