"""The RBAC of `deploy/` is what the programs really use: grove-operator, grove-scheduler and grove-initc run under
their own ServiceAccount tokens, with the flags of the sim overlay's Deployments, through a representative workload
(a PodCliqueSet with a scaling group, startup order and autoscalers: created, scaled at three levels, hand-edited,
updated and deleted; a first-API PodGangSet; gangs placed and bound; webhooks called; leases held and released), and
grove-sim's audit log says what each asked for. Every request must be allowed by the rendered roles, and every grant
must have been used, except the few the workload cannot reach, listed with why in ``NOT_EXERCISED``.

grove-sim runs without authorization here (AlwaysAllow), so this check sees every request the code makes, including
one a role would refuse (which under RBAC would fail with 403 and hide the requests after it).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grove_api import labels as glabels
from grove_operator.webhooks.setup import CONFIGURATIONS
from grove_runtime.client import KubeClient
from grove_runtime.resources import ROLES, SERVICES
from grove_sim.cluster import nodes_from_flags
from grove_sim.server import SimOptions
from grove_sim.testing import SimCluster, console_script

from ..fixtures.net import free_port
from ..grove_operator.e2e._harness import live_pods, wait_for
from . import _manifests as m
from . import _rbac

pytestmark = pytest.mark.slow

Obj = dict[str, Any]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
LIMIT = 180.0
"""Seconds a step may take on a loaded 2-core machine (a guard against hangs, not a measurement)."""
WORKLOAD_NS = "rbac-workload"
OPERATOR = f"system:serviceaccount:{m.NAMESPACE}:grove-operator"
SCHEDULER = f"system:serviceaccount:{m.NAMESPACE}:grove-scheduler"
INITC = f"system:serviceaccount:{WORKLOAD_NS}:work"

_HELD_TO_GRANT = "held only to grant it: the operator creates grove-initc's Role with it (RBAC's escalation check)"
_INITC_ROLE = "in upstream's Role for grove-initc, which the operator creates; grove-initc only lists and watches"
NOT_EXERCISED: dict[str, str] = {
    # Grant as `Grant.__str__` prints it -> why the workload does not use it.
    "ClusterRole grove-operator: get pods.core": _HELD_TO_GRANT,
    "ClusterRole grove-operator: get pods/status.core": _HELD_TO_GRANT,
    "ClusterRole grove-operator: list pods/status.core": _HELD_TO_GRANT,
    "ClusterRole grove-operator: watch pods/status.core": _HELD_TO_GRANT,
    "ClusterRole grove-operator: patch events.core": "a repeated Event is patched (count); none repeats here",
    **{
        f"ClusterRole grove-operator: get {kind}": "a create refused as AlreadyExists (a stale cache) reads the object"
        for kind in ("podcliques.grove.io", "podcliquescalinggroups.grove.io", "podgangs.scheduler.grove.io")
    },
    "Role grove-operator: update secrets.core ['grove-webhook-server-cert'] in grove-system":
        "the webhook certificate is renewed two thirds through its lifetime (a year)",
    "ClusterRole grove-scheduler: get pods.core": "a bind refused with a conflict reads the pod",
    "ClusterRole grove-scheduler: delete pods.core": "rollback of a gang whose minimum could not be bound",
    "ClusterRole grove-scheduler: patch events.core": "a repeated Event is patched (count); none repeats here",
    "ClusterRole grove-scheduler: patch pods/status.core":
        "PodScheduled=False on a gang that cannot be placed, nominatedNodeName and DisruptionTarget when preempting;"
        " every gang fits here",
    "ClusterRole grove-scheduler: create pods/eviction.core": "preemption with --preemption-eviction evict",
    "ClusterRole grove-scheduler: patch queues/status.scheduling.run.ai":
        "Queue status is written once a Queue exists; this workload runs without queues (tests/grove_sched/e2e/"
        "test_queues*.py write it)",
    "ClusterRole grove-scheduler: patch reservations/status.scheduling.koordinator.sh":
        "a Koordinator Reservation's status (placed, used, expired); this workload makes none",
    "grove-initc: get pods.core in rbac-workload": _INITC_ROLE,
    "grove-initc: get pods/status.core in rbac-workload": _INITC_ROLE,
    "grove-initc: list pods/status.core in rbac-workload": _INITC_ROLE,
    "grove-initc: watch pods/status.core in rbac-workload": _INITC_ROLE,
}  # fmt: skip
"""Grants the programs hold for paths this workload does not take; every other unused grant fails the test."""


@pytest.fixture(scope="module")
def audit_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("audit") / "audit.log"


@pytest.fixture(scope="module")
def objects() -> list[Obj]:
    """The sim overlay, rendered."""
    return m.overlay("sim")


@pytest.fixture(scope="module")
def sim(audit_log: Path, objects: list[Obj]) -> Iterator[SimCluster]:
    """A cluster with an audit log, whose grove-initc image (the operator's own, as the overlay sets it) runs the
    installed grove-initc."""
    operator = m.one(objects, "Deployment", "grove-operator")
    initc_image = m.environment(objects, operator, "127.0.0.1")[glabels.ENV_INIT_CONTAINER_IMAGE]
    options = SimOptions(
        nodes=nodes_from_flags(4, 8, "block=2,rack=4"),
        exec_images={initc_image: console_script("grove-initc")},
        ready_delay=0.2,
        restart_backoff=0.2,
        max_restart_backoff=1.0,
        audit_log=str(audit_log),
    )
    with SimCluster(options) as cluster:
        yield cluster


class Programs:
    """The operator and the scheduler as processes, each under its ServiceAccount, with its Deployment's flags."""

    def __init__(self, sim: SimCluster, objects: list[Obj], logs: Path) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.sim = sim
        self.objects = objects
        self.logs = logs
        self.webhook_port = free_port()

    def start(self, name: str) -> None:
        deployment = m.one(self.objects, "Deployment", name)
        env = m.environment(self.objects, deployment, "127.0.0.1")
        argv = m.with_free_ports(m.command_line(deployment, env), self.webhook_port)
        kubeconfig = self.sim.service_account_kubeconfig(m.NAMESPACE, name, self.logs / f"{name}.kubeconfig")
        process_env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "POD_", "GROVE_"))}
        process_env.update(env, KUBECONFIG=kubeconfig, NO_PROXY="127.0.0.1,localhost")
        with (self.logs / f"{name}.log").open("wb") as sink:
            proc = subprocess.Popen(
                [console_script(argv[0]), *argv[1:]], env=process_env, stdout=sink, stderr=subprocess.STDOUT
            )
        self.procs.append(proc)

    def stop(self) -> list[int | None]:
        """SIGTERM each (they release their Leases), then wait; the exit codes."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes = []
        for proc in self.procs:
            try:
                codes.append(proc.wait(30))
            except subprocess.TimeoutExpired:
                proc.kill()
                codes.append(proc.wait())
        return codes


def pcs_doc() -> Obj:
    """`lead` (autoscaled) first; scaling group `grp` of `work` after it (2 replicas, minAvailable 1, so one
    scaled gang), autoscaled too."""

    def clique(name: str, after: list[str]) -> Obj:
        spec: Obj = {
            "roleName": name,
            "replicas": 1,
            "podSpec": {"containers": [{"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "10m"}}}]},
        }
        if after:
            spec["startsAfter"] = after
        if name == "lead":
            spec["autoScalingConfig"] = {"maxReplicas": 3}
        return {"name": name, "spec": spec}

    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "work", "namespace": WORKLOAD_NS},
        "spec": {
            "replicas": 1,
            "template": {
                "cliqueStartupType": "CliqueStartupTypeExplicit",
                "cliques": [clique("lead", []), clique("work", ["lead"])],
                "podCliqueScalingGroups": [
                    {
                        "name": "grp",
                        "replicas": 2,
                        "minAvailable": 1,
                        "cliqueNames": ["work"],
                        "scaleConfig": {"maxReplicas": 4},
                    },
                ],
            },
        },
    }


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


async def _all_ready(kube: KubeClient, count: int) -> list[Obj] | None:
    pods = await live_pods(kube, WORKLOAD_NS)
    return pods if len(pods) == count and all(_ready(p) for p in pods) else None


async def _webhooks_ready(kube: KubeClient, port: int) -> bool:
    """The operator injected its CA into every configuration and its webhook listener answers."""
    for hook in CONFIGURATIONS:
        found = await kube.get(hook.resource, hook.name)
        if not all(w["clientConfig"].get("caBundle") for w in found["webhooks"]):
            return False
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True


PODGANGSET: Obj = {
    "apiVersion": "grove.dynamo.ai/v1",
    "kind": "PodGangSet",
    "metadata": {"name": "first", "namespace": WORKLOAD_NS},
    "spec": {
        "template": {
            "metadata": {"labels": {"app": "first"}},
            "spec": {"containers": [{"name": "w", "image": "w:1", "resources": {"requests": {"nvidia.com/gpu": 1},
                                                                               "limits": {"nvidia.com/gpu": 1}}}]},
        },
        "replicas": 2,
        "minAvailable": 2,
    },
}  # fmt: skip


SCALING = (
    ("pcsg/work-0-grp", 3, 4, True),
    ("pcs/work", 2, 7, True),
    ("pcsg/work-0-grp", 2, 6, True),
    ("pcs/work", 1, 3, True),
    ("pclq/work-0-grp-0-work", 2, 4, False),
    ("pclq/work-0-grp-0-work", 1, 3, True),
)
"""(target, replicas, pods then, all Ready then): out and in at each of the three levels. The pod a scaling-group
member PodClique gains was seen to stay SchedulingGated for 20 s and more on this machine (outside what this test
checks), so that step awaits the pod's creation only."""


async def _live(kube: KubeClient, count: int, prefix: str = "work-") -> bool:
    pods = [p for p in await live_pods(kube, WORKLOAD_NS) if p["metadata"]["name"].startswith(prefix)]
    return len(pods) == count


async def _labelled(kubectl: Kubectl, kind: str) -> bool:
    labels = kubectl("get", "-n", WORKLOAD_NS, kind, "-o", "jsonpath={.metadata.labels}").stdout
    return glabels.LABEL_MANAGED_BY in labels


async def _max_replicas(kubectl: Kubectl, count: int) -> bool:
    found = kubectl("get", "-n", WORKLOAD_NS, "hpa/work-0-lead", "-o", "jsonpath={.spec.maxReplicas}").stdout
    return found == str(count)


async def run_workload(kube: KubeClient, kubectl: Kubectl) -> None:
    """Create, scale out and in (PodCliqueSet and scaling group), update and delete a PodCliqueSet, and a first-API
    PodGangSet beside it; each step awaited."""
    ns = ("-n", WORKLOAD_NS)
    kubectl("create", "namespace", WORKLOAD_NS)
    kubectl("apply", "-f", str(m.ROOT / "examples" / "cluster-topology.yaml"))
    kubectl("apply", "-f", "-", input=m.to_yaml([pcs_doc()]))
    await wait_for(lambda: _all_ready(kube, 3), "3 pods Ready (lead, two group replicas)", LIMIT)
    for target, replicas, pods, ready in SCALING:
        kubectl("scale", *ns, target, f"--replicas={replicas}")
        check = _all_ready if ready else _live
        await wait_for(lambda c=check, n=pods: c(kube, n), f"{pods} pods, {target} at {replicas}", LIMIT)
    # Hand edits: without the label the operator's caches lose the object, so its next reconcile creates it, is
    # told AlreadyExists, reads it and patches the label back (Role, RoleBinding and Secret are created once only).
    edited = ("service/work-0", "serviceaccount/work", "hpa/work-0-lead")
    for kind in (*edited, "role/grove.io:pcs:work", "rolebinding/grove.io:pcs:work", "secret/work-ic-sat"):
        kubectl("label", *ns, kind, f"{glabels.LABEL_MANAGED_BY}-")
    patch = '{"spec":{"template":{"cliques":[{"name":"lead","spec":{"roleName":"lead","replicas":1,"podSpec":' \
        '{"containers":[{"name":"app","image":"app:2","resources":{"requests":{"cpu":"10m"}}}]},' \
        '"autoScalingConfig":{"maxReplicas":4}}},{"name":"work","spec":{"roleName":"work","replicas":1,' \
        '"startsAfter":["lead"],"podSpec":{"containers":[{"name":"app","image":"app:2",' \
        '"resources":{"requests":{"cpu":"10m"}}}]}}}]}}}'  # fmt: skip
    kubectl("patch", *ns, "pcs/work", "--type=merge", "-p", patch)
    for kind in edited:
        await wait_for(lambda k=kind: _labelled(kubectl, k), f"{kind} labelled again", LIMIT)
    await wait_for(lambda: _max_replicas(kubectl, 4), "the lead's HPA updated", LIMIT)
    kubectl("apply", "-f", "-", input=m.to_yaml([PODGANGSET]))
    await wait_for(lambda: _live(kube, 2, "first-"), "the PodGangSet's 2 pods", LIMIT)
    kubectl("scale", *ns, "podgangset/first", "--replicas=3")
    await wait_for(lambda: _live(kube, 3, "first-"), "the PodGangSet's 3 pods", LIMIT)
    role = await kube.get(ROLES, "grove.io:pcs:work", WORKLOAD_NS)
    kubectl("delete", *ns, "pcs/work", "podgangset/first", "--wait=true", timeout=LIMIT)
    await wait_for(lambda: _live(kube, 0, ""), "every pod deleted with its owner", LIMIT)
    assert role["rules"] == m.one(m.overlay("sim"), "ClusterRole", "grove-initc")["rules"]


def _log_tails(logs: Path) -> list[str]:
    return [p.read_text()[-3000:] for p in sorted(logs.glob("*.log"))]


async def test_each_program_uses_exactly_the_rights_its_role_grants(
    sim: SimCluster, objects: list[Obj], kubectl: Kubectl, kube: KubeClient, audit_log: Path, tmp_path: Path
) -> None:
    served = [o for o in objects if o["kind"] not in {"Deployment", "PodDisruptionBudget"}]
    kubectl("apply", "-f", "-", input=m.to_yaml(o for o in served if o["kind"] == "Namespace"))
    kubectl("apply", "-f", "-", input=m.to_yaml(o for o in served if o["kind"] == "CustomResourceDefinition"))
    rest = [o for o in served if o["kind"] not in {"Namespace", "CustomResourceDefinition"}]
    kubectl("apply", "-f", "-", input=m.to_yaml(o for o in rest if not o["kind"].startswith("Cluster")))
    programs = Programs(sim, objects, tmp_path)
    # grove-sim reaches a webhook Service through this annotation (it runs no endpoints for local processes).
    service = await kube.get(SERVICES, "grove-operator-webhook", m.NAMESPACE)
    service["metadata"].setdefault("annotations", {})["sim.grove.io/local-address"] = (
        f"127.0.0.1:{programs.webhook_port}"
    )
    await kube.update(SERVICES, service)
    try:
        programs.start("grove-operator")
        programs.start("grove-scheduler")
        await wait_for(lambda: _webhooks_ready(kube, programs.webhook_port), "the operator's webhooks", LIMIT)
        await run_workload(kube, kubectl)
    finally:
        codes = programs.stop()
    assert codes == [0, 0], _log_tails(tmp_path)

    report = []
    for user, grants in (
        (OPERATOR, _rbac.grants_of(objects, OPERATOR)),
        (SCHEDULER, _rbac.grants_of(objects, SCHEDULER)),
        (INITC, _rbac.rule_grants(m.one(objects, "ClusterRole", "grove-initc")["rules"], WORKLOAD_NS, "grove-initc")),
    ):
        requests, others = _rbac.audited(audit_log, user)
        assert requests, f"{user} made no request"
        assert all(u.startswith(("/api", "/version")) for u in others), others
        missing = _rbac.denied(requests, grants)
        idle = [str(g) for g in _rbac.unused(requests, grants) if str(g) not in NOT_EXERCISED]
        report += [f"{user} not allowed: {r}" for r in missing] + [f"{user} never used: {g}" for g in idle]
        print(user, *sorted(str(r) for r in requests), sep="\n  ")
    assert report == [], "\n".join(report)
    # The operator holds list/watch secrets cluster-wide (it creates each PodCliqueSet's token Secret in the
    # PodCliqueSet's namespace) and used them (no grant above is idle), but reads only the Secrets it manages.
    managed = f"{glabels.LABEL_MANAGED_BY}={glabels.MANAGED_BY_VALUE}"
    assert _rbac.unselected_reads(audit_log, OPERATOR, "secrets", managed) == []
