"""`make demo`: a Grove system on the embedded simulated GPU cluster, driven only through the real kubectl.

Starts `grove-sim` as a separate process (2 blocks x 4 racks x 8 nodes x 8 GPUs), then, when they are installed,
`grove-operator` and `grove-scheduler` as separate processes too; installs the CRDs, applies a disaggregated
inference PodCliqueSet, scales it, and prints what happened. It stops everything it started on the way out
(also on Ctrl-C). `--keep` leaves the cluster running until Ctrl-C so you can explore it with kubectl.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
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


def run(keep: bool) -> None:
    """The walkthrough itself."""
    if shutil.which("kubectl") is None:
        raise SystemExit("kubectl is not on PATH (make demo installs it; or apt-get install kubernetes-client)")
    workdir = Path(tempfile.mkdtemp(prefix="grove-demo-"))
    with running_cluster(workdir) as cluster:
        step("A simulated GPU cluster: 2 blocks x 4 racks x 8 nodes x 8 GPUs")
        cluster.kubectl("version")
        out = cluster.kubectl("get", "nodes", "--no-headers", quiet=True)
        print(f"{len(out.splitlines())} nodes; the first rack:")
        cluster.kubectl(
            "get",
            "nodes",
            "-l",
            "topology.kubernetes.io/rack=rack-0",
            "-L",
            "topology.kubernetes.io/block,topology.kubernetes.io/rack,nvidia.com/gpu.product",
        )

        step("Install the Grove CRDs (generated from grove_api)")
        cluster.kubectl("apply", "-f", str(ROOT / "crds"))
        cluster.kubectl("get", "crd")

        step("Describe the cluster topology and apply a disaggregated-inference PodCliqueSet")
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "cluster-topology.yaml"))
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "disaggregated-inference.yaml"))
        cluster.kubectl("get", "grove")

        step("Scale it through the scale subresource, as an HPA would")
        cluster.kubectl("scale", "pcs/llm", "--replicas=2")
        cluster.kubectl("get", "pcs", "llm")

        step("Invalid input is refused with a Status that names the field")
        bad = workdir / "bad.yaml"
        bad.write_text(
            "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: broken}\n"
            "spec: {replicas: -1, template: {cliques: []}}\n"
        )
        cluster.kubectl("apply", "-f", str(bad), check=False)

        step("Explore it yourself")
        print(f"export KUBECONFIG={cluster.kubeconfig}")
        print("kubectl get grove; kubectl get nodes -L topology.kubernetes.io/rack; kubectl describe pcs llm")
        if keep:
            print("\nThe cluster keeps running; press Ctrl-C to stop it.")
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
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
