"""`make demo`: a Grove system on the embedded simulated GPU cluster, driven only through the real kubectl.

Starts `grove-sim` as a separate process (2 blocks x 4 racks x 8 nodes x 8 GPUs), then, when they are installed,
`grove-operator` and `grove-scheduler` as separate processes too; installs the CRDs, applies a disaggregated
inference PodCliqueSet, scales it, and prints what happened. It stops everything it started on the way out
(also on Ctrl-C). `--keep` leaves the cluster running until Ctrl-C so you can explore it with kubectl.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
RACK, BLOCK = "topology.kubernetes.io/rack", "topology.kubernetes.io/block"
BOLD, DIM, RESET = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")


def step(title: str) -> None:
    """Print a section header so the demo output reads like a walkthrough."""
    print(f"\n{BOLD}==> {title}{RESET}", flush=True)


class Cluster:
    """The processes of one demo run and the kubectl environment that reaches them."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.kubeconfig = workdir / "kubeconfig"
        self.env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), KUBECACHEDIR=str(workdir / "kubecache"))
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, argv: Sequence[str]) -> None:
        """Start one program in its own process group, its output in a log file under the work directory."""
        log = (self.workdir / f"{name}.log").open("wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.procs.append((name, proc))
        print(f"{DIM}started {name} (pid {proc.pid}), log: {log.name}{RESET}")

    def wait_for_kubeconfig(self, timeout: float = 60.0) -> None:
        """grove-sim writes the kubeconfig only once it serves requests."""
        deadline = time.monotonic() + timeout
        while not self.kubeconfig.exists():
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise SystemExit(f"{name} exited with {proc.returncode}; see {self.workdir / (name + '.log')}")
            if time.monotonic() > deadline:
                raise SystemExit("grove-sim did not become ready in time")
            time.sleep(0.1)

    def kubectl(self, *args: str, check: bool = True, quiet: bool = False) -> str:
        """Run the real kubectl against the simulated cluster, echoing the command like a person would type it."""
        if not quiet:
            print(f"{DIM}$ kubectl {' '.join(args)}{RESET}", flush=True)
        result = subprocess.run(["kubectl", *args], env=self.env, capture_output=True, text=True, check=False)
        if not quiet:
            sys.stdout.write(result.stdout)
            sys.stdout.write(result.stderr)
        if check and result.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args)} failed with {result.returncode}")
        return result.stdout

    def stop(self) -> None:
        """SIGTERM every process group, then SIGKILL what is left: the demo leaves nothing running."""
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@contextlib.contextmanager
def running_cluster(workdir: Path) -> Iterator[Cluster]:
    """A simulated cluster for the duration of the block."""
    cluster = Cluster(workdir)
    try:
        cluster.start(
            "grove-sim",
            [
                str(BIN / "grove-sim"),
                *("up", "--kubeconfig", str(cluster.kubeconfig), "--port", "0"),
                *("--nodes", "64", "--gpus-per-node", "8", "--topology", "block=2,rack=4"),
            ],
        )
        cluster.wait_for_kubeconfig()
        yield cluster
    finally:
        cluster.stop()


def free_port() -> int:
    """A free loopback port for the scheduler's metrics endpoint, which the demo reads for solve times."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def report_solve_time(metrics_port: int) -> None:
    """Median-free summary from the scheduler's own Prometheus metrics: gangs placed and mean solve time."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError as exc:
        print(f"(scheduler metrics unavailable: {exc})")
        return
    values = {}
    for line in text.splitlines():
        if line.startswith(("grove_scheduler_solve_duration_seconds_", "grove_scheduler_pods_bound")):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    count = values.get("grove_scheduler_solve_duration_seconds_count", 0.0)
    total = values.get("grove_scheduler_solve_duration_seconds_sum", 0.0)
    if count:
        print(f"placements solved: {count:.0f}, mean solve time {1000 * total / count:.1f} ms")
    print(f"pods bound by grove-scheduler: {values.get('grove_scheduler_pods_bound_total', 0.0):.0f}")


def run(keep: bool) -> None:
    """The walkthrough itself."""
    if shutil.which("kubectl") is None:
        raise SystemExit("kubectl is not on PATH (make demo installs it; or apt-get install kubernetes-client)")
    workdir = Path(tempfile.mkdtemp(prefix="grove-demo-"))
    with running_cluster(workdir) as cluster:
        step("A simulated GPU cluster: 2 blocks x 4 racks x 8 nodes x 8 GPUs")
        cluster.kubectl("version")
        cluster.kubectl("get", "nodes", "-l", f"{RACK}=rack-0", "-L", f"{BLOCK},{RACK},nvidia.com/gpu.product")
        make_nodes_busy(cluster)

        step("Install the Grove CRDs (generated from grove_api), then start grove-operator and grove-scheduler")
        cluster.kubectl("apply", "-f", str(ROOT / "crds"))
        cluster.kubectl("create", "namespace", "grove-system")
        metrics_port = free_port()
        cluster.start(
            "grove-operator",
            [
                str(BIN / "grove-operator"),
                *("--kubeconfig", str(cluster.kubeconfig), "--metrics-port", "0"),
                *("--health-port", "0", "--lease-namespace", "grove-system"),
            ],
        )
        cluster.start(
            "grove-scheduler",
            [str(BIN / "grove-scheduler"), "--kubeconfig", str(cluster.kubeconfig), f"--metrics-port={metrics_port}"],
        )

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

        step("What the scheduler measured")
        report_solve_time(metrics_port)

        step("Invalid input is refused with a Status that names the field")
        bad = workdir / "bad.yaml"
        bad.write_text(
            "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: broken}\n"
            "spec: {replicas: -1, template: {cliques: []}}\n"
        )
        cluster.kubectl("apply", "-f", str(bad), check=False)

        step("Explore it yourself (make demo ARGS=--keep keeps the cluster running)")
        print(f"export KUBECONFIG={cluster.kubeconfig}")
        print("kubectl get grove; kubectl get pods -o wide; kubectl describe pg llm-0; kubectl get events")
        print(f"logs: {workdir}/grove-{{sim,operator,scheduler}}.log")
        if keep:
            print("\nThe cluster keeps running; press Ctrl-C to stop it.")
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
    if not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\nDemo finished; every process it started has stopped.")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point for `make demo` (`python examples/demo.py [--keep]`)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="keep the cluster running until Ctrl-C")
    args = parser.parse_args(argv)
    try:
        run(keep=args.keep)
    except KeyboardInterrupt:
        print("\ninterrupted; stopped every process the demo started")


if __name__ == "__main__":
    main()
