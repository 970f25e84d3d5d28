"""`grove-scheduler` flags."""

from __future__ import annotations

import pytest

from grove_sched.cli import parse_args


def test_defaults() -> None:
    """Without flags: in-cluster config, our scheduler name, metrics on 8080, leader election on the default Lease."""
    config = parse_args([])
    assert config.kubeconfig is None
    assert config.scheduler_name == "grove-scheduler"
    assert config.metrics_port == 8080
    assert config.leader_elect is True
    assert (config.lease.namespace, config.lease.name) == ("grove-system", "grove-scheduler")


def test_flags() -> None:
    """Every documented flag reaches the configuration."""
    config = parse_args(
        [
            "--kubeconfig",
            "/k",
            "--scheduler-name",
            "s",
            "--metrics-port",
            "0",
            "--no-leader-elect",
            "--bind-concurrency",
            "4",
        ]
    )
    assert config.kubeconfig == "/k"
    assert config.scheduler_name == "s"
    assert config.metrics_port == 0
    assert config.leader_elect is False
    assert config.bind_concurrency == 4


def test_lease_timing_flags() -> None:
    """The kube-scheduler style lease timings reach the configuration; inconsistent ones are refused."""
    config = parse_args(
        [
            "--leader-elect-lease-duration",
            "2",
            "--leader-elect-renew-deadline",
            "1.5",
            "--leader-elect-retry-period",
            "0.5",
        ]
    )
    assert (config.lease.lease_duration, config.lease.renew_deadline, config.lease.retry_period) == (2.0, 1.5, 0.5)
    default = parse_args([]).lease
    assert (default.lease_duration, default.renew_deadline, default.retry_period) == (15, 10, 2)
    with pytest.raises(SystemExit):
        parse_args(["--leader-elect-lease-duration", "1", "--leader-elect-renew-deadline", "2"])


def test_default_topology_levels_flag() -> None:
    """The fallback hierarchy is zone > block > rack > host unless given; a repeated key is refused."""
    assert parse_args([]).placement.default_levels == (
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/block",
        "topology.kubernetes.io/rack",
        "kubernetes.io/hostname",
    )
    config = parse_args(["--default-topology-levels", "example.com/spine, example.com/leaf"])
    assert config.placement.default_levels == ("example.com/spine", "example.com/leaf")
    with pytest.raises(SystemExit):
        parse_args(["--default-topology-levels", "a,a"])


def test_status_settle_flag() -> None:
    """One status write per gang outcome waits up to 1 s by default; 0 writes every state; negative is refused."""
    assert parse_args([]).status_settle == 1.0
    assert parse_args(["--status-settle", "0"]).status_settle == 0.0
    with pytest.raises(SystemExit):
        parse_args(["--status-settle", "-1"])


def test_preemption_flags() -> None:
    """Preemption is on and deletes victims by default; `--no-preemption` and `--preemption-eviction evict` say
    otherwise; an unknown removal mode is a usage error."""
    assert (parse_args([]).preemption, parse_args([]).preemption_eviction) == (True, "delete")
    config = parse_args(["--no-preemption", "--preemption-eviction", "evict"])
    assert (config.preemption, config.preemption_eviction) == (False, "evict")
    with pytest.raises(SystemExit):
        parse_args(["--preemption-eviction", "drain"])


def test_defrag_report_is_off_unless_asked() -> None:
    """The defragmentation report is an option: off by default, on with `--defrag-report`."""
    assert parse_args([]).defrag_report is False
    assert parse_args(["--defrag-report"]).defrag_report is True


def test_scheduler_name_repeats() -> None:
    """`--scheduler-name` repeated serves every name once, the first one first (the default reporting name)."""
    config = parse_args(
        [
            "--scheduler-name",
            "grove-scheduler",
            "--scheduler-name",
            "kai-scheduler",
            "--scheduler-name",
            "kai-scheduler",
        ]
    )
    assert config.scheduler_name == "grove-scheduler"
    assert config.scheduler_names == ("grove-scheduler", "kai-scheduler")
    assert parse_args([]).scheduler_names == ("grove-scheduler",)
    with pytest.raises(SystemExit):
        parse_args(["--scheduler-name", " "])


def test_lookahead_gangs_flag() -> None:
    """The queue look-ahead is off by default; a window of N gangs turns it on; a negative window is refused."""
    assert parse_args([]).lookahead_gangs == 0
    assert parse_args(["--lookahead-gangs", "16"]).lookahead_gangs == 16
    with pytest.raises(SystemExit):
        parse_args(["--lookahead-gangs", "-1"])
