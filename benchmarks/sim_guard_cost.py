"""What RBAC and the fault-injection hooks cost grove-sim.

Two measurements:

* in process, the cost of one RBAC decision (a service account allowed and refused, an administrator) with no other
  binding and with 10,000 bindings of other users (the index makes it independent of their number), and of the
  request-path hooks when no fault is configured and authorization is ``AlwaysAllow`` (the default);
* with ``--baseline-src DIR``, the throughput benchmark (``benchmarks.sim_throughput --quick --repeat 1``) run
  alternately on DIR's ``grove_sim`` (for instance an export of main) and on this tree's, ``--pairs`` times, reporting
  per phase the medians of server CPU per request and of the rate, and the median of the paired differences
  (interleaving keeps both sides under the same machine load)::

    .venv/bin/python -m benchmarks.sim_guard_cost
    git archive main src | tar -x -C /tmp/main && .venv/bin/python -m benchmarks.sim_guard_cost --baseline-src /tmp/main
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any

from grove_sim.auth.attributes import Attributes
from grove_sim.auth.authentication import ADMIN, service_account_user
from grove_sim.auth.rbac import RBACAuthorizer
from grove_sim.http.context import ApiContext
from grove_sim.http.faults import FaultInjector
from grove_sim.registry.core import Core
from grove_sim.registry.resources import Registry
from grove_sim.storage.store import Store

RESULTS = Path(__file__).resolve().parent / "results"
PHASES = ("create", "bind", "status_patch", "status_patch_k8s_asyncio")
_RBAC = "rbac.authorization.k8s.io"


def _authorizer(other_bindings: int) -> RBACAuthorizer:
    store, registry = Store(), Registry()
    core = Core(store, registry)
    authorizer = RBACAuthorizer(store)
    roles, bindings = registry.get(_RBAC, "v1", "clusterroles"), registry.get(_RBAC, "v1", "clusterrolebindings")
    assert roles is not None
    assert bindings is not None
    rules = [
        {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
    ]
    core.create(roles, "", {"metadata": {"name": "scheduler"}, "rules": rules})
    ref = {"apiGroup": _RBAC, "kind": "ClusterRole", "name": "scheduler"}
    subject = {"kind": "ServiceAccount", "namespace": "grove-system", "name": "scheduler"}
    core.create(bindings, "", {"metadata": {"name": "scheduler"}, "roleRef": ref, "subjects": [subject]})
    for i in range(other_bindings):
        other = {"kind": "User", "apiGroup": _RBAC, "name": f"user-{i}"}
        core.create(bindings, "", {"metadata": {"name": f"other-{i}"}, "roleRef": ref, "subjects": [other]})
    return authorizer


def _per_call(fn: Any, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def in_process() -> dict[str, Any]:
    """Microseconds per RBAC decision, and nanoseconds of the hooks per request with faults off."""
    user = service_account_user("grove-system", "scheduler")
    cases = {
        "service account, allowed (create pods/binding)": Attributes(
            user, "create", resource="pods", subresource="binding", namespace="ns", name="p"
        ),
        "service account, refused (delete pods)": Attributes(user, "delete", resource="pods", namespace="ns", name="p"),
        "system:masters": Attributes(ADMIN, "create", resource="pods", namespace="ns"),
    }
    decisions: dict[str, dict[str, float]] = {}
    for others in (0, 10_000):
        authorizer = _authorizer(others)
        decisions[f"{others} other bindings"] = {
            label: round(_per_call(lambda a=attributes, z=authorizer: z.authorize(a), 20_000) * 1e6, 2)
            for label, attributes in cases.items()
        }
    store = Store()
    ctx = ApiContext(Core(store, Registry()), faults=FaultInjector(store))

    def hooks() -> None:
        faults = ctx.faults
        if faults is not None and faults.active:
            raise AssertionError("no fault is configured")
        if ctx.authorizer is not None:
            raise AssertionError("AlwaysAllow has no authorizer")

    return {"rbac_decision_us": decisions, "hooks_faults_off_ns": round(_per_call(hooks, 200_000) * 1e9)}


def _throughput(src: Path | None, out: Path) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src / "src")
    command = [sys.executable, "-m", "benchmarks.sim_throughput", "--quick", "--repeat", "1", "--no-progress"]
    subprocess.run([*command, "--json", str(out)], env=env, check=True, stdout=subprocess.DEVNULL)
    phases: dict[str, Any] = json.loads(out.read_text())["summary"]["phases"]
    return phases


def interleaved(baseline: Path, pairs: int) -> dict[str, Any]:
    """``pairs`` alternating throughput runs, baseline first; medians and median paired differences per phase."""
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
    with tempfile.TemporaryDirectory(prefix="sim-guard-cost-") as tmp:
        for i in range(pairs):
            runs["baseline"].append(_throughput(baseline, Path(tmp) / f"a{i}.json"))
            runs["this"].append(_throughput(None, Path(tmp) / f"b{i}.json"))
            print(f"pair {i + 1}/{pairs} done", file=sys.stderr)
    summary: dict[str, Any] = {}
    for phase in PHASES:
        row: dict[str, Any] = {}
        for metric in ("server_cpu_ms_per_req", "rate_per_s"):
            a = [r[phase][metric] for r in runs["baseline"]]
            b = [r[phase][metric] for r in runs["this"]]
            row[metric] = {
                "baseline_median": round(statistics.median(a), 3),
                "this_median": round(statistics.median(b), 3),
                "paired_difference_median_pct": round(
                    statistics.median((y - x) / x * 100 for x, y in zip(a, b, strict=True)), 1
                ),
                "baseline": a,
                "this": b,
            }
        summary[phase] = row
    return summary


def main(argv: list[str] | None = None) -> int:
    """Measure, print and write ``benchmarks/results/sim_guard_cost.json``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sim_guard_cost", description=__doc__)
    parser.add_argument("--baseline-src", type=Path, default=None, help="a source tree to compare with (its src/)")
    parser.add_argument("--pairs", type=int, default=6, help="interleaved throughput runs per side")
    parser.add_argument("--json", type=Path, default=RESULTS / "sim_guard_cost.json", help="result file")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "command": " ".join(["python -m benchmarks.sim_guard_cost", *(argv if argv is not None else sys.argv[1:])]),
        "in_process": in_process(),
    }
    if args.baseline_src is not None:
        result["throughput_interleaved"] = interleaved(args.baseline_src, args.pairs)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
