"""Wiring: the one place that lists grove-operator's controllers, their watches and their concurrency.

Why one place: which event wakes which reconciler decides both correctness (a missed trigger is a stuck
reconcile) and cost (an extra trigger is wasted work at 10,000 pods). This module reads like controller-runtime's
builder calls (For / Owns / Watches with map functions and predicates), following grove-reference §3.1:

* podcliqueset (10 workers): For PCS (create/delete, generation or `grove.io/reconcile-trigger` change); Owns
  PodClique and PCSG (delete or generation change at once, not their creation, which the PCS did itself;
  status-only changes batched over `child_batch_period`, stretched to `owner_batch_scale` times the last
  reconcile's duration, because one reconcile re-derives the whole hierarchy);
  Owns PodGang (delete or generation change, batched: hand edits are reverted); Owns the SA-token Secret (token
  filled in); Watches scaling-group member PodCliques (created, deleted or conditions moved, batched) → their PCS,
  whose PodGangs reference their pods and whose gang termination reads their breaches;
  Watches ClusterTopologyBinding → the PCSs referencing it. It does not watch pods.
* podclique (10): For PodClique (create/delete, generation/labels change); Watches Pods → their PodClique
  (create/delete, status, gates, node or deletion change; batched like the PCS's child events, so the pods of a
  PodClique moving together cost one reconcile and one status write); Watches PodGang → the PodCliques of its PodGroups;
  Watches PodClique status → the scaled-gang PodCliques waiting for that base gang to be scheduled; Watches PCS
  (rolling update moved: `status.updateProgress`, `currentGenerationHash`, `spec.updateStrategy`) → its standalone
  PodCliques, and (`currentGenerationHash` moved) → its scaling-group members; Watches PodClique and PCSG status
  (batched) → the other standalone PodCliques of the same PCS replica while a rolling update works on it (the lane:
  one unit settling is what the next waits for).
* podcliquescalinggroup (5): For PCSG (create/delete, generation change); Owns PodClique (spec at once, status batched);
  Watches PCS (generation change, rolling update moved) → its PCSGs; Watches PodClique and PCSG status (batched) →
  the other PCSGs of the same PCS replica while a rolling update works on it.
* podgang (5): For PodGang (create/delete, generation change).
* podgangset (5, the first API `grove.dynamo.ai/v1`): For PodGangSet (create/delete, generation change); Owns Pods
  (status, gates, node or deletion change, batched) and its PodGang (spec or status change, batched: the
  scheduler's Scheduled condition is repeated on the PodGangSet).
* podgangset-podclique (2): For `grove.dynamo.ai/v1` PodClique (create/delete, generation change); Watches
  PodGangSet pods → the PodCliques of their namespace (created, deleted or relabelled; batched), for the counts.

Pods, Services, Secrets, ServiceAccounts, Roles, RoleBindings and HPAs are cached only if labelled
`managed-by=grove-operator`, which keeps the operator's memory proportional to what it manages; pods are cached
with only the fields the operator reads (`grove_operator.podcache`). The predicates and map functions named here
live in `grove_operator.triggers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from grove_api import dynamo_v1 as v1
from grove_api import labels as glabels
from grove_operator.config import OperatorConfig
from grove_operator.kinds import (
    CLUSTERTOPOLOGYBINDINGS,
    DYNAMO_PODCLIQUES,
    INDEX_BASE_PODGANG,
    INDEX_PART_OF,
    INDEX_PCSG,
    INDEX_PODCLIQUE,
    INDEX_PODGANGSET,
    PODCLIQUES,
    PODCLIQUESCALINGGROUPS,
    PODCLIQUESETS,
    PODGANGS,
    PODGANGSETS,
    namespaced_label_index,
)
from grove_operator.metrics import operator_metrics
from grove_operator.parsed import ParseMemo
from grove_operator.podcache import slim_pod
from grove_operator.podclique.pods import PodExpectationsObserver
from grove_operator.podclique.reconciler import PodCliqueReconciler
from grove_operator.podcliqueset.reconciler import PodCliqueSetReconciler
from grove_operator.podgang.reconciler import PodGangReconciler
from grove_operator.podgangset.podclique import DynamoPodCliqueReconciler
from grove_operator.podgangset.reconciler import PodGangSetReconciler
from grove_operator.reconcile.context import Deps
from grove_operator.scalinggroup.members import MemberDeletionObserver
from grove_operator.scalinggroup.reconciler import ScalingGroupReconciler
from grove_operator.triggers import (
    CHILD_CHANGED,
    GENERATION_HASH_CHANGED,
    GENERATION_OR_DELETION,
    MEMBER_CHANGED,
    PCLQ_PRIMARY,
    PCS_PRIMARY,
    POD_CHANGED,
    POD_LABELS_CHANGED,
    POD_SET_CHANGED,
    ROLLOUT_CHANGED,
    SCHEDULED_CHANGED,
    SPEC_OR_STATUS,
    STATUS_ONLY,
    TOKEN_FILLED,
    member_to_pcs,
    meta_of,
    pod_to_pcs,
    podgang_to_podcliques,
    pods_to_podclique,
    references_topology,
)
from grove_operator.webhooks.setup import build_webhooks
from grove_runtime.cache import Cache
from grove_runtime.client import Client, KubeClient
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.controller import Controller
from grove_runtime.events import EventRecorder
from grove_runtime.expectations import Expectations
from grove_runtime.handlers import enqueue_mapped, enqueue_owner, enqueue_self
from grove_runtime.health import Address
from grove_runtime.keys import ObjectKey
from grove_runtime.manager import Manager
from grove_runtime.metrics import ControllerMetrics
from grove_runtime.resources import HPAS, PODS, ROLEBINDINGS, ROLES, SECRETS, SERVICEACCOUNTS, SERVICES
from grove_runtime.webhook.serving import ServeWebhooks

__all__ = ["OperatorApp", "build"]

Obj = dict[str, Any]
GROUP = "grove.io"
MANAGED_SELECTOR = f"{glabels.LABEL_MANAGED_BY}={glabels.MANAGED_BY_VALUE}"


def _first_api_controllers(
    deps: Deps, controller: Any, pgs_inf: Any, dpc_inf: Any, pod_inf: Any, gang_inf: Any
) -> tuple[Controller, Controller]:
    """The controllers of `grove.dynamo.ai/v1`: PodGangSets, and the status of its PodCliques."""
    batch = deps.config.child_batch_period
    pgs: Controller = controller("podgangset", PodGangSetReconciler(deps), deps.config.pgs_workers)
    pgs.watch(pgs_inf, enqueue_self(), GENERATION_OR_DELETION)
    pgs.watch(pod_inf, enqueue_owner(v1.GROUP, "PodGangSet"), POD_CHANGED, batch_period=batch)
    pgs.watch(gang_inf, enqueue_owner(v1.GROUP, "PodGangSet"), SPEC_OR_STATUS, batch_period=batch)

    def pods_to_podcliques(pod: Obj) -> Iterable[ObjectKey]:
        meta = meta_of(pod)
        if v1.LABEL_PODGANGSET not in (meta.get("labels") or {}):
            return ()
        return [ObjectKey.of(o) for o in deps.cache.list(DYNAMO_PODCLIQUES, str(meta.get("namespace") or ""))]

    cliques: Controller = controller("podgangset-podclique", DynamoPodCliqueReconciler(deps), 2)
    cliques.watch(dpc_inf, enqueue_self(), GENERATION_OR_DELETION)
    cliques.watch(pod_inf, enqueue_mapped(pods_to_podcliques), POD_LABELS_CHANGED, batch_period=batch)
    return pgs, cliques


@dataclass(frozen=True, slots=True)
class OperatorApp:
    """The assembled operator: run `manager.run()`; the other fields are for tests, the CLI and benchmarks.

    `deps` holds what every reconciler shares, the caches included (`deps.parsed`): they belong to this operator,
    not to the process, so two operators in one process (tests) never see each other's state. `webhooks` serves
    the admission webhooks (on every replica, once the caches are synced), None when they are off.
    """

    manager: Manager
    cache: Cache
    controllers: dict[str, Controller]
    metrics: ControllerMetrics
    expectations: Expectations[ObjectKey]
    deps: Deps
    webhooks: ServeWebhooks | None = None


def build(
    config: OperatorConfig,
    client: Client,
    *,
    clock: Clock | None = None,
    registry: CollectorRegistry | None = None,
    health_port: int | None = None,
) -> OperatorApp:
    """Assemble a grove-operator process against `client`."""
    clock = clock or LoopClock()
    registry = registry if registry is not None else CollectorRegistry()
    metrics = operator_metrics(registry)
    cache = Cache(client, clock=clock)
    ns = config.watch_namespace
    pcs_inf = cache.informer(PODCLIQUESETS, namespace=ns)
    pclq_inf = cache.informer(PODCLIQUES, namespace=ns)
    pcsg_inf = cache.informer(PODCLIQUESCALINGGROUPS, namespace=ns)
    gang_inf = cache.informer(PODGANGS, namespace=ns)
    topo_inf = cache.informer(CLUSTERTOPOLOGYBINDINGS)
    pod_inf = cache.informer(PODS, namespace=ns, label_selector=MANAGED_SELECTOR, transform=slim_pod)
    secret_inf = cache.informer(SECRETS, namespace=ns, label_selector=MANAGED_SELECTOR)
    for rt in (SERVICES, SERVICEACCOUNTS, ROLES, ROLEBINDINGS, HPAS):
        cache.informer(rt, namespace=ns, label_selector=MANAGED_SELECTOR)
    part_of = namespaced_label_index(glabels.LABEL_PART_OF)
    for rt in (PODCLIQUES, PODCLIQUESCALINGGROUPS, PODGANGS, PODS, SERVICES, HPAS):
        cache.add_index(rt, INDEX_PART_OF, part_of)
    cache.add_index(PODS, INDEX_PODCLIQUE, namespaced_label_index(glabels.LABEL_PODCLIQUE))
    cache.add_index(PODCLIQUES, INDEX_PCSG, namespaced_label_index(glabels.LABEL_PCSG))
    cache.add_index(PODCLIQUES, INDEX_BASE_PODGANG, namespaced_label_index(glabels.LABEL_BASE_PODGANG))
    if config.first_api:
        pgs_inf = cache.informer(PODGANGSETS, namespace=ns)
        dpc_inf = cache.informer(DYNAMO_PODCLIQUES, namespace=ns)
        for rt in (PODS, PODGANGS):
            cache.add_index(rt, INDEX_PODGANGSET, namespaced_label_index(v1.LABEL_PODGANGSET))

    recorder = EventRecorder(client, "grove-operator", clock=clock)
    expectations: Expectations[ObjectKey] = Expectations(timeout=config.expectations_timeout, clock=clock)
    pod_inf.add_handler(PodExpectationsObserver(expectations))
    pclq_inf.add_handler(MemberDeletionObserver(expectations))
    elector = config.lease.elector(client, clock) if config.leader_elect else None
    # The controllers write only while this process leads (each attempt checked): a leader frozen past its lease
    # must not land a write it computed before, after its successor acted. Webhook certificates are written by
    # every replica, so `client` itself stays unfenced.
    writer = client.fenced_writes(elector.leading) if elector is not None and isinstance(client, KubeClient) else client
    deps = Deps(writer, cache, recorder, config, expectations, clock, ParseMemo())
    for informer in cache.informers():  # a deleted object's parses go with it
        informer.add_handler(deps.parsed)

    def controller(name: str, reconciler: Any, workers: int) -> Controller:
        return Controller(name, reconciler, workers=workers, clock=clock, metrics=metrics)

    pcs = controller(
        "podcliqueset",
        PodCliqueSetReconciler(deps),
        config.pcs_workers,
    )
    pcs.watch(pcs_inf, enqueue_self(), PCS_PRIMARY)
    batch = config.child_batch_period
    scale = config.owner_batch_scale
    for child_inf in (pclq_inf, pcsg_inf):
        pcs.watch(child_inf, enqueue_owner(GROUP, "PodCliqueSet"), CHILD_CHANGED)
        pcs.watch(child_inf, enqueue_owner(GROUP, "PodCliqueSet"), STATUS_ONLY, batch_period=batch, batch_scale=scale)
    # PodGang spec changes are mostly the PCS's own pod-reference writes: batched like child status.
    pcs.watch(gang_inf, enqueue_owner(GROUP, "PodCliqueSet"), CHILD_CHANGED, batch_period=batch, batch_scale=scale)
    pcs.watch(secret_inf, enqueue_owner(GROUP, "PodCliqueSet"), TOKEN_FILLED)
    # Scaling-group members come and go by their group (a recreated replica), and the PodGangs must follow them;
    # their conditions decide gang termination of the whole PCS replica.
    pcs.watch(pclq_inf, enqueue_mapped(member_to_pcs), MEMBER_CHANGED, batch_period=batch, batch_scale=scale)
    # The gangs' pod references follow the pods themselves: a scaling-group member's status does not reach the PCS
    # (its owner is the group), and a pod replaced (rolling update, recreation) can leave every status count as it
    # was; without this a replacement pod could stay gated behind a stale reference for good (found by the chaos
    # suite: PodGangs referencing deleted pods, their successors never ungated).
    pcs.watch(pod_inf, enqueue_mapped(pod_to_pcs), POD_SET_CHANGED, batch_period=batch, batch_scale=scale)

    def topology_to_pcs(ct: Obj) -> Iterable[ObjectKey]:
        name = str(meta_of(ct).get("name") or "")
        return [ObjectKey.of(o) for o in cache.list(PODCLIQUESETS) if references_topology(o, name)]

    pcs.watch(topo_inf, enqueue_mapped(topology_to_pcs))

    def lane(obj: Obj, rt: Any, component: str | None) -> list[ObjectKey]:
        """While a rolling update works on the object's PCS replica, the other units of that replica's lane (of
        kind `rt`): one unit settling is what the next one waits for."""
        meta = meta_of(obj)
        labels = meta.get("labels") or {}
        pcs_name, replica = labels.get(glabels.LABEL_PART_OF), labels.get(glabels.LABEL_PCS_REPLICA_INDEX)
        namespace = str(meta.get("namespace") or "")
        owner = cache.get(PODCLIQUESETS, ObjectKey(namespace, str(pcs_name))) if pcs_name and replica else None
        progress = ((owner or {}).get("status") or {}).get("updateProgress") or {}
        current = progress.get("currentlyUpdating") or ()
        if progress.get("updateEndedAt") or not current or str(current[0].get("replicaIndex")) != replica:
            return []
        return [
            ObjectKey.of(o)
            for o in cache.by_index(rt, INDEX_PART_OF, f"{namespace}/{pcs_name}")
            if (meta_of(o).get("labels") or {}).get(glabels.LABEL_PCS_REPLICA_INDEX) == replica
            and (component is None or (meta_of(o).get("labels") or {}).get(glabels.LABEL_COMPONENT) == component)
            and meta_of(o).get("name") != meta.get("name")
        ]

    pclq = controller(
        "podclique",
        PodCliqueReconciler(deps),
        config.pclq_workers,
    )
    pclq.watch(pclq_inf, enqueue_self(), PCLQ_PRIMARY)
    pclq.watch(pod_inf, enqueue_mapped(pods_to_podclique), POD_CHANGED, batch_period=batch)
    # Only a PodGang's pod references (spec) decide which gates lift; its status writes (the operator's Initialized,
    # the scheduler's phase and score) would each cost every member PodClique a reconcile that changes nothing.
    pclq.watch(gang_inf, enqueue_mapped(podgang_to_podcliques), GENERATION_OR_DELETION)

    def waiting_on_base(obj: Obj) -> Iterable[ObjectKey]:
        meta = meta_of(obj)
        gang = (meta.get("labels") or {}).get(glabels.LABEL_PODGANG)
        if not gang:
            return ()
        waiting = cache.by_index(PODCLIQUES, INDEX_BASE_PODGANG, f"{meta.get('namespace') or ''}/{gang}")
        return [ObjectKey.of(o) for o in waiting]

    pclq.watch(pclq_inf, enqueue_mapped(waiting_on_base), SCHEDULED_CHANGED)

    def pcs_to_pclqs(standalone: bool) -> Callable[[Obj], Iterable[ObjectKey]]:
        """The PCS's standalone PodCliques (`standalone`) or its scaling-group members."""

        def mapped(obj: Obj) -> Iterable[ObjectKey]:
            meta = meta_of(obj)
            key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
            return [
                ObjectKey.of(o)
                for o in cache.by_index(PODCLIQUES, INDEX_PART_OF, key)
                if ((meta_of(o).get("labels") or {}).get(glabels.LABEL_COMPONENT) == glabels.COMPONENT_PCS_PODCLIQUE)
                == standalone
            ]

        return mapped

    pclq.watch(pcs_inf, enqueue_mapped(pcs_to_pclqs(standalone=True)), ROLLOUT_CHANGED)
    # A rolling update recreates scaling-group members rather than patching them, so nothing else tells a member
    # of a replica not yet updated that its pods no longer run the newest template (its `updatedReplicas`).
    pclq.watch(pcs_inf, enqueue_mapped(pcs_to_pclqs(standalone=False)), GENERATION_HASH_CHANGED)
    to_pclqs = enqueue_mapped(lambda o: lane(o, PODCLIQUES, glabels.COMPONENT_PCS_PODCLIQUE))
    for unit_inf in (pclq_inf, pcsg_inf):
        pclq.watch(unit_inf, to_pclqs, STATUS_ONLY, batch_period=batch)

    pcsg = controller(
        "podcliquescalinggroup",
        ScalingGroupReconciler(deps),
        config.pcsg_workers,
    )
    pcsg.watch(pcsg_inf, enqueue_self(), GENERATION_OR_DELETION)
    pcsg.watch(pclq_inf, enqueue_owner(GROUP, "PodCliqueScalingGroup"), GENERATION_OR_DELETION)
    pcsg.watch(pclq_inf, enqueue_owner(GROUP, "PodCliqueScalingGroup"), STATUS_ONLY, batch_period=batch)

    def pcs_to_pcsgs(obj: Obj) -> Iterable[ObjectKey]:
        meta = meta_of(obj)
        key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        return [ObjectKey.of(o) for o in cache.by_index(PODCLIQUESCALINGGROUPS, INDEX_PART_OF, key)]

    pcsg.watch(pcs_inf, enqueue_mapped(pcs_to_pcsgs), GENERATION_OR_DELETION)
    pcsg.watch(pcs_inf, enqueue_mapped(pcs_to_pcsgs), ROLLOUT_CHANGED)
    to_pcsgs = enqueue_mapped(lambda o: lane(o, PODCLIQUESCALINGGROUPS, None))
    for unit_inf in (pclq_inf, pcsg_inf):
        pcsg.watch(unit_inf, to_pcsgs, STATUS_ONLY, batch_period=batch)

    gang = controller("podgang", PodGangReconciler(deps), config.podgang_workers)
    gang.watch(gang_inf, enqueue_self(), GENERATION_OR_DELETION)

    first_api: tuple[Controller, ...] = ()
    if config.first_api:
        first_api = _first_api_controllers(deps, controller, pgs_inf, dpc_inf, pod_inf, gang_inf)

    manager = Manager(
        client,
        cache=cache,
        elector=elector,
        registry=registry,
        health_host=config.health_host,
        health_port=health_port,
        metrics=Address(config.metrics_host, config.metrics_port) if config.metrics_port is not None else None,
    )
    controllers = {c.name: c for c in (pcs, pclq, pcsg, gang, *first_api)}
    for c in controllers.values():
        manager.add(c)
    webhooks = None
    if config.webhooks is not None:
        webhooks = build_webhooks(config, config.webhooks, client, cache, clock, deps.parsed, registry)
        manager.add(webhooks, leader_only=False)
        if manager.health is not None:
            manager.health.add_ready_check("webhooks", webhooks.ready.is_set)
    return OperatorApp(manager, cache, controllers, metrics, expectations, deps, webhooks)
