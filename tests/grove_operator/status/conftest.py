"""Fixtures for the status tests: defaulted upstream samples and a pod factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from grove_api import PodCliqueSet
from grove_operator import defaults

from ...fixtures.samples import load_sample


@pytest.fixture(scope="session")
def sample() -> Callable[[str], PodCliqueSet]:
    """Load a sample (path relative to the samples directory), defaulted, with a uid."""

    def load(rel: str) -> PodCliqueSet:
        raw = defaults.default_podcliqueset(load_sample(rel))
        raw["metadata"]["uid"] = "uid-pcs"
        return PodCliqueSet.model_validate(raw)

    return load


def make_pod(name: str, state: str, template_hash: str = "h1") -> dict[str, Any]:
    """A pod in one of the states the status math distinguishes.

    States: gated, pending (scheduled, not started), starting (initialising), ready, crashloop (restarted with a
    non-zero exit), started-not-ready (container started, readiness failing), terminating (ready but deleted).
    """
    scheduled = state != "gated"
    conditions = [
        {"type": "PodScheduled", "status": "True"}
        if scheduled
        else {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"},
        {"type": "Ready", "status": "True" if state in ("ready", "terminating") else "False"},
    ]
    container: dict[str, Any] = {"name": "c", "ready": state in ("ready", "terminating"), "started": False}
    if state == "crashloop":
        container["lastState"] = {"terminated": {"exitCode": 137}}
    if state in ("started-not-ready", "ready", "terminating"):
        container["started"] = True
    pod: dict[str, Any] = {
        "metadata": {"name": name, "labels": {"grove.io/pod-template-hash": template_hash}},
        "spec": {"nodeName": "n1"} if scheduled else {},
        "status": {
            "phase": "Running" if state not in ("gated", "pending") else "Pending",
            "conditions": conditions,
            "containerStatuses": [container],
        },
    }
    if state == "terminating":
        pod["metadata"]["deletionTimestamp"] = "2026-11-22T08:00:00Z"
    return pod


@pytest.fixture(scope="session")
def pod() -> Callable[..., dict[str, Any]]:
    """The pod factory `make_pod(name, state, template_hash="h1")`."""
    return make_pod
