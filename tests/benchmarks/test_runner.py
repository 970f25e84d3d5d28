"""The runner, report and CLI end to end on tiny workloads."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from benchmarks.__main__ import main
from benchmarks.harness import clusters, report, workloads
from benchmarks.harness.runner import (
    InvalidDecision,
    WorkloadResult,
    default_strategies,
    run_sequential,
    run_workload,
)
from benchmarks.harness.strategies import Decision
from benchmarks.harness.workloads import Workload

from grove_sched.model import GangRequest
from grove_sched.placement import Snapshot


def _tiny() -> Workload:
    cluster = clusters.with_background(clusters.uniform(16, nodes_per_rack=4, racks_per_block=2), 0.4, seed=1)
    return workloads.disagg(cluster, 1.2, seed=2)


def test_every_strategy_runs_the_same_workload_end_to_end(tmp_path: Path) -> None:
    """All strategies place the same gangs; counts, curves and the report files are consistent."""
    workload = _tiny()
    result = run_workload(workload, default_strategies(), progress=False)
    assert [s.strategy for s in result.summaries] == ["first-fit", "best-fit", "kai-greedy", "grove-greedy", "cpsat"]
    for summary in result.summaries:
        curve = result.curves[summary.strategy]
        assert len(curve) == len(workload.gangs)
        assert curve == sorted(curve)
        assert 0 < summary.gangs_placed < summary.gangs
        assert summary.gpus_placed <= result.bound_gpus + 1e-6
        assert 0.0 <= summary.gap <= 1.0
    folder = report.write([result], "tiny", tmp_path, "python -m benchmarks tiny")
    data = json.loads((folder / "results.json").read_text())
    assert data["workloads"][0]["gangs"] == len(workload.gangs)
    assert (folder / "allocation.png").stat().st_size > 0
    assert "| grove CP-SAT |" in (tmp_path / "latest.md").read_text()
    ours, greedy = result.summaries[-1], result.summaries[-2]
    assert ours.cpsat_used + ours.greedy_used == ours.gangs_placed
    assert greedy.cpsat_used == greedy.solves == greedy.limit_hits == 0
    assert ours.limit_hits <= ours.solves <= ours.calls == len(workload.gangs)


def test_knavigator_wave_replay_reaches_nine_full_waves() -> None:
    """First fit packs knavigator's 288 whole-node pods into the ideal 9 waves at 100% occupancy."""
    workload = workloads.knavigator(clusters.knavigator())
    result = run_workload(workload, default_strategies(["first-fit"]), progress=False)
    (summary,) = result.summaries
    assert summary.gangs_placed == 53
    assert summary.waves == summary.ideal_waves == 9
    assert summary.occupancy_pct == pytest.approx(100.0)


class _Cheater:
    """A strategy that puts every pod on the first node, whatever it costs."""

    name = "cheater"

    def __call__(self, snapshot: Snapshot, gang: GangRequest) -> Decision | None:
        node = snapshot.node_names[0]
        return Decision({pod.name: node for grp in gang.groups for pod in grp.pods})


def test_invalid_decisions_abort_the_run() -> None:
    """A decision that over-commits a node is caught before it is committed."""
    workload = _tiny()
    base = Snapshot.build(workload.cluster.nodes, workload.cluster.background)
    with pytest.raises(InvalidDecision, match="cheater"):
        run_sequential(workload, _Cheater(), base, progress=False)


def test_cli_runs_a_suite(tmp_path: Path) -> None:
    """The CLI writes latest.md for a placement suite (the e2e mode is tested in test_e2e.py)."""
    args = ["knavigator", "--out", str(tmp_path), "--strategies", "first-fit", "--no-progress", "--no-plots"]
    assert main(args) == 0
    assert "knavigator" in (tmp_path / "knavigator" / "latest.md").read_text()
    with pytest.raises(ValueError, match="unknown strategies"):
        default_strategies(["nope"])


def test_wave_replay_stops_on_gangs_that_never_fit() -> None:
    """A gang larger than the whole cluster stays unplaced and does not add an empty wave."""
    burst = workloads.knavigator(clusters.knavigator())
    huge = GangRequest("huge", "bench", (workloads.group("huge", 40, 8, cpu=96_000, memory=2**40),))
    workload = Workload(burst.name, burst.cluster, (*burst.gangs, huge), burst.description, waves=True)
    (summary,) = run_workload(workload, default_strategies(["best-fit"]), progress=False).summaries
    assert summary.gangs_placed == 53
    assert summary.waves == 9
    assert summary.occupancy_pct == pytest.approx(100.0)


def _tiny_on(seed: int) -> Workload:
    cluster = clusters.with_background(clusters.uniform(16, nodes_per_rack=4, racks_per_block=2), 0.4, seed=seed)
    return workloads.disagg(cluster, 1.2, seed=seed)


def test_multi_seed_workloads_report_means_per_seed_wins_and_the_exact_mode(tmp_path: Path) -> None:
    """A seeded workload runs on every seed; summaries are the per-seed means, cpsat-exact joins cpsat, and the
    findings compare means and count the seeds won against each seed's best baseline."""
    workload = workloads.seeded(_tiny_on, [3, 4])
    result = run_workload(workload, default_strategies(["first-fit", "cpsat"]), progress=False)
    assert [s.strategy for s in result.summaries] == ["first-fit", "cpsat", "cpsat-exact"]
    assert list(result.per_seed) == [3, 4]
    for k, summary in enumerate(result.summaries):
        per_seed = [result.per_seed[seed][k] for seed in (3, 4)]
        assert summary.seeds == 2
        assert summary.gpus_placed == pytest.approx((per_seed[0].gpus_placed + per_seed[1].gpus_placed) / 2)
        assert summary.gpus_sd == pytest.approx(abs(per_seed[0].gpus_placed - per_seed[1].gpus_placed) / 2**0.5)
    single = run_workload(_tiny_on(4), default_strategies(["first-fit", "cpsat"]), progress=False)
    assert [s.gpus_placed for s in single.summaries] == [s.gpus_placed for s in result.per_seed[4][:2]]
    *lines, every = report.findings([result])
    assert [line.split(" ")[0] for line in lines] in (
        [a, b] for a in ("ahead", "level", "BEHIND") for b in ("ahead", "level", "BEHIND")
    )
    assert all("of 2 seeds" in line and "(seeds 3, 4:" in line for line in lines)
    assert "cpsat-exact" in lines[1]
    assert every.startswith("grove CP-SAT on")
    assert "ahead of the best greedy on" in every
    folder = report.write([result], "tiny", tmp_path, "python -m benchmarks tiny", plots=False)
    data = json.loads((folder / "results.json").read_text())
    assert data["workloads"][0]["seeds"] == [3, 4]
    assert sorted(data["workloads"][0]["per_seed"]) == ["3", "4"]
    text = (folder / "latest.md").read_text()
    assert " ± " in text
    assert "GPUs placed per seed on" in text
    assert "| 3 |" in text
    assert "| mean |" in text


def test_per_seed_findings_count_wins_against_each_seeds_best_baseline() -> None:
    """Means decide ahead/BEHIND; the per-seed tally compares with the best baseline of that seed."""
    workload = workloads.seeded(_tiny_on, [0, 1, 2])
    base = run_workload(_tiny_on(0), default_strategies(["first-fit", "best-fit", "cpsat"]), progress=False)
    ff, bf, ours = base.summaries
    per_seed = {
        0: [replace(ff, gpus_placed=10), replace(bf, gpus_placed=12), replace(ours, gpus_placed=13)],
        1: [replace(ff, gpus_placed=20), replace(bf, gpus_placed=18), replace(ours, gpus_placed=19)],
        2: [replace(ff, gpus_placed=30), replace(bf, gpus_placed=29), replace(ours, gpus_placed=30)],
    }
    means = [
        replace(s, gpus_placed=sum(v[k].gpus_placed for v in per_seed.values()) / 3, seeds=3)
        for k, s in enumerate(base.summaries)
    ]
    result = WorkloadResult(workload, means, {}, [], 0.0, 0.0, per_seed)
    line, every = report.findings([result])
    assert every == (
        f"grove CP-SAT on {workload.name}, mean of 3 seeds: ahead of first-fit (+0.7), ahead of best-fit (+1); "
        "ahead of every greedy on the mean: yes; strictly ahead of the best greedy on 1 of 3 seeds."
    )
    assert line == (
        f"ahead on {workload.name}: cpsat placed on average 20.7 GPUs vs first-fit 20 (+0.7); per seed vs that "
        "seed's best baseline: ahead on 1 of 3 seeds, level on 1 (seeds 0, 1, 2: +1, -1, +0 GPUs)."
    )
