"""`deploy/` renders with `kubectl kustomize` and says what the programs expect: the CRDs are `crds/`, the webhook
configurations are the operator's own, each Deployment's flags parse with its program's parser and bind the pod
IP where the probes and Services look, the pods run as non-root on a read-only root filesystem, and the
init-container image follows the operator's image whichever overlay sets it."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from grove_api import labels as glabels
from grove_operator import cli as operator_cli
from grove_operator.webhooks.setup import AUTHORIZER, CONFIGURATIONS
from grove_runtime.webhook.registration import ClientTarget, ConfigurationSpec, configuration
from grove_sched import cli as scheduler_cli

from . import _manifests as m
from ._rbac import Request, denied, grants_of

Obj = dict[str, Any]
POD_IP = "10.1.2.3"
PROGRAMS = ("grove-operator", "grove-scheduler")


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Obj]]:
    return {name: m.overlay(name) for name in m.OVERLAYS}


def _kinds(objects: list[Obj]) -> set[str]:
    return {o["kind"] for o in objects}


def test_every_overlay_renders_what_it_installs(rendered: dict[str, list[Obj]]) -> None:
    everything = {
        "Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
        "RoleBinding", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }  # fmt: skip
    assert _kinds(rendered["sim"]) == _kinds(rendered["production"]) == everything
    only = rendered["scheduler-only"]
    assert {(o["kind"], o["metadata"]["name"]) for o in only if o["kind"] in {"Deployment", "Service"}} == {
        ("Deployment", "grove-scheduler"),
        ("Service", "grove-scheduler-metrics"),
    }
    assert "CustomResourceDefinition" not in _kinds(only), "upstream Grove's operator installs the CRDs"
    for objects in rendered.values():
        namespaced = [o for o in objects if o["kind"] in {"Deployment", "Service", "Role", "ServiceAccount"}]
        assert {o["metadata"]["namespace"] for o in namespaced} == {m.NAMESPACE}


def test_crds_are_the_generated_ones() -> None:
    """deploy/crds holds exactly crds/ (`make crds` writes both), each file listed in its kustomization."""
    generated = {p.name: p.read_bytes() for p in (m.ROOT / "crds").glob("*.yaml")}
    copied = {p.name: p.read_bytes() for p in (m.DEPLOY / "crds").glob("*.yaml") if p.name != "kustomization.yaml"}
    assert copied == generated, "run `make crds`"
    listed = m.render(m.DEPLOY / "crds")
    assert len(listed) == len(generated)


def _same_as_operators(objects: list[Obj], spec: ConfigurationSpec) -> None:
    """The configuration is what the operator would create in service mode, without the CA bundle it injects."""
    target = ClientTarget(service_namespace=m.NAMESPACE, service_name="grove-operator-webhook", service_port=443)
    expected = configuration(spec, target, b"")
    for hook in expected["webhooks"]:
        del hook["clientConfig"]["caBundle"]
    found = m.one(objects, expected["kind"], spec.name)
    assert found["webhooks"] == expected["webhooks"]
    assert expected["metadata"]["labels"].items() <= found["metadata"]["labels"].items()


def test_webhook_configurations_are_the_operators(rendered: dict[str, list[Obj]]) -> None:
    for spec in CONFIGURATIONS:
        _same_as_operators(rendered["production"], spec)
    assert not [o for o in rendered["production"] if o["metadata"]["name"] == AUTHORIZER.name]
    service = m.one(rendered["production"], "Service", "grove-operator-webhook")
    assert service["spec"]["ports"][0]["port"] == 443


def _argv(objects: list[Obj], name: str) -> list[str]:
    deployment = m.one(objects, "Deployment", name)
    return m.command_line(deployment, m.environment(objects, deployment, POD_IP))


@pytest.mark.parametrize("overlay", m.OVERLAYS)
def test_flags_parse_and_bind_the_pod_ip(rendered: dict[str, list[Obj]], overlay: str) -> None:
    objects = rendered[overlay]
    if overlay != "scheduler-only":
        argv = _argv(objects, "grove-operator")
        assert argv[0] == "grove-operator"
        args = operator_cli.parse_args(argv[1:])
        assert (str(args.health), str(args.metrics)) == (f"{POD_IP}:2751", f"{POD_IP}:2752")
        settings = operator_cli.webhook_settings(args)
        assert settings is not None
        assert (settings.host, settings.port, settings.service_name) == (POD_IP, 9443, "grove-operator-webhook")
        assert settings.namespace == args.lease.namespace == m.NAMESPACE
        assert args.leader_elect
        assert args.default_scheduler_name == "grove-scheduler"
    argv = _argv(objects, "grove-scheduler")
    assert argv[0] == "grove-scheduler"
    config = scheduler_cli.parse_args(argv[1:])
    assert (config.metrics_host, config.metrics_port, config.probes_with_metrics) == (POD_IP, 8080, True)
    assert config.leader_elect
    assert config.lease.namespace == m.NAMESPACE


def _port_number(container: Obj, port: int | str) -> int:
    if isinstance(port, int):
        return port
    return next(int(p["containerPort"]) for p in container["ports"] if p["name"] == port)


@pytest.mark.parametrize("name", PROGRAMS)
def test_deployment_runs_two_hardened_replicas_probed_where_they_listen(
    rendered: dict[str, list[Obj]], name: str
) -> None:
    objects = rendered["production"]
    deployment = m.one(objects, "Deployment", name)
    pod = deployment["spec"]["template"]["spec"]
    container = m.container(deployment)
    assert deployment["spec"]["replicas"] == 2
    assert pod["serviceAccountName"] == name
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    listening = {a.rpartition(":")[2] for a in _argv(objects, name) if "-bind-address=" in a and ":" in a}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert str(_port_number(container, get["port"])) in listening
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    budget = m.one(objects, "PodDisruptionBudget", name)
    assert budget["spec"]["minAvailable"] == 1
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    services = [o for o in objects if o["kind"] == "Service" and o["spec"]["selector"].items() <= labels.items()]
    assert services
    for service in services:
        for port in service["spec"]["ports"]:
            assert str(_port_number(container, port["targetPort"])) in {*listening, "9443"}


def test_scheduler_metrics_service_is_the_documented_one(rendered: dict[str, list[Obj]]) -> None:
    """`kubectl port-forward -n grove-system svc/grove-scheduler-metrics 8080:8080`, as the README writes it."""
    service = m.one(rendered["production"], "Service", "grove-scheduler-metrics")
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("metrics", 8080)]
    assert m.one(rendered["production"], "Service", "grove-operator-metrics")["spec"]["ports"][0]["port"] == 2752


@pytest.mark.parametrize("overlay", ["sim", "production"])
def test_initc_image_is_the_operators_image(rendered: dict[str, list[Obj]], overlay: str) -> None:
    deployment = m.one(rendered[overlay], "Deployment", "grove-operator")
    env = m.environment(rendered[overlay], deployment, POD_IP)
    assert env[glabels.ENV_INIT_CONTAINER_IMAGE] == m.container(deployment)["image"]


def test_an_overlay_of_its_own_registry_moves_both_images(tmp_path: Path) -> None:
    """A user's overlay over production that renames the image also renames grove-initc's."""
    images = "images:\n- name: ghcr.io/grove-py/grove\n  newName: my.example/grove\n  newTag: '7'\n"
    objects = m.production_with(tmp_path, images=images)
    deployment = m.one(objects, "Deployment", "grove-operator")
    assert m.container(deployment)["image"] == "my.example/grove:7"
    assert m.environment(objects, deployment, POD_IP)[glabels.ENV_INIT_CONTAINER_IMAGE] == "my.example/grove:7"
    assert m.container(m.one(objects, "Deployment", "grove-scheduler"))["image"] == "my.example/grove:7"


def test_release_version_is_the_packages(rendered: dict[str, list[Obj]]) -> None:
    """The released image tag and version label follow pyproject's version (`make release` checks it too)."""
    package = version("grove")
    for overlay in ("production", "scheduler-only"):
        for obj in rendered[overlay]:
            assert obj["metadata"]["labels"]["app.kubernetes.io/version"] == package, obj["metadata"]["name"]
        for deployment in (o for o in rendered[overlay] if o["kind"] == "Deployment"):
            assert m.container(deployment)["image"].endswith(f":{package}")


def test_servicemonitor_component_scrapes_both_metrics_services(tmp_path: Path) -> None:
    objects = m.production_with(tmp_path, "servicemonitor")
    monitors = [o for o in objects if o["kind"] == "ServiceMonitor"]
    assert {o["metadata"]["name"] for o in monitors} == set(PROGRAMS)
    for monitor in monitors:
        selector = monitor["spec"]["selector"]["matchLabels"]
        matched = [o for o in objects if o["kind"] == "Service" and selector.items() <= o["metadata"]["labels"].items()]
        assert len(matched) == 1
        assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in matched[0]["spec"]["ports"]}


def test_authorizer_component_turns_upstreams_protection_on(tmp_path: Path) -> None:
    """`--authorizer`, its configuration as the operator describes it, and the two rights it needs."""
    objects = m.production_with(tmp_path, "authorizer")
    _same_as_operators(objects, AUTHORIZER)
    args = operator_cli.parse_args(_argv(objects, "grove-operator")[1:])
    settings = operator_cli.webhook_settings(args)
    assert settings is not None
    assert settings.authorizer
    user = f"system:serviceaccount:{m.NAMESPACE}:grove-operator"
    review = Request("create", "authentication.k8s.io", "selfsubjectreviews", "", "")
    inject = Request("update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", AUTHORIZER.name)
    assert denied([review, inject], grants_of(objects, user)) == []
    assert denied([review], grants_of(m.overlay("production"), user)) == [str(review)]


def test_every_overlay_grants_what_the_audited_sim_overlay_grants(rendered: dict[str, list[Obj]]) -> None:
    """The audit check (test_rbac_from_audit.py) runs the sim overlay; no other overlay's roles may differ."""

    def rules(objects: list[Obj]) -> dict[tuple[str, str], Obj]:
        kinds = {"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}
        return {(o["kind"], o["metadata"]["name"]): o.get("rules") or o.get("subjects") for o in objects
                if o["kind"] in kinds}  # fmt: skip

    audited = rules(rendered["sim"])
    for overlay in ("production", "scheduler-only"):
        found = rules(rendered[overlay])
        assert found == {k: audited[k] for k in found}
