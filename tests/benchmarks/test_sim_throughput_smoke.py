"""A tiny run of the grove-sim throughput benchmark against a real child process, plus its parsing and binder logic.

No timing is asserted: the point is that the benchmark measures what it claims (every pod created and bound where
the binder put it, every watch event delivered) and that its helpers are right for any input.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from benchmarks.sim_throughput import BenchConfig, measure
from benchmarks.sim_throughput_phases import Binder, parse_quantity, pod_body, pod_requests
from benchmarks.sim_throughput_proc import SimProcess
from benchmarks.sim_throughput_report import markdown, summarize
from benchmarks.sim_throughput_watch import parse_event_line
from hypothesis import given
from hypothesis import strategies as st

PODS = 200
NODES = 20


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    """A 20-node grove-sim in a child process, stopped after the module."""
    with SimProcess(NODES, topology="block=2,rack=4") as process:
        yield process


@pytest.fixture(scope="module")
def config() -> BenchConfig:
    """The tiny load of the smoke run."""
    return BenchConfig(pods=PODS, nodes=NODES, watchers=2, concurrency=16, client_pods=20, progress=False)


@pytest.fixture(scope="module")
def smoke(sim: SimProcess, config: BenchConfig) -> dict[str, Any]:
    """One measured repetition against the child process (on its own event loop)."""
    return asyncio.run(measure(sim.url, config, kubeconfig=sim.kubeconfig, token=sim.token, rss=sim.rss_mib))


async def _pods(sim: SimProcess) -> dict[str, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(f"{sim.url}/api/v1/namespaces/default/pods") as resp:
        body = json.loads(await resp.read())
    return {p["metadata"]["name"]: p for p in body["items"]}


@pytest.mark.slow
def test_smoke_result_structure(smoke: dict[str, Any]) -> None:
    """The result has every phase with the expected request counts, no errors, and positive RSS figures."""
    phases = smoke["phases"]
    assert set(phases) == {"create", "bind", "status_patch", "status_patch_k8s_asyncio"}
    assert [phases[p]["requests"] for p in ("create", "bind", "status_patch", "status_patch_k8s_asyncio")] == [
        PODS,
        PODS,
        PODS,
        20,
    ]
    assert all(row["errors"] == 0 and row["p50_ms"] <= row["p99_ms"] for row in phases.values())
    assert smoke["rss_mib"]["idle"] > 0
    assert smoke["rss_mib"]["loaded"] > 0


@pytest.mark.slow
async def test_smoke_every_pod_created_and_bound(smoke: dict[str, Any], sim: SimProcess) -> None:
    """Every created pod exists on the server and every bound pod carries a nodeName and runs."""
    assert smoke["verify"]["missing"] == 0
    assert smoke["verify"]["wrong_node"] == 0
    assert smoke["verify"]["bound"] == PODS
    pods = await _pods(sim)
    names = [f"bench-{i:06d}" for i in range(PODS)]
    assert all(name in pods for name in names)
    assert all(pods[name]["spec"].get("nodeName") for name in names)
    assert {pods[name]["status"]["phase"] for name in names} == {"Running"}
    assert all(any(c["type"] == "grove.io/BenchProbe" for c in pods[name]["status"]["conditions"]) for name in names)


@pytest.mark.slow
def test_smoke_watchers_receive_every_event(smoke: dict[str, Any]) -> None:
    """Each watcher saw every known event: creates, binds, kubelet updates and both patch phases, nothing missed."""
    watch = smoke["watch"]
    expected = PODS * 4 + 20 + 1  # create, bind, kubelet Running, patch; client patches; sentinel
    assert watch["known_events"] == expected
    for watcher in watch["watchers"]:
        assert watcher["caught_up"]
        assert watcher["events"] == expected
        assert watcher["missed_events"] == 0
        assert watcher["stale_pods"] == 0
        assert watcher["by_type"] == {"ADDED": PODS, "MODIFIED": expected - PODS}


@pytest.mark.slow
def test_smoke_summary_and_table(smoke: dict[str, Any], config: BenchConfig) -> None:
    """The summary of one repetition carries its figures and the Markdown table names every phase."""
    summary = summarize([smoke])
    assert summary["phases"]["create"]["rate_per_s"] == smoke["phases"]["create"]["rate_per_s"]
    assert summary["watch_missed_events"] == 0
    table = markdown({"config": vars(config), "summary": summary, "repetitions": [smoke]})
    assert "pods/binding" in table
    assert "kubernetes-asyncio" in table


def test_summary_takes_medians() -> None:
    """With three repetitions the summary reports the median rate, not the mean or the last."""
    reps = []
    for rate in (100.0, 900.0, 300.0):
        reps.append(
            {
                "phases": {"create": {"requests": 1, "rate_per_s": rate, "p50_ms": rate, "p99_ms": rate, "errors": 0}},
                "rss_mib": {"idle": rate, "loaded": rate, "per_pod_kib": 1.0},
                "watch": {"watchers": [], "catch_up_s": 0.0},
                "verify": {"missing": 0, "wrong_node": 0, "phases": {}},
            }
        )
    summary = summarize(reps)
    assert summary["phases"]["create"]["rate_per_s"] == 300.0
    assert summary["rss_idle_mib"] == 300.0


_names = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)


@given(
    type_=st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]),
    name=_names,
    rv=st.integers(min_value=1, max_value=10**12),
    labels=st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=4),
    message=st.text(max_size=30),
)
def test_parse_event_line_matches_json(type_: str, name: str, rv: int, labels: dict[str, str], message: str) -> None:
    """The byte-search parser agrees with json.loads for any labels and status text, quotes and escapes included."""
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "namespace": "default", "resourceVersion": str(rv)},
        "status": {"message": message, "resourceVersion": "not-this-one"},
    }
    line = json.dumps({"type": type_, "object": obj}, separators=(",", ":"), ensure_ascii=False).encode()
    event = parse_event_line(line)
    assert (event.type, event.name, event.rv) == (type_, name, rv)


def test_parse_event_line_error_event() -> None:
    """An ERROR event (410 Expired) is recognised with its status code."""
    line = b'{"type":"ERROR","object":{"kind":"Status","metadata":{},"reason":"Expired","code":410}}'
    event = parse_event_line(line)
    assert (event.type, event.code) == ("ERROR", 410)


@pytest.mark.parametrize(
    ("text", "value"), [("500m", 0.5), ("192", 192.0), ("2048Gi", 2048 * 2.0**30), ("1k", 1000.0), ("8", 8.0)]
)
def test_parse_quantity(text: str, value: float) -> None:
    """Kubernetes quantities used by nodes and pods parse to their numeric value."""
    assert parse_quantity(text) == value


@given(
    gpus=st.lists(st.integers(min_value=0, max_value=8), min_size=1, max_size=12),
    count=st.integers(min_value=0, max_value=200),
)
def test_binder_never_overcommits(gpus: list[int], count: int) -> None:
    """The binder never puts more requests on a node than its allocatable, and refuses only when nothing fits."""
    nodes = [
        {
            "metadata": {"name": f"n{i}"},
            "status": {"allocatable": {"cpu": "16", "memory": "128Gi", "pods": "6", "nvidia.com/gpu": str(g)}},
        }
        for i, g in enumerate(gpus)
    ]
    binder = Binder(nodes)
    for i in range(count):
        requests = pod_requests(i)
        need = {k: parse_quantity(v) for k, v in requests.items()} | {"pods": 1.0}
        could_fit = any(all(free[k] >= v for k, v in need.items()) for free in binder.free)
        node = binder.place(requests)
        assert (node is not None) == could_fit
    assert all(value >= 0 for free in binder.free for value in free.values())


def test_pod_body_is_realistic() -> None:
    """Benchmark pods are about 1.5 KB, ungated, for grove-scheduler, with requests and labels."""
    for index in (0, 1):
        body = pod_body(index, "default")
        assert 1200 <= len(json.dumps(body)) <= 2000
        assert body["spec"]["schedulerName"] == "grove-scheduler"
        assert "schedulingGates" not in body["spec"]
        assert body["spec"]["containers"][0]["resources"]["requests"] == pod_requests(index)
        assert body["metadata"]["labels"]["grove.io/podgang"]
