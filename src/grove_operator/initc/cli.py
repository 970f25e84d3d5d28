"""`grove-initc --podcliques=<parent>:<minAvailable> ...`: wait until every parent PodClique has enough Ready pods.

It reads its namespace and PodGang from the downward-API files in `--pod-info-dir`, watches the pods of that gang
(one label-selected list and watch through `grove_runtime`'s informer, which resumes from the last
resourceVersion and re-lists on 410 Gone) and exits as soon as every parent has at least its minimum of Ready
pods. Configuration is found as kubectl finds it: `--kubeconfig`, `$KUBECONFIG`, then the in-cluster service
account, which in a pod is the PodCliqueSet's token the operator mounts (the per-PCS Role lets it get, list and
watch pods of its namespace, nothing more).

Exit codes: 0 once the parents are ready; 1 when stopped (SIGTERM, SIGINT) before that, so a stopped wait never
lets the pod start; 2 when it cannot start (bad arguments, missing pod-info files, no configuration).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import structlog

from grove_api import labels as glabels
from grove_operator.initc.parents import ParentTracker, Waiting, parse_parents
from grove_runtime import logging as glog
from grove_runtime.client import Client, KubeClient
from grove_runtime.informer import Informer
from grove_runtime.kubeconfig import KubeconfigError
from grove_runtime.resources import PODS

__all__ = [
    "EXIT_SETUP",
    "EXIT_STOPPED",
    "USER_AGENT",
    "PodInfo",
    "main",
    "parse_args",
    "pod_info_dir",
    "read_pod_info",
]

log = structlog.get_logger("grove_operator.initc")


EXIT_STOPPED = 1
EXIT_SETUP = 2
USER_AGENT = "grove-initc"
"""How its requests name themselves (kube-apiserver records it in the audit log)."""
SIM_POD_INFO_ENV = "GROVE_SIM_POD_INFO_DIR"
"""Set by grove-sim for an executable-image process: one sub-directory per downward-API volume of the pod."""


class PodInfoError(Exception):
    """A pod-info file is missing or empty; the message says which and why that matters."""


class PodInfo:
    """The pod's namespace and PodGang, as the downward API wrote them."""

    def __init__(self, namespace: str, podgang: str) -> None:
        self.namespace = namespace
        self.podgang = podgang


def pod_info_dir(explicit: str | None, env: Mapping[str, str] | None = None) -> Path:
    """`--pod-info-dir`, else grove-sim's stand-in for the pod-info volume, else its mount path in a pod."""
    env = os.environ if env is None else env
    if explicit:
        return Path(explicit)
    if env.get(SIM_POD_INFO_ENV):
        return Path(env[SIM_POD_INFO_ENV]) / glabels.INIT_POD_INFO_VOLUME
    return Path(glabels.INIT_POD_INFO_MOUNT_PATH)


def read_pod_info(directory: Path) -> PodInfo:
    """The namespace and PodGang files; raises PodInfoError when either is missing or empty."""
    values = []
    for file in (glabels.INIT_POD_INFO_NAMESPACE_FILE, glabels.INIT_POD_INFO_PODGANG_FILE):
        path = directory / file
        try:
            value = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise PodInfoError(f"cannot read {path}: {exc.strerror or exc} (is the pod-info volume mounted?)") from exc
        if not value:
            raise PodInfoError(f"{path} is empty (the pod has no {glabels.LABEL_PODGANG} label?)")
        values.append(value)
    return PodInfo(namespace=values[0], podgang=values[1])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; bad arguments exit 2 with a usage line, as argparse does."""
    parser = argparse.ArgumentParser(prog="grove-initc", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--podcliques",
        action="append",
        default=[],
        metavar="NAME:MIN",
        help="a parent PodClique and how many of its pods must be Ready (repeatable; comma-separated lists too)",
    )
    parser.add_argument(
        "--pod-info-dir",
        default=None,
        help=f"directory with the {glabels.INIT_POD_INFO_NAMESPACE_FILE!r} and {glabels.INIT_POD_INFO_PODGANG_FILE!r} "
        f"files (default: {glabels.INIT_POD_INFO_MOUNT_PATH}; under grove-sim, ${SIM_POD_INFO_ENV}/"
        f"{glabels.INIT_POD_INFO_VOLUME})",
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig file (default: the first of $KUBECONFIG, in-cluster service account, ~/.kube/config)",
    )
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    try:
        args.parents = parse_parents(args.podcliques)
    except ValueError as exc:
        parser.error(str(exc))
    return args


async def wait_for_parents(client: Client, info: PodInfo, parents: Mapping[str, int]) -> None:
    """Return once every parent has its minimum of Ready pods in the gang (one informer, cancelled on return)."""
    bound = log.bind(namespace=info.namespace, podgang=info.podgang)

    def report(waiting: Waiting) -> None:
        if waiting:
            rows = [{"podclique": name, "ready": ready, "needed": needed} for name, (ready, needed) in waiting.items()]
            bound.info("waiting for parent podcliques", waiting=rows)

    tracker = ParentTracker(parents, on_change=report)
    selector = f"{glabels.LABEL_PODGANG}={info.podgang}"
    informer = Informer(client, PODS, namespace=info.namespace, label_selector=selector)
    informer.add_handler(tracker)
    task = asyncio.get_running_loop().create_task(informer.run(), name="grove-initc-pods")
    try:
        synced = asyncio.ensure_future(informer.wait_synced())
        await asyncio.wait({synced, task}, return_when=asyncio.FIRST_COMPLETED)
        synced.cancel()
        tracker.refresh()
        await tracker.done.wait()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    bound.info("parent podcliques ready", parents=dict(parents), lists=informer.lists, watches=informer.watches)


async def run(args: argparse.Namespace, info: PodInfo) -> int:
    """Wait for the parents unless stopped first; the process exit code."""
    client = KubeClient.from_kubeconfig_light(args.kubeconfig, user_agent=USER_AGENT)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    waiter = loop.create_task(wait_for_parents(client, info, args.parents))
    stopper = loop.create_task(stop.wait())
    try:
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if waiter.done():
            waiter.result()
            return 0
        log.info("stopped before the parents were ready", namespace=info.namespace, podgang=info.podgang)
        return EXIT_STOPPED
    finally:
        for task in (waiter, stopper):
            task.cancel()
        await asyncio.gather(waiter, stopper, return_exceptions=True)
        await client.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point `grove-initc`."""
    args = parse_args(argv)
    glog.configure(args.log_level)
    try:
        info = read_pod_info(pod_info_dir(args.pod_info_dir))
        return asyncio.run(run(args, info))
    except (PodInfoError, KubeconfigError) as exc:
        print(f"grove-initc: {exc}", file=sys.stderr)
        return EXIT_SETUP


if __name__ == "__main__":
    sys.exit(main())
