"""The rendered manifests are accepted by an API server: each overlay passes `kubectl apply --dry-run=server`
against grove-sim (CRDs and the namespace applied first, as `kubectl apply -k` orders them), and the release files
of `make release` are the production overlay split in three, and apply for real.

Every kind the overlays hold is served by grove-sim and validated (the test fails on a kind it does not serve,
unless listed in ``NOT_SERVED_YET``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import _manifests as m

pytestmark = pytest.mark.slow

Obj = dict[str, Any]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
NOT_SERVED_YET: set[tuple[str, str]] = set()
"""(apiVersion, kind) the overlays hold that grove-sim does not serve, so no server validates them here (none since
grove-sim serves Deployments, PodDisruptionBudgets and cluster-scoped RBAC)."""
FIRST = ("Namespace", "CustomResourceDefinition")


def served(kubectl: Kubectl) -> set[tuple[str, str]]:
    """(apiVersion, kind) of every resource the cluster serves (`kubectl api-resources`)."""
    lines = kubectl("api-resources", "--no-headers").stdout.splitlines()
    return {(line.split()[-3], line.split()[-1]) for line in lines if line.strip()}


def _type(obj: Obj) -> tuple[str, str]:
    return obj["apiVersion"], obj["kind"]


def _apply_first(kubectl: Kubectl, objects: list[Obj]) -> None:
    for kind in FIRST:
        if first := [o for o in objects if o["kind"] == kind]:
            kubectl("apply", "-f", "-", input=m.to_yaml(first))


@pytest.mark.parametrize("overlay", m.OVERLAYS)
def test_overlay_passes_server_side_dry_run(kubectl: Kubectl, overlay: str) -> None:
    objects = m.overlay(overlay)
    types = {_type(o) for o in objects}
    available = served(kubectl)
    assert types - NOT_SERVED_YET <= available, "a kind grove-sim neither serves nor is listed as not served yet"
    _apply_first(kubectl, objects)
    rest = [o for o in objects if o["kind"] not in FIRST and _type(o) in available]
    result = kubectl("apply", "--dry-run=server", "-f", "-", input=m.to_yaml(rest))
    assert result.stdout.count("(server dry run)") == len(rest), result.stdout


def _dist(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_release_files_are_the_production_overlay_and_apply(kubectl: Kubectl, tmp_path: Path) -> None:
    """`make release` writes dist/grove-{crds,scheduler,operator}.yaml, headed with the version; together they hold
    exactly the production overlay's objects; applied in that order they install, and deleting them removes what
    they installed."""
    dist = tmp_path / "dist"
    subprocess.run(["make", "-s", "release", f"DIST={dist}"], cwd=m.ROOT, check=True, capture_output=True, timeout=120)
    files = [dist / f"grove-{part}.yaml" for part in ("crds", "scheduler", "operator")]
    for path in files:
        assert path.read_text().startswith("# Grove "), path
    released = {m.key(o): o for path in files for o in _dist(path)}
    production = {m.key(o): o for o in m.overlay("production")}
    assert released == production
    available = served(kubectl)
    for path in files:
        objects = [o for o in _dist(path) if _type(o) in available]
        kubectl("apply", "-f", "-", input=m.to_yaml(objects))
    names = kubectl("get", "-n", m.NAMESPACE, "serviceaccounts,services,configmaps,roles", "-o", "name").stdout
    expected = {
        "serviceaccount/grove-operator",
        "serviceaccount/grove-scheduler",
        "service/grove-scheduler-metrics",
        "service/grove-operator-webhook",
        "role.rbac.authorization.k8s.io/grove-operator",
    }
    assert expected <= set(names.split())
    for path in reversed(files):
        objects = [o for o in _dist(path) if _type(o) in available and o["kind"] != "Namespace"]
        kubectl("delete", "--wait=false", "-f", "-", input=m.to_yaml(objects))
    left = kubectl("get", "-n", m.NAMESPACE, "services,roles,serviceaccounts", "-o", "name").stdout.split()
    assert [n for n in left if "grove" in n and "default" not in n] == []


def test_reapplying_changed_webhook_configurations_keeps_the_injected_ca_bundle(kubectl: Kubectl) -> None:
    """An upgrade re-applies the configurations with changes; the CA bundle the operator injected (never part of
    what kubectl applies) and every other field stay, as kubectl's strategic merge by webhook name keeps them."""
    hooks = [o for o in m.overlay("production") if o["kind"].endswith("WebhookConfiguration")]
    kubectl("apply", "-f", "-", input=m.to_yaml(hooks))
    name = "podcliqueset-validating-webhook"
    inject = '[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"Q0E="}]'
    kubectl("patch", "validatingwebhookconfiguration", name, "--type=json", "-p", inject)
    for hook in hooks:
        hook["metadata"]["labels"]["app.kubernetes.io/version"] = "9.9.9"
        hook["webhooks"][0]["timeoutSeconds"] = 12
    kubectl("apply", "-f", "-", input=m.to_yaml(hooks))
    found = yaml.safe_load(kubectl("get", "validatingwebhookconfiguration", name, "-o", "yaml").stdout)
    (webhook,) = found["webhooks"]
    expected = m.one(hooks, "ValidatingWebhookConfiguration", name)["webhooks"][0]
    assert webhook["clientConfig"] == {**expected["clientConfig"], "caBundle": "Q0E="}
    assert {k: webhook[k] for k in expected} == {**expected, "clientConfig": webhook["clientConfig"]}
    assert set(found) == {"apiVersion", "kind", "metadata", "webhooks"}
