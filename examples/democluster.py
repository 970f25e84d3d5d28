"""The demo's processes: grove-sim, and Grove running in it.

By default Grove is installed the way a user installs it: `kubectl apply -k deploy/overlays/sim` into a grove-sim
set up for that overlay (`grove_sim.overlay`: RBAC, TLS, the image `grove:dev` run as local processes), so
grove-operator and grove-scheduler run as the Deployments' pods, two replicas each with leader election, and are
looked at with the documented commands (`kubectl logs`, `kubectl port-forward svc/grove-scheduler-metrics`).
With `--direct` (development, benchmarks) grove-sim runs without authorization and the demo starts one
grove-operator and one grove-scheduler itself, as processes talking to grove-sim with the administrator's kubeconfig.

Everything started here stops on the way out, whatever ends the demo: each program runs in its own process group
and is told by the kernel (PR_SET_PDEATHSIG) to stop when the demo dies; grove-sim's container processes live in
grove-sim's process group and die with it. The clients stop before the API server, so they release their leases at
once instead of retrying a server that is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import TypeVar

from grove_sim.overlay import overlay_env, overlay_flags

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OVERLAY = ROOT / "deploy" / "overlays" / "sim"
NAMESPACE = "grove-system"
BOLD, DIM, RESET = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
READY_DELAY = 1.0
"""Seconds from a pod's start to Ready in the simulated cluster, so startup order is visible in the times: at
least 1 s, because Ready times (`lastTransitionTime`) have whole seconds, and a child Ready less than a second after
its parents could share their second and read as "not after them"."""
METRICS_PORT = 8080
"""The local port of the documented `kubectl port-forward ... 8080:8080` (another free one when it is taken)."""
PR_SET_PDEATHSIG = 1
T = TypeVar("T")


class Stopped(Exception):
    """The demo was told to stop (SIGTERM, SIGHUP or Ctrl-C)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def raise_stopped(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signum)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the demo dies, however it dies (Linux; elsewhere a no-op)."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the demo died before the request took effect
        os._exit(1)


def step(title: str) -> None:
    """Print a section header so the demo output reads like a walkthrough."""
    print(f"\n{BOLD}==> {title}{RESET}", flush=True)


class Cluster:
    """The processes of one demo run and the kubectl environment that reaches them."""

    def __init__(self, workdir: Path, *, show_paths: bool, direct: bool) -> None:
        self.workdir = workdir
        self.show_paths = show_paths
        self.direct = direct
        self.kubeconfig = workdir / "kubeconfig"
        self.env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), KUBECACHEDIR=str(workdir / "kubecache"))
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        """Start one program in its own process group, its output in a log file under the work directory."""
        with (self.workdir / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(env or self.env),
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        self.procs.append((name, proc))
        where = f", log: {log.name}" if self.show_paths else ""
        print(f"{DIM}started {name} (pid {proc.pid}){where}{RESET}", flush=True)

    def wait_for_kubeconfig(self, timeout: float = 60.0) -> None:
        """grove-sim writes the kubeconfig only once it serves requests."""
        deadline = time.monotonic() + timeout
        while not self.kubeconfig.exists():
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise SystemExit(f"{name} exited with {proc.returncode}; its log: {self.workdir / (name + '.log')}")
            if time.monotonic() > deadline:
                raise SystemExit("grove-sim did not become ready in time")
            time.sleep(0.1)

    def kubectl(self, *args: str, check: bool = True, quiet: bool = False, stdin: str | None = None) -> str:
        """Run the real kubectl against the simulated cluster, echoing the command like a person would type it."""
        if not quiet:
            print(f"{DIM}$ kubectl {' '.join(args)}{RESET}", flush=True)
        result = subprocess.run(
            ["kubectl", *args], env=self.env, input=stdin, capture_output=True, text=True, check=False
        )
        if not quiet:
            sys.stdout.write(result.stdout)
            sys.stdout.write(result.stderr)
        if check and result.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args)} failed with {result.returncode}")
        return result.stdout

    def log_line(self, name: str, accept: Callable[[str], T | None], timeout: float = 30.0) -> T:
        """The first non-None ``accept(line)`` over the lines of program ``name``'s log, waiting for it to appear."""
        log = self.workdir / f"{name}.log"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in log.read_text(errors="replace").splitlines():
                if (found := accept(line)) is not None:
                    return found
            time.sleep(0.1)
        raise SystemExit(f"{name} did not log what the demo waits for; its log: {log}")

    def stop(self) -> None:
        """Stop the clients, then the API server (SIGTERM to each process group, SIGKILL after 10 s): the demo
        leaves nothing running. Further stop signals are ignored until every process is gone."""
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
        try:
            clients = [proc for name, proc in self.procs if name != "grove-sim"]
            servers = [proc for name, proc in self.procs if name == "grove-sim"]
            for group in (clients, servers):
                for proc in group:
                    if proc.poll() is None:
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(proc.pid, signal.SIGTERM)
                for proc in group:
                    try:
                        proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


@contextlib.contextmanager
def running_cluster(workdir: Path, *, show_paths: bool, direct: bool) -> Iterator[Cluster]:
    """A simulated cluster for the duration of the block: set up for deploy/overlays/sim, or (direct) open to
    programs the demo starts itself."""
    cluster = Cluster(workdir, show_paths=show_paths, direct=direct)
    try:
        flags = ["--exec-image", f"grove-initc={BIN / 'grove-initc'}"] if direct else overlay_flags()
        cluster.start(
            "grove-sim",
            [
                str(BIN / "grove-sim"),
                *("up", "--kubeconfig", str(cluster.kubeconfig), "--port", "0"),
                *("--nodes", "64", "--gpus-per-node", "8", "--topology", "block=2,rack=4"),
                *("--ready-delay", str(READY_DELAY), *flags),
            ],
            env=None if direct else overlay_env(cluster.env),
        )
        cluster.wait_for_kubeconfig()
        yield cluster
    finally:
        cluster.stop()


def _listening_port(line: str) -> int | None:
    with contextlib.suppress(ValueError):
        entry = json.loads(line)
        if isinstance(entry, dict) and entry.get("event") == "listening" and "metrics" in entry["serves"]:
            return int(entry["port"])
    return None


def start_directly(cluster: Cluster) -> str:
    """--direct: the CRDs, then grove-operator and grove-scheduler as processes; the scheduler's metrics URL."""
    cluster.kubectl("apply", "-f", str(ROOT / "crds"))
    cluster.kubectl("create", "namespace", NAMESPACE)
    loopback_any_port = "127.0.0.1:0"
    common = ("--kubeconfig", str(cluster.kubeconfig), "--lease-namespace", NAMESPACE)
    cluster.start(
        "grove-operator",
        [
            str(BIN / "grove-operator"),
            *common,
            *("--health-probe-bind-address", loopback_any_port, "--metrics-bind-address", loopback_any_port),
            *("--webhook-port", "0"),
        ],
    )
    cluster.start(
        "grove-scheduler", [str(BIN / "grove-scheduler"), *common, "--metrics-bind-address", loopback_any_port]
    )
    return f"http://127.0.0.1:{cluster.log_line('grove-scheduler', _listening_port)}/metrics"


def install(cluster: Cluster) -> None:
    """`kubectl apply -k deploy/overlays/sim`, then wait as a user would until both Deployments are rolled out; show
    the pods (each container is a local process: its containerID is grove-sim://<pid>) and the Lease holders."""
    cluster.kubectl("apply", "-k", str(OVERLAY))
    for name in ("grove-operator", "grove-scheduler"):
        cluster.kubectl("rollout", "status", "-n", NAMESPACE, f"deployment/{name}", "--timeout=120s")
    columns = (
        "POD:.metadata.name,NODE:.spec.nodeName,IP:.status.podIP,READY:.status.containerStatuses[0].ready,"
        "CONTAINER:.status.containerStatuses[0].containerID"
    )
    cluster.kubectl("get", "pods", "-n", NAMESPACE, "-o", f"custom-columns={columns}")
    cluster.kubectl("get", "leases", "-n", NAMESPACE)


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_forward(cluster: Cluster, target: str, name: str, port: int = METRICS_PORT) -> str:
    """`kubectl port-forward -n grove-system TARGET PORT:8080`, kept running until the demo stops; the local URL of
    the metrics. PORT is 8080 as documented unless something listens there already (then a free one, said so)."""
    if not _port_free(port):
        print(f"(local port {port} is taken; forwarding {(port := _free_port())} instead)")
    argv = ["kubectl", "port-forward", "-n", NAMESPACE, target, f"{port}:8080"]
    print(f"{DIM}$ {' '.join(argv)} &{RESET}", flush=True)
    cluster.start(name, argv)
    cluster.log_line(name, lambda line: line if line.startswith("Forwarding from 127.0.0.1") else None)
    return f"http://127.0.0.1:{port}/metrics"


def fetch(url: str) -> str:
    """A GET of ``url`` as text ('' when it fails, said so)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return str(response.read().decode())
    except OSError as exc:
        print(f"(metrics unavailable at {url}: {exc})")
        return ""


def scheduler_metrics(cluster: Cluster) -> str:
    """The documented troubleshooting commands: the scheduler's log, and its `grove_*` metrics through
    `kubectl port-forward svc/grove-scheduler-metrics`. A Service forwards to one of its pods; when that one is the
    standby replica (it has bound nothing), the leader's are read through `kubectl port-forward pod/<holder>`."""
    cluster.kubectl("logs", "-n", NAMESPACE, "deployment/grove-scheduler", "--tail=3")
    url = port_forward(cluster, "svc/grove-scheduler-metrics", "port-forward-svc")
    text = fetch(url)
    lines = [line for line in text.splitlines() if line.startswith("grove_")]
    print(f"{DIM}$ curl -s {url} | grep -c ^grove_{RESET}\n{len(lines)}")
    bound = [line for line in lines if line.startswith("grove_scheduler_pods_bound_total")]
    if not bound or bound[0].endswith(" 0.0"):
        holder = cluster.kubectl(
            "get", "lease", "-n", NAMESPACE, "grove-scheduler", "-o", "jsonpath={.spec.holderIdentity}", quiet=True
        )
        pod = holder.rpartition("-")[0]
        print(f"(that replica is the standby; the Lease is held by {pod}, whose metrics follow)")
        text = fetch(port_forward(cluster, f"pod/{pod}", "port-forward-leader", _free_port()))
    return text
