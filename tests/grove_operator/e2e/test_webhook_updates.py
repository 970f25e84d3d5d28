"""Stored defaults, update-only rules and mutable fields, through the real kubectl with the operator's webhooks on.

Update-only rules are checked both ways a user changes an object: ``kubectl apply`` of an edited manifest and a
``kubectl patch --type=json`` of the stored object, as ``kubectl edit`` sends it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from grove_runtime.webhook.jsonpatch import create_patch

from ._harness import OperatorThread
from ._webhooks import Kubectl, apply, pcs

Obj = dict[str, Any]
Edit = Callable[[Obj], None]


def manifest(name: str) -> Obj:
    """The base PodCliqueSet plus a standalone clique nothing depends on (so it can be removed or renamed)."""
    obj = pcs(name)
    extra = copy.deepcopy(obj["spec"]["template"]["cliques"][0])
    extra["name"] = "extra"
    extra["spec"]["roleName"] = "extra"
    del extra["spec"]["autoScalingConfig"]
    obj["spec"]["template"]["cliques"].append(extra)
    return obj


def stored(kubectl: Kubectl, name: str) -> Obj:
    """``kubectl get pcs NAME -o yaml``, parsed."""
    got: Obj = yaml.safe_load(kubectl("get", "pcs", name, "-o", "yaml").stdout)
    return got


@pytest.fixture(scope="module")
def existing(webhooks: OperatorThread, kubectl: Kubectl) -> str:
    """A PodCliqueSet created (and reconciled) for the update tests that must be refused."""
    created = apply(kubectl, manifest("upd"))
    assert created.returncode == 0, created.stderr
    return "upd"


def test_defaults_are_stored_and_shown_by_kubectl_get(webhooks: OperatorThread, kubectl: Kubectl) -> None:
    """Every webhook default of §3.12 is in the stored object; re-applying the manifest that left them out is not
    refused and changes nothing (kubectl sends the cliques list whole, as for any custom resource, and the
    defaulting webhook fills the same defaults in again)."""
    base = manifest("defaults")
    assert apply(kubectl, base).returncode == 0
    obj = stored(kubectl, "defaults")
    template = obj["spec"]["template"]
    assert template["terminationDelay"] == "4h"
    assert template["headlessServiceConfig"] == {"publishNotReadyAddresses": True}
    leader, worker = template["cliques"][1]["spec"], template["cliques"][2]["spec"]
    assert (leader["minAvailable"], worker["minAvailable"]) == (1, 2)
    assert template["cliques"][0]["spec"]["autoScalingConfig"]["minReplicas"] == 2
    for clique in template["cliques"]:
        assert clique["spec"]["podSpec"]["restartPolicy"] == "Always"
        assert clique["spec"]["podSpec"]["terminationGracePeriodSeconds"] == 30
    again = apply(kubectl, base)
    assert again.returncode == 0, again.stderr
    after = stored(kubectl, "defaults")
    assert (after["spec"], after["metadata"]["generation"]) == (obj["spec"], obj["metadata"]["generation"])


UPDATE_ONLY: list[Any] = []


def update_only(name: str, field: str, edit: Edit) -> None:
    """Register an update-only rule: ``edit`` of the manifest must be refused naming ``field``."""
    UPDATE_ONLY.append(pytest.param(edit, field, id=name))


def _cliques(obj: Obj) -> list[Obj]:
    cliques: list[Obj] = obj["spec"]["template"]["cliques"]
    return cliques


def _spec(index: int) -> Callable[[Obj], Obj]:
    def spec(obj: Obj) -> Obj:
        value: Obj = _cliques(obj)[index]["spec"]
        return value

    return spec


def _group(obj: Obj) -> Obj:
    group: Obj = obj["spec"]["template"]["podCliqueScalingGroups"][0]
    return group


def _add_clique(obj: Obj) -> None:
    added = copy.deepcopy(_cliques(obj)[3])
    added["name"] = added["spec"]["roleName"] = "added"
    _cliques(obj).append(added)


def _rename(obj: Obj) -> None:
    _cliques(obj)[3]["name"] = "renamed"


def _reorder(obj: Obj) -> None:
    cliques = _cliques(obj)
    cliques[0], cliques[3] = cliques[3], cliques[0]


def _all_schedulers(obj: Obj) -> None:
    for clique in _cliques(obj):
        clique["spec"]["podSpec"]["schedulerName"] = "other-scheduler"


def _add_group(obj: Obj) -> None:
    obj["spec"]["template"]["podCliqueScalingGroups"].append({"name": "more", "cliqueNames": ["extra"]})


update_only("clique-added", "spec.template.cliques", _add_clique)
update_only("clique-removed", "spec.template.cliques", lambda o: _cliques(o).pop(3))
update_only("clique-renamed", "spec.template.cliques", _rename)
update_only("clique-order-explicit", "spec.template.cliques", _reorder)
update_only("role-name", "spec.template.cliques[3].spec.roleName", lambda o: _spec(3)(o).update(roleName="other"))
update_only("min-available", "spec.template.cliques[0].spec.minAvailable", lambda o: _spec(0)(o).update(minAvailable=2))
update_only(
    "starts-after", "spec.template.cliques[2].spec.startsAfter", lambda o: _spec(2)(o).update(startsAfter=["router"])
)
update_only("scheduler-name", "spec.template.cliques[0].spec.podSpec.schedulerName", _all_schedulers)
update_only(
    "startup-type",
    "spec.template.cliqueStartupType",
    lambda o: o["spec"]["template"].update(cliqueStartupType="CliqueStartupTypeAnyOrder"),
)
update_only("group-added", "spec.template.podCliqueScalingGroups", _add_group)
update_only(
    "group-clique-names",
    "spec.template.podCliqueScalingGroups[0].cliqueNames",
    lambda o: _group(o).update(cliqueNames=["leader"]),
)
update_only(
    "group-min-available",
    "spec.template.podCliqueScalingGroups[0].minAvailable",
    lambda o: _group(o).update(minAvailable=2),
)
update_only(
    "clique-topology",
    "spec.template.cliques[1].topologyConstraint",
    lambda o: _cliques(o)[1].update(topologyConstraint={"pack": {"required": "host"}}),
)
update_only(
    "template-topology",
    "spec.template.topologyConstraint",
    lambda o: o["spec"]["template"]["topologyConstraint"].update(pack={"preferred": "rack"}),
)


@pytest.mark.parametrize(("edit", "field"), UPDATE_ONLY)
def test_update_only_rules_refuse_apply_and_edit(existing: str, kubectl: Kubectl, edit: Edit, field: str) -> None:
    """The edited manifest is refused by ``kubectl apply``; the same change as a JSON patch of the stored object
    (what ``kubectl edit`` sends) is refused too; both name the field, and the object is unchanged."""
    before = stored(kubectl, existing)
    changed = manifest(existing)
    edit(changed)
    applied = apply(kubectl, changed)
    assert applied.returncode != 0, applied.stdout
    assert field in applied.stderr, applied.stderr
    edited = copy.deepcopy(before)
    edit(edited)
    ops = json.dumps(create_patch(before["spec"], edited["spec"]))
    patched = kubectl(
        "patch", "pcs", existing, "--type=json", "-p", ops.replace('"path": "', '"path": "/spec'), check=False
    )
    assert patched.returncode != 0, patched.stdout
    assert field in patched.stderr, patched.stderr
    assert stored(kubectl, existing)["metadata"]["generation"] == before["metadata"]["generation"]


def test_mutable_fields_change(webhooks: OperatorThread, kubectl: Kubectl) -> None:
    """Replicas, the pod template, terminationDelay, updateStrategy, clique replicas and autoscaling change, by
    apply and by patch."""
    base = manifest("mutable")
    assert apply(kubectl, base).returncode == 0
    changed = copy.deepcopy(base)
    changed["spec"]["replicas"] = 2
    changed["spec"]["updateStrategy"] = {"type": "OnDelete"}
    changed["spec"]["template"]["terminationDelay"] = "30m"
    _spec(0)(changed)["podSpec"]["containers"][0]["image"] = "registry.example.com/echo:2.0"
    _spec(0)(changed)["autoScalingConfig"]["maxReplicas"] = 6
    _spec(3)(changed)["replicas"] = 3
    applied = apply(kubectl, changed)
    assert applied.returncode == 0, applied.stderr
    kubectl("patch", "pcs", "mutable", "--type=merge", "-p", '{"spec":{"template":{"priorityClassName":"high"}}}')
    obj = stored(kubectl, "mutable")
    template = obj["spec"]["template"]
    assert (obj["spec"]["replicas"], obj["spec"]["updateStrategy"]["type"]) == (2, "OnDelete")
    assert (template["terminationDelay"], template["priorityClassName"]) == ("30m", "high")
    assert template["cliques"][0]["spec"]["podSpec"]["containers"][0]["image"] == "registry.example.com/echo:2.0"
    assert template["cliques"][0]["spec"]["autoScalingConfig"]["maxReplicas"] == 6
    assert template["cliques"][3]["spec"]["replicas"] == 3


def test_warnings_are_printed_by_kubectl(webhooks: OperatorThread, kubectl: Kubectl) -> None:
    """A restartPolicy other than Always is accepted with a warning kubectl prints."""
    warned = manifest("warned")
    _spec(0)(warned)["podSpec"]["restartPolicy"] = "Never"
    result = apply(kubectl, warned, "--dry-run=server")
    assert result.returncode == 0, result.stderr
    assert "Warning: spec.template.cliques[0].spec.podSpec.restartPolicy: 'Never' will be ignored" in result.stderr
