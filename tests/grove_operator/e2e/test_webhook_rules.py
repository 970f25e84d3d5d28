"""Every create/update rule of grove-reference §3.12, through the real kubectl with the operator's webhooks on.

Each case applies a PodCliqueSet breaking one rule and expects the refusal to name the field; its neighbour (the
same object with that one thing made valid) is accepted. Both go through ``kubectl apply --dry-run=server``, which
runs the whole admission chain (defaulting webhook, schema, validating webhook) without storing anything, so the
cases stay independent; storing, updates and the reconciler are covered by ``test_webhook_updates``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from grove_sim.testing import SimCluster

from ._harness import OperatorThread
from ._webhooks import Kubectl, apply, pcs, start_operator, webhook_config

Obj = dict[str, Any]
Edit = Callable[[Obj], None]


def _t(obj: Obj) -> Obj:
    template: Obj = obj["spec"]["template"]
    return template


def _c(obj: Obj, index: int) -> Obj:
    clique: Obj = _t(obj)["cliques"][index]
    return clique


def _cs(obj: Obj, index: int) -> Obj:
    spec: Obj = _c(obj, index)["spec"]
    return spec


def _g(obj: Obj) -> Obj:
    group: Obj = _t(obj)["podCliqueScalingGroups"][0]
    return group


def _set(path: Callable[[Obj], Obj], key: str, value: Any) -> Edit:
    def edit(obj: Obj) -> None:
        path(obj)[key] = value

    return edit


def _first(obj: Obj) -> Obj:
    return _cs(obj, 0)


def _second(obj: Obj) -> Obj:
    return _cs(obj, 1)


def _third(obj: Obj) -> Obj:
    return _cs(obj, 2)


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj["metadata"]
    return meta


def _pod(index: int) -> Callable[[Obj], Obj]:
    def pod(obj: Obj) -> Obj:
        spec: Obj = _cs(obj, index)["podSpec"]
        return spec

    return pod


def _env(values: list[str]) -> Edit:
    def edit(obj: Obj) -> None:
        _pod(0)(obj)["containers"][0]["env"] = [{"name": v, "value": "1"} for v in values]

    return edit


def _second_group(**fields: Any) -> Edit:
    def edit(obj: Obj) -> None:
        _t(obj)["podCliqueScalingGroups"].append({"name": "extra", "cliqueNames": ["router"], **fields})

    return edit


def _noop(obj: Obj) -> None:
    return None


def _both(*edits: Edit) -> Edit:
    def edit(obj: Obj) -> None:
        for one in edits:
            one(obj)

    return edit


def _sharing(name: str) -> Edit:
    def edit(obj: Obj) -> None:
        template = {"spec": {"devices": {"requests": []}}}
        _t(obj)["resourceClaimTemplates"] = [{"name": "gpus", "templateSpec": template}]
        _t(obj)["resourceSharing"] = [{"name": name, "scope": "AllReplicas"}]

    return edit


def case(name: str, field: str, bad: Edit, good: Edit = _noop) -> Any:
    """One rule: the bad edit, the field its refusal names, and the valid neighbour (default: the base object)."""
    return pytest.param(bad, good, field, id=name)


CASES = [
    case(
        "pcs-replicas-negative",
        "spec.replicas",
        _set(lambda o: o["spec"], "replicas", -1),
        _set(lambda o: o["spec"], "replicas", 0),
    ),
    case(
        "clique-replicas-negative",
        "spec.template.cliques[0].spec.replicas",
        _set(_first, "replicas", -2),
        _set(_first, "replicas", 3),
    ),
    case(
        "min-available-above-replicas",
        "spec.template.cliques[0].spec.minAvailable",
        _set(_first, "minAvailable", 3),
        _set(_first, "minAvailable", 2),
    ),
    case(
        "min-available-zero",
        "spec.template.cliques[0].spec.minAvailable",
        _set(_first, "minAvailable", 0),
        _set(_first, "minAvailable", 1),
    ),
    case(
        "clique-name-not-dns",
        "spec.template.cliques[0].name",
        _both(_set(lambda o: _c(o, 0), "name", "Router"), _set(_second, "startsAfter", ["Router"])),
    ),
    case(
        "role-name-duplicate",
        "spec.template.cliques[1].spec.roleName",
        _set(_second, "roleName", "router"),
        _set(_second, "roleName", "leader2"),
    ),
    case(
        "label-key-invalid",
        "spec.template.cliques[0].labels",
        _set(lambda o: _c(o, 0), "labels", {"-bad-": "x"}),
        _set(lambda o: _c(o, 0), "labels", {"good": "x"}),
    ),
    case(
        "combined-name-too-long",
        "spec.template.cliques[1].name",
        _set(_meta, "name", "p" * 35),
        _set(_meta, "name", "p" * 34),
    ),
    case("starts-after-cycle", "spec.template.cliques", _set(_first, "startsAfter", ["worker"])),
    case(
        "starts-after-unknown",
        "spec.template.cliques[2].spec.startsAfter[0]",
        _set(_third, "startsAfter", ["ghost"]),
        _set(_third, "startsAfter", ["router"]),
    ),
    case(
        "starts-after-self",
        "spec.template.cliques[2].spec.startsAfter[0]",
        _set(_third, "startsAfter", ["worker"]),
        _set(_third, "startsAfter", ["leader"]),
    ),
    case(
        "starts-after-duplicate",
        "spec.template.cliques[2].spec.startsAfter[1]",
        _set(_third, "startsAfter", ["leader", "leader"]),
        _set(_third, "startsAfter", ["leader", "router"]),
    ),
    case(
        "autoscaling-min-below-min-available",
        "spec.template.cliques[0].spec.autoScalingConfig.minReplicas",
        _both(_set(_first, "minAvailable", 2), _set(_first, "autoScalingConfig", {"minReplicas": 1, "maxReplicas": 4})),
        _both(_set(_first, "minAvailable", 2), _set(_first, "autoScalingConfig", {"minReplicas": 2, "maxReplicas": 4})),
    ),
    case(
        "autoscaling-max-below-replicas",
        "spec.template.cliques[0].spec.autoScalingConfig.maxReplicas",
        _set(_first, "autoScalingConfig", {"maxReplicas": 1}),
        _set(_first, "autoScalingConfig", {"maxReplicas": 2}),
    ),
    case(
        "env-name-duplicate",
        "spec.template.cliques[0].spec.podSpec.containers[0].env[1].name",
        _env(["A", "A"]),
        _env(["A", "B"]),
    ),
    case(
        "env-name-invalid",
        "spec.template.cliques[0].spec.podSpec.containers[0].env[0].name",
        _env(["1A"]),
        _env(["A1"]),
    ),
    case("scheduler-names-differ", "spec.template.cliques", _set(_pod(0), "schedulerName", "other")),
    case(
        "group-unknown-clique",
        "spec.template.podCliqueScalingGroups[0].cliqueNames[1]",
        _set(_g, "cliqueNames", ["leader", "ghost"]),
        _set(_g, "cliqueNames", ["leader", "worker"]),
    ),
    case(
        "clique-in-two-groups",
        "spec.template.podCliqueScalingGroups[1].cliqueNames[0]",
        _both(
            _set(_first, "autoScalingConfig", None),
            _second_group(),
            _set(_g, "cliqueNames", ["leader", "worker", "router"]),
        ),
        _both(_set(_first, "autoScalingConfig", None), _second_group()),
    ),
    case(
        "group-name-duplicate",
        "spec.template.podCliqueScalingGroups[1].name",
        _both(
            _set(_first, "autoScalingConfig", None),
            _second_group(),
            lambda o: _t(o)["podCliqueScalingGroups"][1].update(name="model"),
        ),
        _both(_set(_first, "autoScalingConfig", None), _second_group()),
    ),
    case(
        "group-min-available-above-replicas",
        "spec.template.podCliqueScalingGroups[0].minAvailable",
        _set(_g, "minAvailable", 3),
        _set(_g, "minAvailable", 2),
    ),
    case(
        "group-replicas-zero",
        "spec.template.podCliqueScalingGroups[0].replicas",
        _set(_g, "replicas", 0),
        _set(_g, "replicas", 1),
    ),
    case(
        "group-scale-min-below-min-available",
        "spec.template.podCliqueScalingGroups[0].scaleConfig.minReplicas",
        _both(_set(_g, "minAvailable", 2), _set(_g, "scaleConfig", {"minReplicas": 1, "maxReplicas": 3})),
        _both(_set(_g, "minAvailable", 2), _set(_g, "scaleConfig", {"minReplicas": 2, "maxReplicas": 3})),
    ),
    case(
        "autoscaling-on-group-member",
        "spec.template.cliques[1].spec.autoScalingConfig",
        _set(_second, "autoScalingConfig", {"maxReplicas": 2}),
    ),
    case(
        "termination-delay-zero",
        "spec.template.terminationDelay",
        _set(_t, "terminationDelay", "0s"),
        _set(_t, "terminationDelay", "30m"),
    ),
    case(
        "resource-sharing-unknown-template", "spec.template.resourceSharing[0].name", _sharing("cpus"), _sharing("gpus")
    ),
    case("node-name-on-create", "spec.template.cliques[0].spec.podSpec.nodeName", _set(_pod(0), "nodeName", "node-0")),
    case(
        "topology-spread-on-create",
        "spec.template.cliques[0].spec.podSpec.topologySpreadConstraints",
        _set(
            _pod(0),
            "topologySpreadConstraints",
            [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"}],
        ),
    ),
    case(
        "topology-not-found",
        "spec.template.topologyConstraint.topologyName",
        _set(lambda o: _t(o)["topologyConstraint"], "topologyName", "nowhere"),
    ),
    case(
        "topology-domain-unknown",
        "spec.template.cliques[1].topologyConstraint.pack.required",
        _set(lambda o: _c(o, 1)["topologyConstraint"], "pack", {"required": "planet"}),
        _set(lambda o: _c(o, 1)["topologyConstraint"], "pack", {"required": "host"}),
    ),
    case(
        "topology-child-broader-than-parent",
        "spec.template.cliques[1].topologyConstraint.pack.required",
        _both(
            _set(lambda o: _t(o)["topologyConstraint"], "pack", {"required": "rack"}),
            _set(lambda o: _c(o, 1)["topologyConstraint"], "pack", {"required": "block"}),
        ),
        _set(lambda o: _t(o)["topologyConstraint"], "pack", {"required": "block"}),
    ),
    case("two-topologies", "spec.template", _set(lambda o: _c(o, 1)["topologyConstraint"], "topologyName", "other")),
    case(
        "too-many-pods",
        "spec.replicas",
        _set(lambda o: o["spec"], "replicas", 20_000),
        _set(lambda o: o["spec"], "replicas", 10_000),
    ),
]


@pytest.mark.parametrize(("bad", "good", "field"), CASES)
def test_rule_refuses_with_the_field_and_accepts_the_neighbour(
    webhooks: OperatorThread, kubectl: Kubectl, bad: Edit, good: Edit, field: str
) -> None:
    """The broken object is refused naming ``field``; the neighbour passes every admission step."""
    refused = pcs()
    bad(refused)
    result = apply(kubectl, refused, "--dry-run=server")
    assert result.returncode != 0, f"accepted\n{result.stdout}"
    assert field in result.stderr, f"{field} not named in\n{result.stderr}"
    neighbour = pcs()
    good(neighbour)
    accepted = apply(kubectl, neighbour, "--dry-run=server")
    assert accepted.returncode == 0, f"the neighbour was refused\n{accepted.stderr}"


def test_without_topology_aware_scheduling_constraints_are_refused(
    crds: SimCluster, webhooks: OperatorThread, kubectl: Kubectl
) -> None:
    """An operator with topology-aware scheduling off refuses any topology constraint; one without constraints
    passes. (Last in the module: it replaces the module's operator.)"""
    webhooks.kill()
    off = start_operator(crds.kubeconfig, kubectl, replace(webhook_config(), topology_aware_scheduling=False))
    try:
        refused = apply(kubectl, pcs(), "--dry-run=server")
        assert refused.returncode != 0
        assert "spec.template.topologyConstraint: Forbidden: topology-aware scheduling is disabled" in refused.stderr
        plain = pcs()
        del _t(plain)["topologyConstraint"]
        del _c(plain, 1)["topologyConstraint"]
        assert apply(kubectl, plain, "--dry-run=server").returncode == 0
    finally:
        off.kill()
