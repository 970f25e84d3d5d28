"""The chaos observer catches a broken build: a gang bound below its minimum (part of it bound directly through the
API, as a scheduler that does not roll back a failed gang bind would leave it), a node over-committed by hand, a
duplicated pod index and a leftover of a deleted PodCliqueSet. A fake clock drives the recovery window."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from benchmarks.chaos.observer import PCLQ, PCS, PODGANGS, Observer, observing

from grove_api.labels import LABEL_PART_OF, LABEL_PODCLIQUE, LABEL_PODCLIQUE_POD_INDEX
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.resources import CRDS, NODES, PODS

WINDOW = 30.0
_POD_SPEC = {"containers": [{"name": "c", "image": "x"}]}
_CLIQUE = {"name": "w", "spec": {"roleName": "w", "replicas": 2, "podSpec": _POD_SPEC}}


async def _crds(kube: KubeClient, root: Path) -> None:
    for path in sorted((root / "crds").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                with contextlib.suppress(errors.AlreadyExists):
                    await kube.create(CRDS, doc)
    async with asyncio.timeout(30):  # only guards against a hang
        while True:
            try:
                await kube.list(PCS, "default")
                return
            except errors.NotFound:
                await asyncio.sleep(0.1)


def _pod(name: str, namespace: str, cpu: str, **labels: str) -> dict[str, Any]:
    container = {"name": "c", "image": "registry.example.com/x:1", "resources": {"requests": {"cpu": cpu}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"schedulerName": "nobody", "containers": [container]}}  # fmt: skip


async def _until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(30):  # only guards against a hang
        while not condition():  # noqa: ASYNC110 - the observer's cache has no event to wait on
            await asyncio.sleep(0.05)


async def test_observer_reports_a_partly_bound_gang_after_the_window_and_an_over_committed_node(
    kube: KubeClient, namespace: str, repo_root: Path
) -> None:
    """One pod of a two-pod gang bound by hand: nothing before the recovery window, a violation after it; a pod
    bound to a node too small for it: an over-committed node."""
    await _crds(kube, repo_root)
    owner = f"broken-{uuid.uuid4().hex[:6]}"
    await kube.create(PCS, {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
                            "metadata": {"name": owner, "namespace": namespace},
                            "spec": {"replicas": 1, "template": {"cliques": [_CLIQUE]}}})  # fmt: skip
    for name in ("p0", "p1"):
        await kube.create(PODS, _pod(name, namespace, "100m", **{LABEL_PART_OF: owner}))
    refs = [{"namespace": namespace, "name": name} for name in ("p0", "p1")]
    await kube.create(PODGANGS, {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang",
                                 "metadata": {"name": f"{owner}-0", "namespace": namespace,
                                              "labels": {LABEL_PART_OF: owner}},
                                 "spec": {"podgroups": [{"name": "w", "minReplicas": 2,
                                                         "podReferences": refs}]}})  # fmt: skip
    node = (await kube.list(NODES))["items"][0]["metadata"]["name"]
    await kube.bind(namespace, "p0", node)
    now = [0.0]
    observer = Observer(kube, recovery_window=WINDOW, clock=lambda: now[0])
    async with observing(observer, period=3600):
        await _until(lambda: bool(observer.gangs_seen) and observer.gang_state(
            observer.objects["podgangs"][f"{namespace}/{owner}-0"])[0] == 1)  # fmt: skip
        observer.check()
        now[0] += WINDOW / 2
        observer.check()
        assert [v.invariant for v in observer.violations] == []
        now[0] += WINDOW
        observer.check()
        assert [(v.invariant, v.subject) for v in observer.violations] == [
            ("gang-below-minimum", f"{namespace}/{owner}-0")
        ]
        await kube.create(PODS, _pod("hog", namespace, "100000"))
        await kube.bind(namespace, "hog", node)

        def refused() -> bool:
            observer.check()
            return any(v.invariant == "node-over-committed" for v in observer.violations)

        await _until(refused)
    assert any(v.subject == node for v in observer.violations if v.invariant == "node-over-committed")


async def test_observer_reports_duplicate_indices_orphans_and_leftovers(
    kube: KubeClient, namespace: str, repo_root: Path
) -> None:
    """A PodClique of two replicas whose pods both carry index 0, and whatever is left in a namespace whose
    PodCliqueSets are gone: each is reported. (An orphan cannot be staged: grove-sim's garbage collector deletes a
    dependent of a missing owner at once, as kube-controller-manager's does.)"""
    await _crds(kube, repo_root)
    clique = await kube.create(PCLQ, {"apiVersion": "grove.io/v1alpha1", "kind": "PodClique",
                                      "metadata": {"name": "q", "namespace": namespace},
                                      "spec": {"roleName": "q", "replicas": 2,
                                               "podSpec": {"containers": [{"name": "c", "image": "x"}]}}})  # fmt: skip
    owned = {"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "name": "q", "uid": clique["metadata"]["uid"]}
    for name in ("a", "b"):
        body = _pod(name, namespace, "10m", **{LABEL_PODCLIQUE: "q", LABEL_PODCLIQUE_POD_INDEX: "0"})
        body["metadata"]["ownerReferences"] = [owned]
        await kube.create(PODS, body)
    observer = Observer(kube)
    async with observing(observer, period=3600):
        await _until(lambda: len(observer.in_namespace("pods", namespace)) == 2)
        observer.check_converged(namespace)
        observer.check_leaks(namespace)
    found = {(v.invariant, v.subject) for v in observer.violations}
    assert ("pod-index", f"{namespace}/q") in found
    assert ("leaked", f"pclq {namespace}/q") in found
