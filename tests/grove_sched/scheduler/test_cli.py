"""`grove-scheduler` flags."""

from __future__ import annotations

from grove_sched.cli import parse_args


def test_defaults() -> None:
    """Without flags: in-cluster config, our scheduler name, metrics on 8080, leader election on the default Lease."""
    config = parse_args([])
    assert config.kubeconfig is None
    assert config.scheduler_name == "grove-scheduler"
    assert config.metrics_port == 8080
    assert config.leader_elect is True
    assert (config.lease_namespace, config.lease_name) == ("grove-system", "grove-scheduler")


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
