"""Property: for generated PodCliqueSets, valid and invalid, sent through kubectl, the webhooks' verdict is the pure
validator's, nothing crashes, and every accepted object is reconciled without ``lastErrors``."""

from __future__ import annotations

import itertools
import time
from typing import Any

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from grove_operator import admission, defaults, validation
from grove_operator.config import OperatorConfig

from ._harness import OperatorThread
from ._webhooks import Kubectl, apply

Obj = dict[str, Any]
NAMES = ("a", "b", "c")
_serial = itertools.count()


@st.composite
def podcliquesets(draw: st.DrawFn) -> Obj:
    """PodCliqueSets the CRD schema accepts, breaking (or not) the webhook's rules in many ways at once."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    cliques = []
    for name in names:
        spec: Obj = {
            "roleName": draw(st.sampled_from(("r1", "r2", "r3"))),
            "replicas": draw(st.integers(-1, 3)),
            "podSpec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
        if draw(st.booleans()):
            spec["minAvailable"] = draw(st.integers(0, 4))
        if draw(st.booleans()):
            spec["startsAfter"] = draw(st.lists(st.sampled_from((*NAMES, "ghost")), max_size=2))
        cliques.append({"name": name, "spec": spec})
    template: Obj = {
        "cliqueStartupType": draw(
            st.sampled_from(("CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"))
        ),
        "cliques": cliques,
    }
    if draw(st.booleans()):
        template["terminationDelay"] = draw(st.sampled_from(("0s", "90s", "1h")))
    if draw(st.booleans()):
        members = draw(st.lists(st.sampled_from((*NAMES,)), min_size=1, max_size=2, unique=True))
        group = {"name": "g", "cliqueNames": members, "replicas": draw(st.integers(1, 3))}
        group["minAvailable"] = draw(st.integers(1, 3))
        template["podCliqueScalingGroups"] = [group]
    name = draw(st.sampled_from(("p", "p" * 24, "p" * 38))) + f"-{next(_serial)}"
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": draw(st.integers(0, 2)), "template": template},
    }


def pure_verdict(obj: Obj) -> list[validation.FieldError]:
    """What the pure functions say about ``obj`` as the API server would hold it."""
    defaulted = defaults.default_podcliqueset(obj)
    config = OperatorConfig()
    errors = validation.validate_podcliqueset(
        defaulted, create=True, default_scheduler_name=config.default_scheduler_name, topologies={}
    )
    return errors or admission.pod_bound_errors(defaulted, config.max_pods_per_podcliqueset)


def _reconciled(kubectl: Kubectl, name: str) -> Obj:
    deadline = time.monotonic() + 60
    while True:
        obj: Obj = yaml.safe_load(kubectl("get", "pcs", name, "-o", "yaml").stdout)
        status = obj.get("status") or {}
        if status.get("observedGeneration") == obj["metadata"]["generation"] or status.get("lastErrors"):
            return obj
        assert time.monotonic() < deadline, f"{name} was never reconciled"
        time.sleep(0.05)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=podcliquesets())
def test_webhook_verdict_is_the_pure_validators(webhooks: OperatorThread, kubectl: Kubectl, obj: Obj) -> None:
    """Accepted exactly when the pure validator finds nothing; a refusal names a field the validator names (the
    CRD schema, which runs between the two webhooks, may refuse first and name its own subset); accepted objects
    reconcile cleanly; the operator keeps running."""
    expected = pure_verdict(obj)
    event("refused" if expected else "accepted")
    result = apply(kubectl, obj)
    if expected:
        assert result.returncode != 0, f"accepted although {expected}"
        assert any(error.field in result.stderr for error in expected), (expected, result.stderr)
    else:
        assert result.returncode == 0, result.stderr
        reconciled = _reconciled(kubectl, obj["metadata"]["name"])
        assert not (reconciled.get("status") or {}).get("lastErrors"), reconciled["status"]
    assert webhooks.alive()
