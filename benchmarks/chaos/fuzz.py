"""Fuzzing: hypothesis-generated PodCliqueSets, valid, boundary and hostile, through the API of a running cluster.

A single grove-operator runs with its admission webhooks on. Each generated body is POSTed as is (NaN, lone
surrogates, wrong types, 64-character names and all). The oracle, per body: refused with 400/422 and a message that
names a field (`spec.…`, `metadata.…`), or accepted and then either worked on (its generation observed) or refused by
the operator in `status.lastErrors`. Anything else is a finding: a 5xx, a refusal naming no field, an accepted object
never answered, the operator or grove-sim exiting. Resident memory of both is sampled after every batch.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import aiohttp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from tqdm import tqdm

from benchmarks.e2e.procs import Child, free_port, memory_mib
from benchmarks.sim_throughput_proc import SimProcess

__all__ = ["NAMESPACE", "examples", "pcs_bodies", "run_fuzz"]

NAMESPACE = "chaos-fuzz"
BATCH = 50
ANSWER_TIMEOUT = 20.0
FIELD = re.compile(r"\b(spec|metadata)(\.|\[|\b)")

_NUMBERS = st.one_of(st.integers(-3, 6), st.sampled_from([2**31, 2**63, -(2**31)]), st.floats(), st.text(max_size=4),
                     st.none(), st.booleans())  # fmt: skip
_NAMES = st.one_of(st.sampled_from(["a" * 63, "a" * 64, "A-bad", "-x", "x-", "a.b", ""]), st.text(max_size=70))


def _clique(name: str, replicas: int) -> dict[str, Any]:
    container = {"name": "c", "image": "registry.example.com/fuzz:1", "resources": {"requests": {"cpu": "10m"}}}
    return {"name": name, "spec": {"roleName": name, "replicas": replicas, "podSpec": {"containers": [container]}}}


@st.composite
def _valid(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), min_size=1, max_size=3, unique=True))
    cliques = [_clique(name, draw(st.integers(1, 3))) for name in names]
    template: dict[str, Any] = {"cliques": cliques}
    if len(names) > 1 and draw(st.booleans()):
        replicas = draw(st.integers(1, 2))
        template["podCliqueScalingGroups"] = [
            {"name": "sg", "cliqueNames": names[:2], "replicas": replicas, "minAvailable": 1}
        ]
    return {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "metadata": {"name": ""},
            "spec": {"replicas": draw(st.integers(0, 2)), "template": template}}  # fmt: skip


# (where, what): a mutation puts a drawn value at a path of a valid body
_MUTATIONS: list[tuple[tuple[str | int, ...], st.SearchStrategy[Any]]] = [
    (("spec", "replicas"), _NUMBERS),
    (("spec", "template", "cliques", 0, "spec", "replicas"), _NUMBERS),
    (("spec", "template", "cliques", 0, "spec", "minAvailable"), _NUMBERS),
    (("spec", "template", "cliques", 0, "name"), _NAMES),
    (("metadata", "name"), _NAMES),
    (("spec", "template", "cliques"), st.one_of(st.just([]), st.none(), st.just([_clique("d", 1), _clique("d", 1)]))),
    (("spec", "template", "cliques", 0, "spec", "startsAfter"), st.lists(st.text(max_size=8), max_size=3)),
    (("spec", "template", "startupType"), st.text(max_size=24)),
    (("spec", "template", "podCliqueScalingGroups"),
     st.lists(st.fixed_dictionaries({"name": _NAMES, "cliqueNames": st.lists(st.text(max_size=6), max_size=3),
                                     "replicas": _NUMBERS, "minAvailable": _NUMBERS}), max_size=2)),
    (("spec", "template", "cliques", 0, "spec", "podSpec", "containers", 0, "resources", "requests", "cpu"),
     st.one_of(st.sampled_from(["abc", "-1", "1e400", "0", "99999999"]), st.text(max_size=6))),
    (("spec", "template", "cliques", 0, "spec", "podSpec"),
     st.one_of(st.none(), st.just({}), st.just({"containers": []}))),
    (("spec", "template", "topologyConstraint"),
     st.fixed_dictionaries({"topologyName": st.text(max_size=8),
                            "pack": st.fixed_dictionaries({"required": st.text(max_size=8)})})),
    (("spec", "template", "unknownField"),
     st.recursive(st.none() | st.integers(), lambda inner: st.lists(inner, max_size=3), max_leaves=20)),
    (("spec",), st.one_of(st.none(), st.just({}), st.just([]), st.text(max_size=5))),
]  # fmt: skip


def _put(body: Any, path: tuple[str | int, ...], value: Any) -> None:
    target = body
    for step in path[:-1]:
        try:
            target = target[step]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(target, dict) or (isinstance(target, list) and isinstance(path[-1], int) and path[-1] < len(target)):
        target[path[-1]] = value  # type: ignore[index]


@st.composite
def pcs_bodies(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """(category, body): `valid` unchanged, else `boundary`/`hostile` with one to three mutations applied."""
    body = draw(_valid())
    chosen = draw(st.lists(st.sampled_from(range(len(_MUTATIONS))), max_size=3, unique=True))
    for index in chosen:
        path, values = _MUTATIONS[index]
        _put(body, path, draw(values))
    category = "valid" if not chosen else "boundary" if len(chosen) == 1 else "hostile"
    return category, body


def examples(count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` generated bodies, the same for the same seed."""
    found: list[tuple[str, dict[str, Any]]] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(pcs_bodies())
    def collect(example: tuple[str, dict[str, Any]]) -> None:
        found.append(example)

    collect()
    return found


async def _answered(session: aiohttp.ClientSession, url: str, name: str) -> str:
    """`reported` (lastErrors), `worked-on` (generation observed) or `unanswered` within the timeout."""
    deadline = time.monotonic() + ANSWER_TIMEOUT
    while time.monotonic() < deadline:
        async with session.get(f"{url}/{name}") as response:
            if response.status != 200:
                return "gone"
            obj = await response.json()
        status = obj.get("status") or {}
        if status.get("lastErrors"):
            return "reported"
        if status.get("observedGeneration") == obj["metadata"].get("generation"):
            return "worked-on"
        await asyncio.sleep(0.25)
    return "unanswered"


def _operator(kubeconfig: Path, logdir: Path) -> Child:
    port = free_port()
    argv = ["-m", "grove_operator.cli", "--kubeconfig", str(kubeconfig), "--no-leader-elect", "--health-port",
            str(port), "--metrics-port", "0", "--webhook-port", "0", "--webhook-namespace", NAMESPACE,
            "--log-level", "WARNING"]  # fmt: skip
    return Child("grove-operator-fuzz", argv, logdir, port)


async def _webhooks_registered(session: aiohttp.ClientSession, url: str) -> None:
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    while True:
        async with session.get(url + path) as response:
            if (await response.json()).get("items"):
                return
        await asyncio.sleep(0.2)


async def run_fuzz(sim: SimProcess, workdir: Path, count: int, seed: int, progress: bool) -> dict[str, Any]:
    """Submit `count` generated PodCliqueSets in batches; the figures and the findings."""
    bodies = await asyncio.to_thread(examples, count, seed)
    operator = _operator(sim.kubeconfig, workdir).start()
    outcome: dict[str, int] = {}
    submitted: set[Any] = set()
    findings: list[str] = []
    rss: dict[str, list[float]] = {"grove-operator": [], "grove-sim": []}
    url = f"{sim.url}/apis/grove.io/v1alpha1/namespaces/{NAMESPACE}/podcliquesets"
    headers = {"Authorization": f"Bearer {sim.token}", "Content-Type": "application/json"}
    try:
        operator.wait_ready()
        async with aiohttp.ClientSession(headers=headers) as session:
            await asyncio.wait_for(_webhooks_registered(session, sim.url), 60)
            bar = tqdm(total=len(bodies), desc="fuzzed PodCliqueSets", unit="pcs", disable=not progress)
            for start in range(0, len(bodies), BATCH):
                accepted = []
                for offset, (category, body) in enumerate(bodies[start : start + BATCH]):
                    index = start + offset
                    if isinstance(body.get("metadata"), dict) and body["metadata"].get("name") == "":
                        body["metadata"]["name"] = f"fz{index:05d}"
                    data = json.dumps(body).encode()
                    async with session.post(url, data=data) as response:
                        code, answer = response.status, await response.text()
                    verdict = _verdict(code, answer)
                    name = body["metadata"].get("name") if isinstance(body.get("metadata"), dict) else None
                    if code == 409 and name in submitted:  # a hostile name drawn twice; the first may still exist
                        verdict = "refused-name-reused"
                    submitted.add(name)
                    outcome[f"{category}:{verdict}"] = outcome.get(f"{category}:{verdict}", 0) + 1
                    if verdict == "accepted":
                        accepted.append(json.loads(answer)["metadata"]["name"])
                    elif verdict not in ("refused-field-named", "refused-name-reused"):
                        findings.append(f"#{index} {category}: {code} {answer[:300]} body: {data[:600]!r}")
                answers = await asyncio.gather(*(_answered(session, url, name) for name in accepted))
                for name, answer in zip(accepted, answers, strict=True):
                    outcome[f"accepted:{answer}"] = outcome.get(f"accepted:{answer}", 0) + 1
                    if answer == "unanswered":
                        findings.append(f"{name}: accepted but neither worked on nor reported in lastErrors")
                    async with session.delete(f"{url}/{name}"):
                        pass
                for name, pid in (("grove-operator", operator.pid), ("grove-sim", sim.pid)):
                    rss[name].append(round(memory_mib(pid)[0], 1))
                if not operator.alive():
                    findings.append(f"grove-operator exited (status {operator.proc and operator.proc.returncode})")
                    operator = _operator(sim.kubeconfig, workdir).start()
                    operator.wait_ready()
                bar.update(min(BATCH, len(bodies) - start))
            bar.close()
    finally:
        operator_alive = operator.alive()
        operator.stop()
    return {
        "examples": len(bodies),
        "outcomes": dict(sorted(outcome.items())),
        "findings": len(findings),
        "finding_examples": findings[:20],
        "operator_alive_at_end": operator_alive,
        "rss_mib_samples": rss,
    }


def _verdict(code: int, answer: str) -> str:
    if code == 201:
        return "accepted"
    if code in (400, 422):
        try:
            message = str(json.loads(answer).get("message", ""))
        except ValueError:
            return "refused-not-a-status"
        return "refused-field-named" if FIELD.search(message) else "refused-no-field"
    return f"status-{code}"


async def _fuzz_only(count: int, seed: int, nodes: int) -> dict[str, Any]:
    import tempfile

    from benchmarks.chaos.runner import install
    from grove_runtime.client import KubeClient

    with tempfile.TemporaryDirectory(prefix="grove-fuzz-") as tmp, SimProcess(nodes) as sim:
        admin = KubeClient.from_kubeconfig_light(str(sim.kubeconfig))
        try:
            await install(admin)
        finally:
            await admin.close()
        return await run_fuzz(sim, Path(tmp), count, seed, progress=True)


if __name__ == "__main__":  # `python -m benchmarks.chaos.fuzz [examples] [seed]`: the fuzz phase alone, as JSON
    import sys

    arguments = [int(a) for a in sys.argv[1:3]]
    count, chosen_seed = (arguments + [1000, 1][len(arguments) :])[:2]
    print(json.dumps(asyncio.run(_fuzz_only(count, chosen_seed, nodes=20)), indent=1))
