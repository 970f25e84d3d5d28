"""`grove-operator`: parse flags, build the operator with `wiring.build`, run its manager until stopped.

Configuration is found as kubectl finds it (`--kubeconfig`, `$KUBECONFIG`, in-cluster, `~/.kube/config`). Exit
codes: 0 on SIGTERM/SIGINT, 1 when leadership is lost (a fresh process re-joins the election, as controller-runtime
requires), 2 when it cannot start (bad flags, no configuration, a listener address that cannot be bound).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence

import structlog

from grove_api import dynamo_v1 as v1
from grove_operator.config import (
    DEFAULT_EXEMPT_USERS,
    DEFAULT_MAX_PODS_PER_PODCLIQUESET,
    DEFAULT_SCHEDULER_NAME,
    OperatorConfig,
    WebhookSettings,
)
from grove_operator.wiring import build
from grove_runtime import cmdline, errors
from grove_runtime import logging as glog
from grove_runtime.client import KubeClient
from grove_runtime.health import Address
from grove_runtime.heap import GC_THRESHOLDS, tune_gc
from grove_runtime.kubeconfig import own_namespace
from grove_runtime.leaderelection import LeadershipLost

__all__ = ["GC_THRESHOLDS", "add_webhook_flags", "main", "parse_args", "run", "tune_gc", "webhook_settings"]

log = structlog.get_logger("grove_operator.cli")


HEALTH_PORT = 2751
METRICS_PORT = 2752
WEBHOOK_PORT = 9443


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line of grove-operator."""
    parser = argparse.ArgumentParser(prog="grove-operator", description=__doc__.splitlines()[0] if __doc__ else None)
    cmdline.add_kubeconfig_flag(parser)
    cmdline.add_listener_flags(
        parser,
        health=Address(cmdline.LOOPBACK, HEALTH_PORT),
        metrics=Address(cmdline.LOOPBACK, METRICS_PORT),
        health_note=f" (default: {cmdline.LOOPBACK}:{HEALTH_PORT})",
    )
    cmdline.add_leader_election_flags(parser, lease_name=OperatorConfig().lease.name)
    parser.add_argument("--default-scheduler-name", default=DEFAULT_SCHEDULER_NAME)
    parser.add_argument(
        "--initc-image",
        default=None,
        help="image repository of the grove-initc init container, tagged with the operator's version (default: "
        "$GROVE_INIT_CONTAINER_IMAGE, else grove-initc); a reference with a tag or digest is used as given",
    )
    parser.add_argument("--namespace", default=None, help="watch only this namespace (default: all)")
    parser.add_argument("--pcs-workers", type=int, default=10)
    parser.add_argument("--pclq-workers", type=int, default=10)
    parser.add_argument("--pcsg-workers", type=int, default=5)
    parser.add_argument("--podgang-workers", type=int, default=5)
    parser.add_argument(
        "--first-api", choices=("auto", "on", "off"), default="auto",
        help="run the controllers of grove.dynamo.ai/v1 PodGangSets (auto: when the cluster serves that group)",
    )  # fmt: skip
    parser.add_argument(
        "--max-pods-per-podcliqueset",
        type=int,
        default=DEFAULT_MAX_PODS_PER_PODCLIQUESET,
        help="refuse (lastErrors, Warning Event) a PodCliqueSet, scaling group or PodClique asking for more pods",
    )
    add_webhook_flags(parser)
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    args.lease = cmdline.lease_settings(parser, args)
    return args


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535; 0: any free port)")
    return int(text)


def add_webhook_flags(parser: argparse.ArgumentParser) -> None:
    """The admission webhooks: where they listen, where their certificate is, how they are registered."""
    group = parser.add_argument_group("admission webhooks")
    group.add_argument(
        "--webhooks", action=argparse.BooleanOptionalAction, default=True,
        help="serve the admission webhooks and register their configurations (default: on)",
    )  # fmt: skip
    group.add_argument(
        "--webhook-port", type=_port, default=WEBHOOK_PORT, help=f"HTTPS port (default {WEBHOOK_PORT}; 0: any free)"
    )
    group.add_argument(
        "--webhook-bind-address", default=cmdline.LOOPBACK, metavar="HOST",
        help=f"address to listen on (default {cmdline.LOOPBACK}; 0.0.0.0: every interface)",
    )  # fmt: skip
    group.add_argument(
        "--webhook-namespace", default=own_namespace(),
        help="namespace of the certificate Secret and the webhook Service (default: as --lease-namespace)",
    )  # fmt: skip
    group.add_argument("--webhook-secret-name", default=WebhookSettings().secret_name, help="the certificate Secret")
    group.add_argument(
        "--webhook-cert-dir", default=None, metavar="DIR",
        help="serve tls.crt/tls.key (CA bundle: ca.crt) from DIR instead of a generated certificate in the Secret",
    )  # fmt: skip
    group.add_argument(
        "--webhook-service-name", default=None, metavar="NAME",
        help="register the webhooks through this Service (cluster mode; only the CA bundle is injected into "
        "existing configurations) instead of a URL of the local listener",
    )  # fmt: skip
    group.add_argument("--webhook-service-port", type=_port, default=443, help="port of --webhook-service-name")
    group.add_argument(
        "--authorizer", action=argparse.BooleanOptionalAction, default=False,
        help="refuse changes to objects the operator manages by anyone but the operator and exempt users",
    )  # fmt: skip
    group.add_argument(
        "--authorizer-exempt-user", action="append", default=None, metavar="USER",
        help="a user the authorizer lets change managed objects (repeatable; default: the garbage collector, the "
        "HPA controller and kube-controller-manager)",
    )  # fmt: skip
    group.add_argument(
        "--topology-aware-scheduling", action=argparse.BooleanOptionalAction, default=True,
        help="accept topology constraints on PodCliqueSets (default: on)",
    )  # fmt: skip


def webhook_settings(args: argparse.Namespace) -> WebhookSettings | None:
    """The webhook settings the flags describe (None with --no-webhooks)."""
    if not args.webhooks:
        return None
    exempt = tuple(args.authorizer_exempt_user) if args.authorizer_exempt_user is not None else DEFAULT_EXEMPT_USERS
    return WebhookSettings(
        host=args.webhook_bind_address,
        port=args.webhook_port,
        namespace=args.webhook_namespace,
        secret_name=args.webhook_secret_name,
        cert_dir=args.webhook_cert_dir,
        service_name=args.webhook_service_name,
        service_port=args.webhook_service_port,
        authorizer=args.authorizer,
        exempt_users=exempt,
    )


def config_from_args(args: argparse.Namespace) -> OperatorConfig:
    """The OperatorConfig the flags describe."""
    return OperatorConfig(
        pcs_workers=args.pcs_workers,
        pclq_workers=args.pclq_workers,
        pcsg_workers=args.pcsg_workers,
        podgang_workers=args.podgang_workers,
        default_scheduler_name=args.default_scheduler_name,
        init_container_image=OperatorConfig.init_image(args.initc_image),
        watch_namespace=args.namespace,
        leader_elect=args.leader_elect,
        lease=args.lease,
        health_host=args.health.host if args.health is not None else cmdline.LOOPBACK,
        metrics_host=args.metrics.host if args.metrics is not None else cmdline.LOOPBACK,
        metrics_port=args.metrics.port if args.metrics is not None else None,
        max_pods_per_podcliqueset=args.max_pods_per_podcliqueset,
        topology_aware_scheduling=args.topology_aware_scheduling,
        webhooks=webhook_settings(args),
        first_api=args.first_api != "off",
    )


async def first_api_served(client: KubeClient) -> bool:
    """Whether the cluster serves `grove.dynamo.ai/v1` (its CRDs are optional: upstream's alone are enough)."""
    try:
        await client.request("GET", f"/apis/{v1.API_VERSION}")
    except errors.NotFound:
        log.info("first API not installed, its controllers stay off", group=v1.API_VERSION)
        return False
    return True


async def run(args: argparse.Namespace) -> int:
    """Run the operator until a stop is requested; the process exit code."""
    config = config_from_args(args)
    client = await KubeClient.from_kubeconfig(args.kubeconfig)
    try:
        if args.first_api == "auto":
            config = dataclasses.replace(config, first_api=await first_api_served(client))
        app = build(config, client, health_port=args.health.port if args.health is not None else None)
        app.manager.freeze_heap_when_synced = True
        await app.manager.run()
    except LeadershipLost as exc:
        log.error("leadership lost, exiting", error=str(exc))
        return 1
    finally:
        await client.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point `grove-operator`."""
    args = parse_args(argv)
    glog.configure(args.log_level)
    tune_gc()
    return cmdline.run_program("grove-operator", run(args))


if __name__ == "__main__":
    sys.exit(main())
