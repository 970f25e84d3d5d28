"""The command-line conventions both programs share: connection, lease and listener flags, and how a program
that cannot start says so.

Why one place: grove-operator and grove-scheduler must read the same flags the same way, as Kubernetes tools do
(controller-runtime's ``--health-probe-bind-address`` and ``--metrics-bind-address``, kubectl's configuration
order), and a setup mistake (no configuration, a port in use) is one line on stderr and exit code 2, never a
traceback.

Listener defaults bind loopback (127.0.0.1), so a program started by hand exposes nothing; a Pod's manifest passes
its pod IP (``--health-probe-bind-address=$(POD_IP):PORT``) for kubelet probes and Prometheus.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
from collections.abc import Coroutine
from typing import Any

import uvloop

from grove_runtime.health import Address, ListenError, parse_bind_address
from grove_runtime.kubeconfig import KubeconfigError, own_namespace
from grove_runtime.leaderelection import LeaseSettings

__all__ = [
    "EVENT_LOOP_ENV",
    "EXIT_SETUP",
    "LOOPBACK",
    "add_kubeconfig_flag",
    "add_leader_election_flags",
    "add_listener_flags",
    "lease_settings",
    "run_event_loop",
    "run_program",
]

LOOPBACK = "127.0.0.1"
EXIT_SETUP = 2
"""Exit code for a program that could not start (bad flags, no configuration, a port that cannot be bound)."""


def add_kubeconfig_flag(parser: argparse.ArgumentParser) -> None:
    """``--kubeconfig PATH``, resolved in kubectl's order when absent."""
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig file (default: the first of $KUBECONFIG, in-cluster service account, ~/.kube/config)",
    )


def add_leader_election_flags(parser: argparse.ArgumentParser, *, lease_name: str) -> None:
    """``--leader-elect``, ``--lease-name``, ``--lease-namespace`` (default: the pod's own namespace in a cluster,
    else grove-system) and kube-scheduler's ``--leader-elect-{lease-duration,renew-deadline,retry-period}``."""
    timing = LeaseSettings(name=lease_name)
    parser.add_argument(
        "--leader-elect", action=argparse.BooleanOptionalAction, default=True, help="run leader election on a Lease"
    )
    parser.add_argument("--lease-name", default=lease_name, help=f"name of the Lease (default: {lease_name})")
    parser.add_argument(
        "--lease-namespace",
        default=own_namespace(),
        help="namespace of the leader-election Lease (default: $POD_NAMESPACE, the service account's namespace "
        "in a pod, else grove-system)",
    )
    parser.add_argument(
        "--leader-elect-lease-duration", type=float, default=timing.lease_duration,
        help="seconds a candidate waits after the last renewal it saw before taking the Lease over",
    )  # fmt: skip
    parser.add_argument(
        "--leader-elect-renew-deadline", type=float, default=timing.renew_deadline,
        help="seconds the leader keeps acting without a successful renewal (less than the lease duration)",
    )  # fmt: skip
    parser.add_argument(
        "--leader-elect-retry-period", type=float, default=timing.retry_period,
        help="seconds between attempts to acquire or renew the Lease",
    )  # fmt: skip


def lease_settings(parser: argparse.ArgumentParser, args: argparse.Namespace) -> LeaseSettings:
    """The Lease the flags of :func:`add_leader_election_flags` describe; inconsistent timings are a usage error."""
    if not args.leader_elect_lease_duration > args.leader_elect_renew_deadline > args.leader_elect_retry_period > 0:
        parser.error(
            "need --leader-elect-lease-duration > --leader-elect-renew-deadline > --leader-elect-retry-period > 0"
        )
    return LeaseSettings(
        name=args.lease_name,
        namespace=args.lease_namespace,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )


def _bind_address(text: str) -> Address | None:
    try:
        return parse_bind_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _loopback_port(text: str) -> Address:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535; 0: any free port)")
    return Address(LOOPBACK, int(text))


def _address_flags(parser: argparse.ArgumentParser, bind: str, port: str, dest: str, default: Any, what: str) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        bind, dest=dest, metavar="ADDR", type=_bind_address, default=default,
        help=f"{what} at host:port, :port (every interface) or 0 (none)",
    )  # fmt: skip
    group.add_argument(
        port, dest=dest, metavar="PORT", type=_loopback_port, default=default,
        help=f"shorthand for {bind} {LOOPBACK}:PORT (0: any free port)",
    )  # fmt: skip


def add_listener_flags(
    parser: argparse.ArgumentParser, *, health: Address | None, metrics: Address, health_note: str = ""
) -> None:
    """``--health-probe-bind-address``/``--health-port`` into ``args.health`` and ``--metrics-bind-address``/
    ``--metrics-port`` into ``args.metrics``: an :class:`Address`, or None for no listener ("0").

    ``health`` None leaves ``args.health`` unset when neither health flag is given (the program decides).
    """
    health_default: Any = health if health is not None else argparse.SUPPRESS
    _address_flags(
        parser, "--health-probe-bind-address", "--health-port", "health", health_default,
        f"/healthz and /readyz{health_note}",
    )  # fmt: skip
    _address_flags(
        parser, "--metrics-bind-address", "--metrics-port", "metrics", metrics, f"/metrics (default: {metrics})"
    )


EVENT_LOOP_ENV = "GROVE_EVENT_LOOP"
"""`asyncio` runs a program on the standard library's event loop instead of uvloop (for debugging tools that need
it, or to compare)."""


def run_event_loop(main: Coroutine[Any, Any, Any]) -> Any:
    """Run `main` on uvloop (sockets, timers and callbacks in C: the programs are mostly HTTP and watch traffic),
    or on asyncio's own loop when `$GROVE_EVENT_LOOP` is `asyncio`."""
    if os.environ.get(EVENT_LOOP_ENV, "").strip().lower() == "asyncio":
        return asyncio.run(main)
    return uvloop.run(main)


def run_program(prog: str, main: Coroutine[Any, Any, int]) -> int:
    """Run a program's main coroutine; a setup error becomes one line on stderr and :data:`EXIT_SETUP`.

    Once it returns the program only exits, and the interpreter's last garbage collections over every object left
    (caches, OR-Tools, numpy) took most of a second on a busy 2-core machine, after the manager had stopped in
    milliseconds. Freezing the heap skips them; exit handlers (log flushing, a profiler's dump) still run.
    """
    try:
        return int(run_event_loop(main))
    except (KubeconfigError, ListenError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_SETUP
    finally:
        gc.disable()
        gc.freeze()
