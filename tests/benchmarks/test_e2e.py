"""The end-to-end benchmark: a tiny real run (grove-sim, operator and scheduler processes) and its pure helpers.

No timing is asserted: the run must bind every pod, report non-negative latencies for every gang, hold the required
rack constraints and write its three kinds of output; the helpers must compute the documented definitions and
catch wrong placements.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks.e2e.analysis import gang_times, histogram_quantile, summarize
from benchmarks.e2e.cli import main, select
from benchmarks.e2e.observer import PodTimes
from benchmarks.e2e.scenarios import SCENARIOS, pcs_body, topology_body
from benchmarks.e2e.verify import check_constraints, check_overcommit

RACK = "topology.kubernetes.io/rack"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], Path]:
    """`python -m benchmarks e2e tiny` (8 nodes, 3 gangs of 4 pods) into a temporary results folder."""
    out = tmp_path_factory.mktemp("results")
    status = main(["tiny", "--out", str(out), "--no-progress"])
    folder = out / "e2e-tiny"
    return status, json.loads((folder / "results.json").read_text()), folder


@pytest.mark.slow
def test_tiny_run_binds_every_pod_and_verifies(tiny_run: tuple[int, dict[str, Any], Path]) -> None:
    """Exit 0, all 12 pods and 3 gangs bound, constraints checked and holding, nothing over-committed."""
    status, doc, _ = tiny_run
    assert status == 0
    (result,) = doc["scenarios"]["tiny"]["runs"]
    assert result["verify"]["ok"] is True
    assert result["verify"]["pods_bound"] == 12
    assert result["verify"]["gangs"] == 3
    assert result["verify"]["constraints_checked"] == 3
    assert result["verify"]["constraint_violations"] == 0
    assert result["verify"]["overcommitted_nodes"] == 0
    numbers = result["numbers"]
    assert numbers["pods_bound"] == 12
    assert numbers["gangs_bound"] == 3
    assert numbers["scheduler"]["pods_bound_metric"] == 12


@pytest.mark.slow
def test_tiny_run_reports_latencies_and_throughput(tiny_run: tuple[int, dict[str, Any], Path]) -> None:
    """Every gang has a gang latency and a creation→bound latency; both are non-negative and ordered."""
    _, doc, _ = tiny_run
    numbers = doc["scenarios"]["tiny"]["runs"][0]["numbers"]
    gang, created = numbers["gang_latency_ms"], numbers["create_to_bound_ms"]
    assert gang["count"] == created["count"] == 3
    assert 0 <= gang["min"] <= gang["p50"] <= gang["p99"] <= gang["max"]
    assert 0 <= created["p50"] <= created["p99"] <= created["max"]
    assert gang["max"] <= created["max"]  # a gang is ready only after its PCS was created
    assert numbers["pods_per_s"] > 0
    assert sum(numbers["per_second_timeline"]) == 12
    assert numbers["scheduler"]["solves"] >= 3
    assert numbers["scheduler"]["solve_share"] >= 0
    assert all(numbers["memory_mib"][name]["peak"] > 0 for name in ("sim", "operator", "scheduler"))


@pytest.mark.slow
def test_tiny_run_writes_markdown_and_plot(tiny_run: tuple[int, dict[str, Any], Path]) -> None:
    """latest.md carries the command and a verified row; the bound-pods plot is a PNG."""
    _, doc, folder = tiny_run
    text = (folder / "latest.md").read_text()
    assert "python -m benchmarks e2e tiny" in text
    assert "| tiny | 1 | 12/12 |" in text
    assert text.count("| yes |") == 1
    assert (folder / "bound-tiny.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert doc["command"].startswith("python -m benchmarks e2e tiny")


def test_select_expands_presets_and_applies_overrides() -> None:
    """Presets expand in order without repeats; overrides replace only the given fields."""
    chosen = select(["quick", "tas-quick"], {"nodes": 64, "rate": None})
    assert [s.name for s in chosen] == ["tas-quick", "disagg-quick"]
    assert all(s.nodes == 64 for s in chosen)
    assert chosen[0].rate == SCENARIOS["tas-quick"].rate
    with pytest.raises(KeyError):
        select(["nope"], {})


def test_workload_bodies_match_the_scenarios() -> None:
    """A TAS PCS is one clique of all-required pods under a required rack; the topology lists sim's levels + host."""
    tas = pcs_body(SCENARIOS["tas-quick"], 7, "bench")
    template = tas["spec"]["template"]
    assert tas["metadata"]["name"] == "g00007"
    assert template["topologyConstraint"]["pack"] == {"required": "rack"}
    (clique,) = template["cliques"]
    assert clique["spec"]["replicas"] == clique["spec"]["minAvailable"] == 4
    disagg = pcs_body(SCENARIOS["disagg-quick"], 0, "bench")["spec"]["template"]
    pods = sum(c["spec"]["replicas"] for c in disagg["cliques"] if c["name"] in ("router", "prefill"))
    pods += disagg["podCliqueScalingGroups"][0]["replicas"] * 5
    assert pods == SCENARIOS["disagg-quick"].pods_per_pcs == 14
    levels = topology_body("block=10,rack=5")["spec"]["levels"]
    assert [level["key"] for level in levels] == [
        "topology.kubernetes.io/block",
        RACK,
        "kubernetes.io/hostname",
    ]


def _gang(name: str, groups: list[tuple[str, list[str], int]], required: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "podgroups": [
            {"name": g, "minReplicas": m, "podReferences": [{"namespace": "bench", "name": p} for p in pods]}
            for g, pods, m in groups
        ]
    }
    if required:
        spec["topologyConstraint"] = {"packConstraint": {"required": required}}
    return {"metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "pcs"}}, "spec": spec}


def test_gang_latency_uses_the_min_replicas_th_events_of_the_slowest_group() -> None:
    """Ready = latest over groups of the minReplicas-th gate removal; bound likewise for binds; extras don't count."""
    pods = {
        "a0": PodTimes("a0", "g", "pcs", 0.0, ungated=1.0, bound=5.0),
        "a1": PodTimes("a1", "g", "pcs", 0.0, ungated=2.0, bound=6.0),
        "a2": PodTimes("a2", "g", "pcs", 0.0, ungated=9.0, bound=None),  # beyond minReplicas: ignored
        "b0": PodTimes("b0", "g", "pcs", 0.0, ungated=3.0, bound=4.0),
    }
    (times,) = gang_times([_gang("g", [("a", ["a0", "a1", "a2"], 2), ("b", ["b0"], 1)])], pods)
    assert (times.ready, times.bound, times.pcs) == (3.0, 6.0, "pcs")
    numbers = summarize(pods, [times], {"pcs": 0.5}, {}, {}, 0.0)
    assert numbers["gang_latency_ms"]["p50"] == 3000.0
    assert numbers["create_to_bound_ms"]["p50"] == 5500.0
    assert numbers["pods_bound"] == 3
    assert numbers["burst_s"] == 2.0
    assert numbers["pods_per_s"] == 1.5


def test_gang_never_bound_has_no_latency() -> None:
    """A group short of minReplicas binds leaves the gang unbound (and out of the latency percentiles)."""
    pods = {"a0": PodTimes("a0", "g", "pcs", 0.0, ungated=1.0, bound=None)}
    (times,) = gang_times([_gang("g", [("a", ["a0"], 1)])], pods)
    assert times.ready == 1.0
    assert times.bound is None
    assert summarize(pods, [times], {}, {}, {}, 0.0)["gang_latency_ms"]["count"] == 0


def test_histogram_quantile_interpolates_the_increase() -> None:
    """Quantiles come from the bucket increase between two scrapes, linear inside a bucket."""
    name = "h"
    before = {f'{name}_bucket{{le="0.1"}}': 5.0, f'{name}_bucket{{le="1.0"}}': 5.0, f'{name}_bucket{{le="+Inf"}}': 5.0}
    after = {f'{name}_bucket{{le="0.1"}}': 5.0, f'{name}_bucket{{le="1.0"}}': 15.0, f'{name}_bucket{{le="+Inf"}}': 15.0}
    assert histogram_quantile(0.5, after, before, name) == pytest.approx(0.55)
    assert histogram_quantile(0.5, before, before, name) is None


def test_constraint_check_catches_a_gang_split_across_racks() -> None:
    """A required-rack gang over two racks is a violation; short of minReplicas is an incomplete gang."""
    labels = {"n1": {RACK: "rack-0"}, "n2": {RACK: "rack-1"}}
    split = _gang("split", [("w", ["p1", "p2"], 2)], RACK)
    short = _gang("short", [("w", ["p3", "p4"], 2)], RACK)
    problems, checked = check_constraints([split, short], {"p1": "n1", "p2": "n2", "p3": "n1", "p4": ""}, labels)
    assert checked == 2
    assert any("split" in p and "violated" in p for p in problems)
    assert any("short" in p and "1/2 required pods bound" in p for p in problems)
    assert check_constraints([split], {"p1": "n1", "p2": "n1"}, labels) == ([], 1)


def test_overcommit_check_counts_every_bound_pod() -> None:
    """Two 6-GPU pods on an 8-GPU node are over-committed; finished pods and unbound pods do not count."""
    node = {"metadata": {"name": "n1"}, "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "4", "pods": "110"}}}

    def pod(node_name: str, gpus: int, phase: str = "Running") -> dict[str, Any]:
        container = {"resources": {"requests": {"nvidia.com/gpu": str(gpus), "cpu": "500m"}}}
        return {"spec": {"nodeName": node_name, "containers": [container]}, "status": {"phase": phase}}

    assert check_overcommit([node], [pod("n1", 6), pod("n1", 2), pod("", 8), pod("n1", 8, "Succeeded")]) == []
    problems = check_overcommit([node], [pod("n1", 6), pod("n1", 6)])
    assert problems == ["node n1 over-committed on nvidia.com/gpu: 12 > 8"]


def test_benchmarks_cli_dispatches_e2e_with_its_own_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m benchmarks e2e ...` reaches the e2e parser: an unknown scenario is a usage error naming it."""
    from benchmarks.__main__ import main as benchmarks_main

    with pytest.raises(SystemExit) as exit_info:
        benchmarks_main(["e2e", "no-such-scenario"])
    assert exit_info.value.code == 2
    assert "no-such-scenario" in capsys.readouterr().err
