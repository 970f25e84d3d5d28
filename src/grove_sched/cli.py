"""`grove-scheduler`: parse flags, configure JSON logging, build the scheduler and run it until told to stop.

Configuration is found as kubectl finds it (`--kubeconfig`, `$KUBECONFIG`, in-cluster, `~/.kube/config`). Exit
codes: 0 after SIGTERM/SIGINT, 1 when the Lease was lost (the process must restart to re-join the election, as
controller-runtime prescribes) or a component crashed, 2 when it cannot start (bad flags, no configuration, a
listener address that cannot be bound).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import structlog

from grove_runtime import cmdline
from grove_runtime import logging as grove_logging
from grove_runtime.client import KubeClient
from grove_runtime.health import Address
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
    parser.add_argument("--scheduler-name", default=defaults.scheduler_name, help="spec.schedulerName to serve")
    cmdline.add_listener_flags(
        parser,
        health=None,
        metrics=Address(defaults.metrics_host, defaults.metrics_port or 0),
        health_note=" (default: on the metrics listener)",
    )
    parser.add_argument(
        "--leader-elect", action=argparse.BooleanOptionalAction, default=defaults.leader_elect, help="use a Lease"
    )
    parser.add_argument("--lease-name", default=defaults.lease_name)
    cmdline.add_lease_namespace_flag(parser)
    parser.add_argument(
        "--leader-elect-lease-duration",
        type=float,
        default=defaults.lease_duration,
        help="seconds a candidate waits after the last renewal it saw before taking the Lease over",
    )
    parser.add_argument(
        "--leader-elect-renew-deadline",
        type=float,
        default=defaults.renew_deadline,
        help="seconds the leader keeps acting without a successful renewal (less than the lease duration)",
    )
    parser.add_argument(
        "--leader-elect-retry-period",
        type=float,
        default=defaults.retry_period,
        help="seconds between attempts to acquire or renew the Lease",
    )
    parser.add_argument("--bind-concurrency", type=int, default=defaults.bind_concurrency)
    parser.add_argument(
        "--inline-solve-limit",
        type=float,
        default=defaults.inline_solve_limit,
        help="solve on the event loop while solves take at most this many CPU seconds (0: always in a worker thread)",
    )
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    if not args.leader_elect_lease_duration > args.leader_elect_renew_deadline > args.leader_elect_retry_period > 0:
        parser.error(
            "need --leader-elect-lease-duration > --leader-elect-renew-deadline > --leader-elect-retry-period > 0"
        )
    metrics: Address | None = args.metrics
    separate = hasattr(args, "health")
    health: Address | None = args.health if separate else None
    return SchedulerConfig(
        scheduler_name=args.scheduler_name,
        kubeconfig=args.kubeconfig,
        metrics_host=metrics.host if metrics is not None else defaults.metrics_host,
        metrics_port=metrics.port if metrics is not None else None,
        probes_with_metrics=not separate,
        health_host=health.host if health is not None else defaults.health_host,
        health_port=health.port if health is not None else None,
        leader_elect=args.leader_elect,
        lease_name=args.lease_name,
        lease_namespace=args.lease_namespace,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        bind_concurrency=args.bind_concurrency,
        inline_solve_limit=args.inline_solve_limit,
        log_level=args.log_level,
    )


async def run(config: SchedulerConfig) -> int:
    """Run one scheduler process; returns the exit code."""
    client = await KubeClient.from_kubeconfig(config.kubeconfig)
    try:
        app = build(config, client)
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
    sys.exit(cmdline.run_program("grove-scheduler", run(config)))


if __name__ == "__main__":
    main()
