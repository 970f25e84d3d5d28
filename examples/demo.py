"""`make demo`: a Grove system on the embedded simulated GPU cluster, driven only through the real kubectl.

Starts `grove-sim` as a separate process (2 blocks x 4 racks x 8 nodes x 8 GPUs) and installs Grove into it the way a
user installs it, `kubectl apply -k deploy/overlays/sim`: grove-sim runs the Deployments' containers (grove-operator,
grove-scheduler, two replicas each) as local processes. Then it applies a disaggregated inference PodCliqueSet,
scales it, rolls a new image through it, starts cliques in order, shows a high-priority gang preempting a low one,
reads the scheduler's log and metrics with the documented troubleshooting commands (`kubectl logs`, `kubectl
port-forward svc/grove-scheduler-metrics`), and has invalid input refused. `--keep` leaves the cluster running until
Ctrl-C so you can explore it with kubectl; `--direct` starts grove-operator and grove-scheduler as plain processes
instead of installing them (development, benchmarks).

It stops everything it started on the way out, whatever ends it: the end of the walkthrough, Ctrl-C, SIGTERM or
SIGHUP at any step (`make` passes its own SIGTERM on), and even SIGKILL (see examples/democluster.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from democluster import (
    BOLD,
    NAMESPACE,
    RESET,
    ROOT,
    STOP_SIGNALS,
    Cluster,
    Stopped,
    fetch,
    install,
    raise_stopped,
    running_cluster,
    scheduler_metrics,
    start_directly,
    step,
)

from grove_operator.initc.verify import order_violations, ready_since, startup_parents_of

RACK, BLOCK = "topology.kubernetes.io/rack", "topology.kubernetes.io/block"


def make_nodes_busy(cluster: Cluster) -> None:
    """Occupy part of the cluster with already-running pods, so placement has fragmented capacity to work around."""
    rng = random.Random(7)
    busy = sorted(rng.sample(range(64), 20))
    docs = []
    for index in busy:
        gpus = str(rng.choice([2, 4, 6, 8]))
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"background-{index:02d}", "namespace": "default", "labels": {"app": "bg"}},
                "spec": {
                    "nodeName": f"node-{index:02d}",
                    "containers": [
                        {
                            "name": "job",
                            "image": "registry.example.com/training:1",
                            "resources": {
                                "requests": {"nvidia.com/gpu": gpus, "cpu": "8"},
                                "limits": {"nvidia.com/gpu": gpus},
                            },
                        }
                    ],
                },
            }
        )
    path = cluster.workdir / "background.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    cluster.kubectl("apply", "-f", str(path), quiet=True)
    print(f"20 of 64 nodes already run a job using 2-8 GPUs: {', '.join(f'node-{i:02d}' for i in busy)}")


def get_json(cluster: Cluster, *args: str) -> dict[str, Any]:
    """`kubectl get ... -o json`, parsed."""
    parsed: dict[str, Any] = json.loads(cluster.kubectl("get", *args, "-o", "json", quiet=True))
    return parsed


def wait_for_bound_pods(cluster: Cluster, pcs: str, expected: int, timeout: float = 90.0) -> bool:
    """Poll until the PodCliqueSet has `expected` pods bound to nodes (the demo reports, never hangs)."""
    deadline = time.monotonic() + timeout
    bound = 0
    while time.monotonic() < deadline:
        pods = get_json(cluster, "pods", "-l", f"app.kubernetes.io/part-of={pcs}")["items"]
        bound = sum(1 for pod in pods if pod["spec"].get("nodeName"))
        if bound >= expected:
            return True
        time.sleep(0.5)
    print(f"(only {bound}/{expected} pods were bound after {timeout:.0f} s)")
    return False


def report_gangs(cluster: Cluster, pcs: str) -> None:
    """Each gang's pods by node, rack and block, and whether every required topology constraint holds."""
    nodes = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in get_json(cluster, "nodes")["items"]}
    pods = get_json(cluster, "pods", "-l", f"app.kubernetes.io/part-of={pcs}")["items"]
    node_of = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
    for gang in sorted(get_json(cluster, "podgangs")["items"], key=lambda g: g["metadata"]["name"]):
        status = gang.get("status", {})
        print(
            f"\n{BOLD}PodGang {gang['metadata']['name']}{RESET}  phase={status.get('phase', '-')}"
            f"  placementScore={status.get('placementScore', '-')}"
        )
        spec = gang["spec"]
        scopes: list[tuple[str, list[str], str]] = []
        if key := (spec.get("topologyConstraint") or {}).get("packConstraint", {}).get("required"):
            scopes.append(("gang", [g["name"] for g in spec["podgroups"]], key))
        for config in spec.get("topologyConstraintGroupConfigs") or []:
            if key := (config.get("topologyConstraint") or {}).get("packConstraint", {}).get("required"):
                scopes.append((config["name"], config["podGroupNames"], key))
        for group in spec["podgroups"]:
            refs = [r["name"] for r in group.get("podReferences", [])]
            if key := (group.get("topologyConstraint") or {}).get("packConstraint", {}).get("required"):
                scopes.append((group["name"], [group["name"]], key))
            for name in refs:
                node = node_of.get(name) or "-"
                labels = nodes.get(node, {})
                print(
                    f"  {name:<34} {node:<8} {labels.get(RACK, '-'):<7} {labels.get(BLOCK, '-'):<8}"
                    f" ({group['name']}, min {group['minReplicas']})"
                )
        by_group = {g["name"]: [r["name"] for r in g.get("podReferences", [])] for g in spec["podgroups"]}
        for scope, groups, key in scopes:
            domains = {
                nodes.get(node_of.get(pod) or "", {}).get(key)
                for group in groups
                for pod in by_group.get(group, [])
                if node_of.get(pod)
            }
            verdict = "holds" if len(domains) <= 1 else f"VIOLATED ({sorted(map(str, domains))})"
            print(f"  required {key.split('/')[-1]} for {scope}: {verdict}")


WATCH_FIELDS = (
    "{.type}|{.object.metadata.name}|{.object.spec.containers[0].image}|{.object.metadata.deletionTimestamp}|"
    '{.object.status.conditions[?(@.type=="Ready")].status}{"\\n"}'
)


def watch_pods(cluster: Cluster, pcs: str, lines: queue.Queue[str]) -> subprocess.Popen[str]:
    """`kubectl get pods --watch` of the PodCliqueSet's pods, one line per event into `lines` (from a thread)."""
    proc = subprocess.Popen(
        ["kubectl", "get", "pods", "-l", f"app.kubernetes.io/part-of={pcs}", "--watch-only", "--output-watch-events",
         "-o", f"jsonpath={WATCH_FIELDS}"],
        env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    stream = proc.stdout

    def pump() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return proc


def rolling_update(cluster: Cluster, pcs: str = "llm", timeout: float = 60.0) -> None:
    """Roll a new engine image through the PodCliqueSet and print, in order, every pod taken down, created and
    Ready again, as `kubectl get pods --watch` sees them.

    The decode instances are multi-node gangs (a leader and four workers in a scaling group): each is recreated
    whole, one at a time; prefill pods go one at a time; one PodCliqueSet replica after the other."""
    patch = [
        {"op": "replace", "path": f"/spec/template/cliques/{i}/spec/podSpec/containers/0/image",
         "value": "registry.example.com/llm-engine:1.1"}
        for i in (1, 2, 3)
    ]  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    watcher = watch_pods(cluster, pcs, lines)
    time.sleep(0.5)  # let the watch start before the change it is to show
    # The patch goes on stdin: its JSON-pointer paths printed on the command line would read like file paths.
    cluster.kubectl("patch", f"pcs/{pcs}", "--type", "json", "--patch-file", "/dev/stdin", stdin=json.dumps(patch))
    start, ready, going, replaced = time.monotonic(), set(), set(), 0
    try:
        while time.monotonic() - start < timeout:
            with contextlib.suppress(queue.Empty):
                while True:
                    kind, name, image, deleting, is_ready = lines.get(timeout=0.3).rstrip("\n").split("|")
                    tag, stamp = image.rpartition(":")[2], f"{time.monotonic() - start:5.1f}s"
                    if deleting and name not in going:
                        going.add(name)
                        replaced += 1
                        print(f"  {stamp}  down     {name:<32} engine {tag}")
                    elif kind == "ADDED" and not deleting:
                        print(f"  {stamp}  created  {name:<32} engine {tag}")
                    elif is_ready == "True" and name not in ready and not deleting:
                        ready.add(name)
                        print(f"  {stamp}  Ready    {name:<32} engine {tag}")
            progress = get_json(cluster, "pcs", pcs).get("status", {}).get("updateProgress", {})
            if progress.get("updateEndedAt") and progress.get("updateStartedAt"):
                print(f"rolling update done in {time.monotonic() - start:.1f} s: {replaced} pods replaced")
                break
        else:
            print(f"(the rolling update was still going after {timeout:.0f} s)")
    finally:
        watcher.terminate()
        watcher.wait()
    cluster.kubectl("get", "pcs,pcsg")
    print(f"Events of pcs/{pcs} about the update:")
    events = get_json(cluster, "events", "--field-selector", f"involvedObject.name={pcs}")["items"]
    for event in sorted(events, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"])):
        if event["reason"] in ("RollingUpdateStarted", "UpdatingReplica", "ReplicaUpdated", "RollingUpdateCompleted"):
            print(f"  {event['reason']:<22} {event['message']}")


def report_solve_time(text: str) -> None:
    """Median-free summary from the scheduler's own Prometheus metrics: gangs placed and mean solve time."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(("grove_scheduler_solve_duration_seconds_", "grove_scheduler_pods_bound")):
            series, _, value = line.rpartition(" ")
            name = series.partition("{")[0]  # the series of every label (scheduler_name) summed
            values[name] = values.get(name, 0.0) + float(value)
    count = values.get("grove_scheduler_solve_duration_seconds_count", 0.0)
    total = values.get("grove_scheduler_solve_duration_seconds_sum", 0.0)
    if count:
        print(f"placements solved: {count:.0f}, mean solve time {1000 * total / count:.1f} ms")
    print(f"pods bound by grove-scheduler: {values.get('grove_scheduler_pods_bound_total', 0.0):.0f}")


def startup_order(cluster: Cluster, timeout: float = 120.0) -> None:
    """Apply the Explicit-order example and print when each clique became Ready, relative to the first pod."""
    cluster.kubectl("apply", "-f", str(ROOT / "examples" / "startup-order.yaml"))
    selector = "app.kubernetes.io/part-of=ordered"
    deadline = time.monotonic() + timeout
    shown_waiting = False
    pods: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        pods = get_json(cluster, "pods", "-l", selector)["items"]
        inits = [s for p in pods for s in p.get("status", {}).get("initContainerStatuses", [])]
        waiting = any(s.get("state", {}).get("running") for s in inits)
        if waiting and not shown_waiting:
            cluster.kubectl("get", "pods", "-l", selector)
            shown_waiting = True
        if len(pods) == 6 and all(ready_since(p) for p in pods):
            break
        time.sleep(0.2)
    else:
        print(f"(not every pod was Ready after {timeout:.0f} s)")
    cluster.kubectl("get", "pods", "-l", selector)
    stamps = {p["metadata"]["name"]: ready_since(p) for p in pods}
    first = min((t for t in stamps.values() if t is not None), default=None)
    print(f"\n  {'clique':<8} {'pod':<24} {'Ready at':>8}  waited for (grove-initc --podcliques)")
    for pod in sorted(pods, key=lambda p: stamps[p["metadata"]["name"]] or datetime.max.replace(tzinfo=UTC)):
        name = pod["metadata"]["name"]
        clique = pod["metadata"]["labels"]["grove.io/podclique"].removeprefix("ordered-0-")
        at = stamps[name]
        when = f"+{(at - first).total_seconds():.0f} s" if at is not None and first is not None else "-"
        parents = ", ".join(f"{p}:{n}" for p, n in startup_parents_of(pod).items()) or "-"
        print(f"  {clique:<8} {name:<24} {when:>8}  {parents}")
    problems = order_violations(pods)
    print("no pod became Ready before its parents" if not problems else "OUT OF ORDER:\n  " + "\n  ".join(problems))


def walkthrough(cluster: Cluster, keep: bool) -> None:
    """The demo's steps against a running simulated cluster."""
    step("A simulated GPU cluster: 2 blocks x 4 racks x 8 nodes x 8 GPUs")
    cluster.kubectl("version")
    cluster.kubectl("get", "nodes", "-l", f"{RACK}=rack-0", "-L", f"{BLOCK},{RACK},nvidia.com/gpu.product")
    make_nodes_busy(cluster)

    if cluster.direct:
        step("Install the Grove CRDs (generated from grove_api), then start grove-operator and grove-scheduler")
        metrics_url = start_directly(cluster)
    else:
        step("Install Grove as a user does: kubectl apply -k deploy/overlays/sim (grove-sim runs its pods' programs)")
        install(cluster)

    step("Apply the cluster topology and a disaggregated-inference PodCliqueSet (examples/)")
    cluster.kubectl("apply", "-f", str(ROOT / "examples" / "cluster-topology.yaml"))
    cluster.kubectl("apply", "-f", str(ROOT / "examples" / "disaggregated-inference.yaml"))
    # router 1 + prefill 3 + two decode instances of 1 leader + 4 workers
    wait_for_bound_pods(cluster, "llm", 14)
    cluster.kubectl("get", "pcs,pclq,pcsg,pg")
    report_gangs(cluster, "llm")

    step("Scale: a third decode instance (kubectl scale pcsg) and a second system replica (kubectl scale pcs)")
    cluster.kubectl("scale", "pcsg/llm-0-decode", "--replicas=3")
    cluster.kubectl("scale", "pcs/llm", "--replicas=2")
    wait_for_bound_pods(cluster, "llm", 14 + 5 + 14)
    cluster.kubectl("get", "pcs,pcsg")
    report_gangs(cluster, "llm")

    step("Rolling update: a new engine image, decode gangs recreated whole, one thing down at a time")
    rolling_update(cluster)

    step("Startup order: the cache first, then prefill and decode, then the router (examples/startup-order.yaml)")
    startup_order(cluster)

    preemption(cluster)

    if cluster.direct:
        step("What the scheduler measured")
        report_solve_time(fetch(metrics_url))
    else:
        step("Troubleshooting as documented: the scheduler's log, its grove_* metrics through kubectl port-forward")
        report_solve_time(scheduler_metrics(cluster))

    step("Invalid input is refused with a Status that names the field")
    cluster.kubectl("apply", "-f", "-", check=False, stdin=BROKEN_PCS)
    admission_webhooks(cluster)

    if keep:
        step("Explore it yourself")
        print(f"export KUBECONFIG={cluster.kubeconfig}")
        print("kubectl get grove; kubectl get pods -o wide; kubectl describe pg llm-0; kubectl get events")
        if cluster.direct:
            print(f"logs: {cluster.workdir}/grove-{{sim,operator,scheduler}}.log")
        else:
            print(f"kubectl logs -n {NAMESPACE} deployment/grove-scheduler; grove-sim: {cluster.workdir}/grove-sim.log")
        print("\nThe cluster keeps running; press Ctrl-C to stop it.", flush=True)
        signal.pause()
    else:
        step("Explore it yourself: make demo ARGS=--keep keeps the cluster running until Ctrl-C")


def free_nodes(cluster: Cluster, count: int) -> list[str]:
    """The last `count` nodes that run no pod at all."""
    used = {p["spec"].get("nodeName") for p in get_json(cluster, "pods", "-A")["items"]}
    names = sorted(n["metadata"]["name"] for n in get_json(cluster, "nodes")["items"])
    return [name for name in names if name not in used][-count:]


def gpu_pcs(name: str, priority_class: str, replicas: int, nodes: Sequence[str]) -> dict[str, Any]:
    """A PodCliqueSet whose every replica is a gang of two 8-GPU pods, kept to `nodes` by node affinity."""
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}]}
    pod_spec = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}},
        "containers": [
            {
                "name": "main",
                "image": "registry.example.com/worker:1",
                "resources": {"requests": {"nvidia.com/gpu": "8", "cpu": "4"}, "limits": {"nvidia.com/gpu": "8"}},
            }
        ],
    }
    clique = {"name": "w", "spec": {"roleName": "worker", "replicas": 2, "podSpec": pod_spec}}
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "template": {"priorityClassName": priority_class, "cliques": [clique]}},
    }


def preemption(cluster: Cluster) -> None:
    """Two low-priority batch gangs fill four nodes; a high-priority gang preempts one of them, whole."""
    step("Preemption: two batch gangs (priority 10) fill four nodes; a serving gang (priority 1000) needs two")
    nodes = free_nodes(cluster, 4)
    classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        for name, value in (("batch", 10), ("serving", 1000))
    ]
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([*classes, gpu_pcs("batch", "batch", 2, nodes)]))
    wait_for_bound_pods(cluster, "batch", 4)
    cluster.kubectl("get", "pods", "-l", "app.kubernetes.io/part-of=batch", "-o", "wide")
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(gpu_pcs("serving", "serving", 1, nodes)))
    wait_for_bound_pods(cluster, "serving", 2)
    cluster.kubectl("get", "pods", "-l", "app.kubernetes.io/part-of in (batch,serving)", "-o", "wide")
    events = get_json(cluster, "events")["items"]
    for event in events:
        if event.get("reason") == "Preempting" and event["involvedObject"].get("kind") == "PodGang":
            print(f"{event['involvedObject']['name']}: {event['message']}")
    victims = sorted(
        {e["involvedObject"]["name"] for e in events if e.get("reason") == "Preempted"
         and e["involvedObject"].get("kind") == "PodGang"}
    )  # fmt: skip
    print(f"victim gang(s), evicted whole: {', '.join(victims) or '-'}; their recreated pods wait, saying why:")
    pods = get_json(cluster, "pods", "-l", "app.kubernetes.io/part-of=batch")["items"]
    for pod in pods:
        for cond in pod.get("status", {}).get("conditions", []):
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                print(f"  {pod['metadata']['name']}: {cond.get('reason')}: {cond.get('message')}")


def admission_webhooks(cluster: Cluster) -> None:
    """The operator's admission webhooks: rules the schema cannot express, immutable fields, stored defaults."""
    step("The operator's admission webhooks: a startsAfter cycle and a change of cliqueNames are refused")
    cluster.kubectl("apply", "-f", "-", check=False, stdin=CYCLIC_PCS)
    manifest = (ROOT / "examples" / "disaggregated-inference.yaml").read_text()
    changed = manifest.replace("cliqueNames: [dleader, dworker]", "cliqueNames: [dleader]")
    cluster.kubectl("apply", "-f", "-", check=False, stdin=changed)
    print("Defaults the webhook stored (terminationDelay, minAvailable of each clique):")
    cluster.kubectl(
        "get", "pcs", "llm", "-o",
        "jsonpath={.spec.template.terminationDelay} {.spec.template.cliques[*].spec.minAvailable}{'\\n'}",
    )  # fmt: skip


CYCLIC_PCS = """apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: cyclic}
spec:
  replicas: 1
  template:
    cliqueStartupType: CliqueStartupTypeExplicit
    cliques:
      - {name: a, spec: {roleName: a, replicas: 1, startsAfter: [b], podSpec: {containers: [{name: c, image: x}]}}}
      - {name: b, spec: {roleName: b, replicas: 1, startsAfter: [a], podSpec: {containers: [{name: c, image: x}]}}}
"""


BROKEN_PCS = (
    "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: broken}\n"
    "spec: {replicas: -1, template: {cliques: []}}\n"
)


def run(keep: bool, direct: bool) -> None:
    """Run the walkthrough; the work directory (kubeconfig, logs) is shown and kept only with --keep or on failure."""
    if shutil.which("kubectl") is None:
        raise SystemExit("kubectl is not on PATH (make demo installs it; or apt-get install kubernetes-client)")
    workdir = Path(tempfile.mkdtemp(prefix="grove-demo-"))
    failed = True
    try:
        with running_cluster(workdir, show_paths=keep, direct=direct) as cluster:
            walkthrough(cluster, keep)
        failed = False
    except Stopped:
        failed = False
        raise
    finally:
        if failed and not keep:
            print(f"the programs' logs are kept in {workdir}", file=sys.stderr)
        elif not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `make demo` (`python examples/demo.py [--keep] [--direct]`)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="keep the cluster running until Ctrl-C")
    parser.add_argument(
        "--direct",
        action="store_true",
        help="start grove-operator and grove-scheduler as processes instead of installing them with kubectl apply -k",
    )
    args = parser.parse_args(argv)
    for sig in STOP_SIGNALS:
        signal.signal(sig, raise_stopped)
    try:
        run(keep=args.keep, direct=args.direct)
    except Stopped as stop:
        print(f"\nstopped ({stop}); every process the demo started has stopped", flush=True)
        return 0 if args.keep and stop.signum == signal.SIGINT else 128 + stop.signum
    print("\nDemo finished; every process it started has stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
