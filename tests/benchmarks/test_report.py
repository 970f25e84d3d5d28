"""Report findings and suite definitions: CP-SAT vs the best baseline is stated plainly, suites cover every kind."""

from __future__ import annotations

from dataclasses import replace

from benchmarks.harness import clusters, report, workloads
from benchmarks.harness.runner import Summary, WorkloadResult
from benchmarks.harness.suites import SUITES, held_out_seeds

_BASE = Summary(
    workload="w",
    strategy="first-fit",
    gangs=10,
    gangs_placed=8,
    pods_placed=32,
    gpus_placed=64,
    gpus_total=128,
    allocated_pct=50.0,
    checkpoints_pct={},
    stranded_gpus=3,
    racks_per_gang=1.0,
    blocks_per_gang=1.0,
    preferred_hit_rate=None,
    median_ms=1.0,
    p99_ms=2.0,
    bound_gpus=70.0,
    gap=0.1,
    mean_score=None,
)


def _result(cpsat_gpus: int, nodes: int = 16, median_ms: float = 5.0) -> WorkloadResult:
    workload = workloads.tas(clusters.uniform(nodes, nodes_per_rack=4), 2, 4)
    ours = replace(_BASE, strategy="cpsat", gpus_placed=cpsat_gpus, median_ms=median_ms, p99_ms=2 * median_ms)
    return WorkloadResult(workload, [_BASE, replace(_BASE, strategy="best-fit", gpus_placed=60), ours], {}, [], 70, 1)


def test_findings_say_behind_level_or_ahead() -> None:
    """CP-SAT is compared with the best baseline on GPUs placed, and a loss is flagged as BEHIND."""
    assert report.findings([_result(50)])[0].startswith("BEHIND on")
    assert report.findings([_result(64)])[0].startswith("level on")
    assert (
        report.findings([_result(66)])[0]
        == f"ahead on {_result(66).workload.name}: cpsat placed 66 GPUs vs first-fit 64 (+2)."
    )


def test_findings_check_the_5000_node_speed_target() -> None:
    """On 5,000-node workloads the median/p99 targets are checked and a miss is flagged."""
    lines = report.findings([_result(64, nodes=5000, median_ms=30.0)])
    assert any(line.startswith("MISSES the 5,000-node speed target") for line in lines)
    lines = report.findings([_result(64, nodes=5000, median_ms=10.0)])
    assert any(line.startswith("meets the 5,000-node speed target") for line in lines)


def test_table_has_one_row_per_strategy() -> None:
    """The Markdown table has a header, a rule and one row per (workload, strategy)."""
    lines = report.table([_result(64)]).splitlines()
    assert len(lines) == 2 + 3
    assert all(line.startswith("|") and line.endswith("|") for line in lines)
    assert [line.split(" | ")[1] for line in lines[2:]] == ["first-fit", "best-fit", "grove CP-SAT"]


def test_p99_says_max_of_n_below_a_hundred_samples() -> None:
    """With fewer than 100 calls the table gives the maximum and its sample count, never a 'p99'."""
    few = report.table([_result(64)])
    assert "max of 0: " in few
    many = _result(64)
    many = replace(many, summaries=[replace(s, calls=250) for s in many.summaries])
    assert "2.0 (n=250)" in report.table([many])


def test_held_out_seeds_are_reproducible_and_never_tuning_seeds() -> None:
    """The same master seed gives the same held-out seeds; none is a tuning seed; every sequence-sensitive
    workload of quick has a held-out twin marked as such."""
    first = held_out_seeds(12345, 8, [0, 1, 2])
    assert first == held_out_seeds(12345, 8, [0, 1, 2])
    assert len(set(first)) == 8
    assert not set(first) & {0, 1, 2}
    assert held_out_seeds(1, 8, [0, 1, 2]) != first
    held = SUITES["quick"].held_out
    assert held is not None
    twins = held(first[:2])
    assert all(w.held_out and w.name.endswith(" held-out") and w.seeds == tuple(first[:2]) for w in twins)


def test_quick_suite_covers_every_workload_kind() -> None:
    """`quick` contains TAS, disaggregated, openb and knavigator workloads; every suite is placement mode."""
    names = [w.name for w in SUITES["quick"].build(0)]
    for kind in ("tas-750x4", "tas-3x1000", "disagg", "openb-130%", "knavigator"):
        assert any(name.startswith(kind) for name in names), kind
    assert {suite.mode for suite in SUITES.values()} == {"placement"}
