"""Requests the PodClique reconciler does not send: status writes from a cache known to be stale, and status
writes that would change nothing."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from grove_operator.config import OperatorConfig
from grove_operator.desired.podclique import build_standalone_podclique
from grove_operator.kinds import PODCLIQUES, PODCLIQUESETS
from grove_operator.parsed import defaulted_podcliqueset
from grove_operator.podclique.reconciler import STATUS_HOLD
from grove_operator.podcliqueset.reconciler import FIRST_STATUS_GRACE
from grove_operator.reconcile.failures import ComponentError
from grove_operator.wiring import MANAGED_SELECTOR, build
from grove_runtime import errors
from grove_runtime.clock import FakeClock
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import PODS, ResourceType

Obj = dict[str, Any]
NS = "ns"

PCS: Obj = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "PodCliqueSet",
    "metadata": {"name": "s", "namespace": NS, "uid": "pcs-uid", "generation": 1, "resourceVersion": "1"},
    "spec": {
        "replicas": 1,
        "template": {
            "cliques": [
                {
                    "name": "w",
                    "spec": {
                        "roleName": "w",
                        "replicas": 2,
                        "minAvailable": 2,
                        "podSpec": {"containers": [{"name": "c", "image": "busybox"}]},
                    },
                }
            ]
        },
    },
}


class RecordingClient:
    """Answers creates with the object sent and patches with an empty object; records every write."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, str, str | None, Any]] = []  # (verb, resource, name, subresource, body)

    async def create(self, rt: ResourceType, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        out = copy.deepcopy(dict(obj))
        meta = out["metadata"]
        if not meta.get("name"):
            meta["name"] = f"{meta['generateName']}{len(self.writes)}"
        self.writes.append(("create", rt.plural, str(out["metadata"].get("name")), None, out))
        return out

    async def patch(
        self,
        rt: ResourceType,
        name: str,
        body: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        namespace: str = "",
        **kwargs: Any,
    ) -> Obj:
        self.writes.append(("patch", rt.plural, name, kwargs.get("subresource"), body))
        return {}

    def status_writes(self) -> list[Any]:
        return [body for verb, res, _, sub, body in self.writes if (res, sub) == ("podcliques", "status")]


@dataclass
class Setup:
    """The operator assembled against a recording client, one PodCliqueSet and its standalone PodClique cached."""

    app: Any
    reconciler: Any
    pclq: Obj
    key: ObjectKey


def set_up(client: RecordingClient, clock: FakeClock, pcs_raw: Obj = PCS) -> Setup:
    app = build(OperatorConfig(leader_elect=False, metrics_port=None), client, clock=clock)  # type: ignore[arg-type]
    pclq = build_standalone_podclique(defaulted_podcliqueset(pcs_raw), 0, "w")
    pclq["metadata"].update(uid="pclq-uid", generation=1, resourceVersion="2")
    app.cache.informer(PODCLIQUESETS).store.upsert(copy.deepcopy(pcs_raw))
    app.cache.informer(PODCLIQUES).store.upsert(pclq)
    return Setup(app, app.controllers["podclique"].reconciler, pclq, ObjectKey(NS, pclq["metadata"]["name"]))


async def test_status_waits_for_created_pods_and_skips_unchanged_status() -> None:
    """The reconcile that creates pods writes no status (its cache has none of them yet); the next one, with the
    pods observed, writes one; a reconcile that finds nothing changed writes none."""
    client = RecordingClient()
    setup = set_up(client, FakeClock())
    app, reconciler, pclq, key = setup.app, setup.reconciler, setup.pclq, setup.key

    await reconciler.reconcile(key)
    created = [body for verb, res, _, _, body in client.writes if (verb, res) == ("create", "pods")]
    assert len(created) == 2
    assert client.status_writes() == []

    pods = app.cache.informer(PODS, label_selector=MANAGED_SELECTOR)
    for pod in created:
        pod["metadata"].update(uid=f"uid-{pod['metadata']['name']}", resourceVersion="3")
        pods.store.upsert(pod)
        app.expectations.creation_observed(key)
    await reconciler.reconcile(key)
    [written] = client.status_writes()
    assert written["status"]["replicas"] == 2

    pclq = {**pclq, "metadata": {**pclq["metadata"], "resourceVersion": "4"}, "status": written["status"]}
    app.cache.informer(PODCLIQUES).store.upsert(pclq)
    before = len(client.writes)
    await reconciler.reconcile(key)
    assert client.status_writes() == [written]
    assert [w for w in client.writes[before:] if w[1] != "events"] == []


async def test_status_waits_for_lost_pod_events_only_briefly() -> None:
    """A pod whose watch events never arrive (created and deleted between two relists of a broken watch) holds
    the status write for `STATUS_HOLD` only: the reconcile that created it asks to run again then, and that one
    writes the status from the cache, while the pod count stays trusted only once the expectations time out."""
    clock = FakeClock()
    client = RecordingClient()
    setup = set_up(client, clock)
    app, reconciler, key = setup.app, setup.reconciler, setup.key

    first = await reconciler.reconcile(key)
    assert first.requeue_after == pytest.approx(STATUS_HOLD)
    assert client.status_writes() == []
    pods = app.cache.informer(PODS, label_selector=MANAGED_SELECTOR)
    [kept, _lost] = [body for verb, res, _, _, body in client.writes if (verb, res) == ("create", "pods")]
    kept["metadata"].update(uid="uid-kept", resourceVersion="3")
    pods.store.upsert(kept)
    app.expectations.creation_observed(key)  # the other pod's events are lost

    clock.advance(STATUS_HOLD / 2)
    await reconciler.reconcile(key)
    assert client.status_writes() == []
    clock.advance(STATUS_HOLD / 2)
    await reconciler.reconcile(key)
    [written] = client.status_writes()
    assert written["status"]["replicas"] == 1
    creates = sum(1 for verb, res, *_ in client.writes if (verb, res) == ("create", "pods"))
    assert creates == 2, "no pod is created again while the expectations have not timed out"


class RefusingClient(RecordingClient):
    """Refuses every pod creation, as an admission webhook or a quota would."""

    async def create(self, rt: ResourceType, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        if rt.plural == "pods":
            self.writes.append(("create", rt.plural, "", None, obj))
            raise errors.Forbidden("pods are forbidden: exceeded quota")
        return await super().create(rt, obj, namespace)


async def test_refused_pod_creation_costs_one_request_and_records_the_error() -> None:
    """Slow start: with every creation refused, a 16-pod PodClique sends one create, not sixteen, gives the other
    expectations back, and reports the failure in its status."""
    client = RefusingClient()
    pcs_raw = copy.deepcopy(PCS)
    pcs_raw["spec"]["template"]["cliques"][0]["spec"].update(replicas=16, minAvailable=1)
    setup = set_up(client, FakeClock(), pcs_raw)
    app, reconciler, key = setup.app, setup.reconciler, setup.key
    with pytest.raises(ComponentError):
        await reconciler.reconcile(key)
    assert [w for w in client.writes if w[:2] == ("create", "pods")] == [client.writes[0]]
    assert app.expectations.satisfied(key)
    [written] = client.status_writes()
    assert written["status"]["lastErrors"][0]["code"] == "ERR_SYNC_POD"
    assert "exceeded quota" in written["status"]["lastErrors"][0]["description"]


async def test_a_new_podcliqueset_waiting_for_its_token_writes_no_status_until_the_wait_lasts() -> None:
    """The first reconcile of a new PodCliqueSet creates its token Secret and waits for the token controller: it
    writes no status (one the complete reconcile would replace a moment later). A PodCliqueSet still waiting
    after `FIRST_STATUS_GRACE` gets its status written, so a token that never comes does not hide it."""
    created = datetime(2026, 1, 1, tzinfo=UTC)
    clock = FakeClock(wall=created)
    client = RecordingClient()
    pcs_raw = copy.deepcopy(PCS)
    pcs_raw["metadata"]["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    setup = set_up(client, clock, pcs_raw)
    reconciler = setup.app.controllers["podcliqueset"].reconciler
    key = ObjectKey(NS, "s")

    def pcs_status_writes() -> list[Any]:
        return [body for _, res, _, sub, body in client.writes if (res, sub) == ("podcliquesets", "status")]

    first = await reconciler.reconcile(key)
    assert first.requeue_after, "waits for the token"
    assert any(res == "secrets" for _, res, *_ in client.writes)
    assert pcs_status_writes() == []
    clock.advance(FIRST_STATUS_GRACE.total_seconds() + 1)
    await reconciler.reconcile(key)
    [written] = pcs_status_writes()
    assert "observedGeneration" not in written["status"], "not observed: the reconcile did not get through"
