"""The operator's Prometheus metrics, all under `grove_operator_*`, built on grove_runtime's helpers.

Why a module: the CLI, the wiring and the tests must agree on one registry and one prefix, so the scrape output
(`grove_operator_reconcile_total{controller,result}`, `grove_operator_reconcile_duration_seconds`,
`grove_operator_workqueue_depth`, `grove_operator_workqueue_queue_duration_seconds`,
`grove_operator_workqueue_retries_total`) is the same wherever the operator is assembled.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from grove_runtime.metrics import ControllerMetrics

__all__ = ["PREFIX", "operator_metrics"]

PREFIX = "grove_operator"


def operator_metrics(registry: CollectorRegistry | None = None) -> ControllerMetrics:
    """Controller and workqueue metrics of grove-operator in `registry` (a fresh one when omitted)."""
    return ControllerMetrics(PREFIX, registry if registry is not None else CollectorRegistry())
