"""Bad objects are reported (Event or lastErrors) and never crash the operator or make it fight over objects."""

from __future__ import annotations

from typing import Any

from grove_operator.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS, PODGANGS
from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import EVENTS, PODS

from ._harness import OperatorThread, create_pcs, items, live_pods, load_sample, wait_for

Obj = dict[str, Any]
AGG = "user-guide/01_core-concepts/single-node-aggregated.yaml"
MULTI = "user-guide/01_core-concepts/multi-node-aggregated.yaml"


def _user_podclique(name: str, namespace: str, **metadata: Any) -> Obj:
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "metadata": {"name": name, "namespace": namespace, **metadata},
        "spec": {
            "roleName": "user",
            "replicas": 1,
            "podSpec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    }


async def _event(kube: KubeClient, namespace: str, name: str, reason: str) -> Obj | None:
    for event in await items(kube, EVENTS, namespace):
        if event.get("reason") == reason and event["involvedObject"]["name"] == name:
            return event
    return None


async def test_unmanaged_podclique_gets_an_event_and_no_pods(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """A user-created PodClique is left alone (no pods, no finalizer) and a Warning Event says why."""
    await kube.create(PODCLIQUES, _user_podclique("mine", namespace), namespace)
    event = await wait_for(lambda: _event(kube, namespace, "mine", "PodCliqueNotManaged"), "NotManaged event")
    assert event["type"] == "Warning"
    assert await live_pods(kube, namespace) == []
    assert not (await kube.get(PODCLIQUES, "mine", namespace))["metadata"].get("finalizers")


async def test_podclique_name_taken_by_a_foreign_object_lands_in_last_errors(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """If a PodClique the PCS needs already exists and is not its own, the PCS reports ERR_SYNC_PODCLIQUE."""
    await kube.create(PODCLIQUES, _user_podclique("single-node-aggregated-0-model-worker", namespace), namespace)
    await create_pcs(kube, namespace, load_sample(AGG))

    async def reported() -> Obj | None:
        pcs = await kube.get(PODCLIQUESETS, "single-node-aggregated", namespace)
        errors = (pcs.get("status") or {}).get("lastErrors") or []
        return pcs if any(e["code"] == "ERR_SYNC_PODCLIQUE" for e in errors) else None

    pcs = await reported() or await wait_for(reported, "lastErrors on the PCS")
    assert "not controlled by us" in pcs["status"]["lastErrors"][0]["description"]
    assert await _event(kube, namespace, "single-node-aggregated", "ReconcileError") is not None
    foreign = await kube.get(PODCLIQUES, "single-node-aggregated-0-model-worker", namespace)
    assert not foreign["metadata"].get("ownerReferences"), "the foreign PodClique is never adopted"
    assert await live_pods(kube, namespace) == []


async def test_hand_edited_podgang_is_reverted_with_an_event(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """Editing a PodGang's groups by hand is undone and reported; the scheduler-owned status is untouched."""
    await create_pcs(kube, namespace, load_sample(AGG))
    gang = "single-node-aggregated-0"

    async def initialized() -> Obj | None:
        try:
            pg = await kube.get(PODGANGS, gang, namespace)
        except errors.NotFound:
            return None
        conds = (pg.get("status") or {}).get("conditions") or []
        return pg if any(c["type"] == "Initialized" and c["status"] == "True" for c in conds) else None

    pg = await wait_for(initialized, "gang initialized")
    scheduler_condition = {
        "type": "Scheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "set by a scheduler",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    await kube.patch(
        PODGANGS,
        gang,
        {"status": {"phase": "Starting", "conditions": [*pg["status"]["conditions"], scheduler_condition]}},
        namespace,
        subresource="status",
    )
    groups = pg["spec"]["podgroups"]
    edited = [{**groups[0], "minReplicas": 1, "podReferences": []}]
    await kube.patch(PODGANGS, gang, {"spec": {"podgroups": edited}}, namespace)

    async def reverted() -> Obj | None:
        now = await kube.get(PODGANGS, gang, namespace)
        group = now["spec"]["podgroups"][0]
        return now if group["minReplicas"] == 2 and len(group["podReferences"]) == 2 else None

    pg = await wait_for(reverted, "gang reverted")
    assert await wait_for(lambda: _event(kube, namespace, gang, "PodGangSpecReverted"), "revert event")
    assert pg["status"]["phase"] == "Starting"
    assert any(c["type"] == "Scheduled" and c["reason"] == "Unschedulable" for c in pg["status"]["conditions"])


async def test_podclique_with_missing_parent_is_reported(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """A managed PodClique naming a PodCliqueSet that does not exist gets ParentNotFound and lastErrors, no pods.

    (An owner reference to a missing object would be garbage collected at once, so the PodClique is owned by a
    real PodCliqueSet but claims, by its part-of label, to belong to one that does not exist.)
    """
    real = await create_pcs(kube, namespace, load_sample(AGG))
    ghost = _user_podclique(
        "ghost-0-x",
        namespace,
        labels={"app.kubernetes.io/managed-by": "grove-operator", "app.kubernetes.io/part-of": "ghost"},
        ownerReferences=[
            {
                "apiVersion": "grove.io/v1alpha1",
                "kind": "PodCliqueSet",
                "name": real["metadata"]["name"],
                "uid": real["metadata"]["uid"],
                "controller": True,
            }
        ],
    )
    await kube.create(PODCLIQUES, ghost, namespace)
    event = await wait_for(lambda: _event(kube, namespace, "ghost-0-x", "ParentNotFound"), "ParentNotFound event")
    assert "ghost" in event["message"]

    async def last_error() -> list[Obj] | None:
        obj = await kube.get(PODCLIQUES, "ghost-0-x", namespace)
        return (obj.get("status") or {}).get("lastErrors")

    errors_ = await wait_for(last_error, "lastErrors on the orphan")
    assert errors_[0]["code"] == "ERR_MISSING_PARENT"
    pods = await items(kube, PODS, namespace)
    assert not [p for p in pods if p["metadata"]["labels"].get("grove.io/podclique") == "ghost-0-x"]


async def test_scaling_group_naming_an_unknown_clique_is_reported_once_and_not_retried(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """A scaling group naming a clique the template lacks (valid by the CRD) gives the PodCliqueSet a lastErrors
    entry naming the field and a Warning Event, and creates nothing; nothing is retried in a loop (issue #13, 5:
    it used to raise ValueError on every retry, silently)."""
    pcs = load_sample(MULTI)
    pcs["spec"]["template"]["podCliqueScalingGroups"][0]["cliqueNames"] = ["leader", "nosuch"]
    await create_pcs(kube, namespace, pcs)
    name = pcs["metadata"]["name"]

    async def last_errors() -> list[Obj] | None:
        obj = await kube.get(PODCLIQUESETS, name, namespace)
        return (obj.get("status") or {}).get("lastErrors")

    [error] = await wait_for(last_errors, "lastErrors on the PodCliqueSet")
    assert error["code"] == "ERR_INVALID_SPEC"
    assert "spec.template.podCliqueScalingGroups[0].cliqueNames[1]" in error["description"]
    assert "nosuch" in error["description"]
    event = await wait_for(lambda: _event(kube, namespace, name, "InvalidSpec"), "InvalidSpec event")
    assert event["type"] == "Warning"
    assert "cliqueNames[1]" in event["message"]
    assert await items(kube, PODCLIQUESCALINGGROUPS, namespace) == []
    assert await items(kube, PODCLIQUES, namespace) == []
    assert operator.app is not None
    queue = operator.app.controllers["podcliqueset"].queue
    assert operator.call(lambda: queue.num_requeues(ObjectKey(namespace, name))) == 0, "retried with backoff"


async def test_repeated_pod_creation_failures_aggregate_into_one_event(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """A pod the API server refuses on every retry (no image) gives one ReconcileError Event whose count grows: the
    refusal names the randomly generated pod, and that name is masked so the message is stable per cause."""
    pcs = load_sample(AGG)
    for container in pcs["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["containers"]:
        container.pop("image", None)
    await create_pcs(kube, namespace, pcs)
    pclq = "single-node-aggregated-0-model-worker"

    async def repeated() -> list[Obj] | None:
        events = [
            e
            for e in await items(kube, EVENTS, namespace)
            if e["involvedObject"]["name"] == pclq and e["reason"] == "ReconcileError"
        ]
        return events if any(e.get("count", 1) >= 3 for e in events) else None

    events = await wait_for(repeated, "a ReconcileError Event counted three times")
    assert len(events) == 1, [e["message"] for e in events]
    assert f"{pclq}-*" in events[0]["message"]
    assert "spec.containers[0].image" in events[0]["message"]
    assert await live_pods(kube, namespace) == []
