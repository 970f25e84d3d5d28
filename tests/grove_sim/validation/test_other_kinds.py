"""The other built-in kinds grove-sim serves are validated as kube-apiserver validates them, each rule with its
refused value and the valid neighbour (through kubernetes-asyncio)."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

Refused = Callable[..., dict[str, Any]]
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation "
    "is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)


async def expect_refusal(
    create: Callable[[dict[str, Any]], Awaitable[Any]], body: dict[str, Any], refused: Refused, *expected: str
) -> None:
    """``create(body)`` is a 422 for ``subject`` naming ``field`` with ``detail``."""
    subject, field, detail = expected
    with pytest.raises(ApiException) as exc:
        await create(body)
    refused(exc.value, subject, field, detail)


async def test_service_rules(api_client: client.ApiClient, namespace: str, refused: Refused) -> None:
    """DNS-1035 names, named ports when there are several, port numbers, supported types."""
    core = client.CoreV1Api(api_client)

    async def create(body: dict[str, Any]) -> Any:
        return await core.create_namespaced_service(namespace, body)

    one_port = {"ports": [{"port": 80}]}
    await expect_refusal(
        create,
        {"metadata": {"name": "1st"}, "spec": one_port},
        refused,
        'Service "1st"',
        "metadata.name",
        f'Invalid value: "1st": {DNS1035_MSG}',
    )
    await expect_refusal(
        create,
        {"metadata": {"name": "two"}, "spec": {"ports": [{"port": 80}, {"port": 81}]}},
        refused,
        'Service "two"',
        "spec.ports[0].name",
        "Required value",
    )
    await expect_refusal(
        create,
        {"metadata": {"name": "zero"}, "spec": {"ports": [{"port": 0}]}},
        refused,
        'Service "zero"',
        "spec.ports[0].port",
        "Invalid value: 0: must be between 1 and 65535, inclusive",
    )
    await expect_refusal(
        create,
        {"metadata": {"name": "kind"}, "spec": {"type": "Internal", **one_port}},
        refused,
        'Service "kind"',
        "spec.type",
        'Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
    )
    created = await create(
        {"metadata": {"name": "first"}, "spec": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}}
    )
    assert [(p.protocol, p.target_port) for p in created.spec.ports] == [("TCP", 80), ("TCP", 81)]
    headless = await create({"metadata": {"name": "headless"}, "spec": {"clusterIP": "None"}})
    assert headless.spec.cluster_ip == "None"


async def test_configmap_and_secret_rules(api_client: client.ApiClient, namespace: str, refused: Refused) -> None:
    """Config keys, the service-account-token annotation, and the ``immutable`` freeze."""
    core = client.CoreV1Api(api_client)

    async def create_cm(body: dict[str, Any]) -> Any:
        return await core.create_namespaced_config_map(namespace, body)

    async def create_secret(body: dict[str, Any]) -> Any:
        return await core.create_namespaced_secret(namespace, body)

    await expect_refusal(
        create_cm,
        {"metadata": {"name": "cm"}, "data": {"bad key": "x"}},
        refused,
        'ConfigMap "cm"',
        "data[bad key]",
        f'Invalid value: "bad key": {CONFIG_KEY_MSG}',
    )
    await create_cm({"metadata": {"name": "cm"}, "data": {"good.key": "x"}, "immutable": True})
    with pytest.raises(ApiException) as exc:
        await core.patch_namespaced_config_map("cm", namespace, {"data": {"good.key": "y"}})
    refused(exc.value, 'ConfigMap "cm"', "data", "Forbidden: field is immutable when `immutable` is set")
    token = {"metadata": {"name": "tok"}, "type": "kubernetes.io/service-account-token"}
    await expect_refusal(
        create_secret,
        token,
        refused,
        'Secret "tok"',
        "metadata.annotations[kubernetes.io/service-account.name]",
        "Required value",
    )
    token["metadata"]["annotations"] = {"kubernetes.io/service-account.name": "default"}
    assert (await create_secret(token)).type == "kubernetes.io/service-account-token"
    encoded = base64.b64encode(b"v").decode()
    await expect_refusal(
        create_secret,
        {"metadata": {"name": "s"}, "data": {"a/b": encoded}},
        refused,
        'Secret "s"',
        "data[a/b]",
        f'Invalid value: "a/b": {CONFIG_KEY_MSG}',
    )
    assert (await create_secret({"metadata": {"name": "s"}, "data": {"a_b": encoded}})).type == "Opaque"


async def test_namespace_node_and_lease_rules(api_client: client.ApiClient, namespace: str, refused: Refused) -> None:
    """Namespace names are DNS-1123 labels, node taints have supported effects, lease durations are positive."""
    core = client.CoreV1Api(api_client)
    await expect_refusal(
        core.create_namespace,
        {"metadata": {"name": "team.a"}},
        refused,
        'Namespace "team.a"',
        "metadata.name",
        f'Invalid value: "team.a": {LABEL_MSG}',
    )
    taint = {"key": "example.com/dedicated", "value": "ml", "effect": "Sometimes"}
    await expect_refusal(
        core.create_node,
        {"metadata": {"name": "tainted"}, "spec": {"taints": [taint]}},
        refused,
        'Node "tainted"',
        "spec.taints[0].effect",
        'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
    )
    created = await core.create_node(
        {"metadata": {"name": "tainted"}, "spec": {"taints": [{**taint, "effect": "NoSchedule"}]}}
    )
    assert created.spec.taints[0].effect == "NoSchedule"
    leases = client.CoordinationV1Api(api_client)

    async def create_lease(body: dict[str, Any]) -> Any:
        return await leases.create_namespaced_lease(namespace, body)

    await expect_refusal(
        create_lease,
        {"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0}},
        refused,
        'Lease.coordination.k8s.io "l"',
        "spec.leaseDurationSeconds",
        "Invalid value: 0: must be greater than 0",
    )
    assert (
        await create_lease({"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 15}})
    ).spec.lease_duration_seconds == 15


async def test_priority_class_rules(api_client: client.ApiClient, refused: Refused) -> None:
    """The ``system-`` prefix is reserved and user classes stay at or below one billion."""
    scheduling = client.SchedulingV1Api(api_client)
    await expect_refusal(
        scheduling.create_priority_class,
        {"metadata": {"name": "system-mine"}, "value": 10},
        refused,
        'PriorityClass.scheduling.k8s.io "system-mine"',
        "metadata.name",
        "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: "
        "system-mine is not a known system priority class",
    )
    await expect_refusal(
        scheduling.create_priority_class,
        {"metadata": {"name": "huge"}, "value": 1_000_000_001},
        refused,
        'PriorityClass.scheduling.k8s.io "huge"',
        "value",
        "Forbidden: maximum allowed value of a user defined priority is 1000000000",
    )
    created = await scheduling.create_priority_class({"metadata": {"name": "huge"}, "value": 1_000_000_000})
    assert created.value == 1_000_000_000


async def test_rbac_rules(api_client: client.ApiClient, namespace: str, refused: Refused) -> None:
    """Rules name verbs; bindings refer to a Role or ClusterRole and never change their roleRef."""
    rbac = client.RbacAuthorizationV1Api(api_client)

    async def create_role(body: dict[str, Any]) -> Any:
        return await rbac.create_namespaced_role(namespace, body)

    async def create_binding(body: dict[str, Any]) -> Any:
        return await rbac.create_namespaced_role_binding(namespace, body)

    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": []}
    await expect_refusal(
        create_role,
        {"metadata": {"name": "r"}, "rules": [rule]},
        refused,
        'Role.rbac.authorization.k8s.io "r"',
        "rules[0].verbs",
        "Required value: verbs must contain at least one value",
    )
    await create_role({"metadata": {"name": "r"}, "rules": [{**rule, "verbs": ["get"]}]})
    subjects = [{"kind": "ServiceAccount", "name": "default", "namespace": namespace}]
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Pod", "name": "r"}
    await expect_refusal(
        create_binding,
        {"metadata": {"name": "b"}, "roleRef": ref, "subjects": subjects},
        refused,
        'RoleBinding.rbac.authorization.k8s.io "b"',
        "roleRef.kind",
        'Unsupported value: "Pod": supported values: "Role", "ClusterRole"',
    )
    await create_binding({"metadata": {"name": "b"}, "roleRef": {**ref, "kind": "Role"}, "subjects": subjects})
    with pytest.raises(ApiException) as exc:
        await rbac.patch_namespaced_role_binding("b", namespace, {"roleRef": {**ref, "kind": "ClusterRole"}})
    refused(
        exc.value,
        'RoleBinding.rbac.authorization.k8s.io "b"',
        "roleRef",
        'Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"r"}: '
        "cannot change roleRef",
    )


async def test_hpa_and_event_rules(api_client: client.ApiClient, namespace: str, refused: Refused) -> None:
    """HPA replica bounds; a v1 Event belongs to its involved object's namespace."""
    hpas = client.AutoscalingV2Api(api_client)

    async def create_hpa(body: dict[str, Any]) -> Any:
        return await hpas.create_namespaced_horizontal_pod_autoscaler(namespace, body)

    target = {"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "name": "w"}
    await expect_refusal(
        create_hpa,
        {"metadata": {"name": "h"}, "spec": {"scaleTargetRef": target, "minReplicas": 3, "maxReplicas": 2}},
        refused,
        'HorizontalPodAutoscaler.autoscaling "h"',
        "spec.maxReplicas",
        "Invalid value: 2: must be greater than or equal to `minReplicas`",
    )
    await create_hpa(
        {"metadata": {"name": "h"}, "spec": {"scaleTargetRef": target, "minReplicas": 2, "maxReplicas": 3}}
    )
    core = client.CoreV1Api(api_client)

    async def create_event(body: dict[str, Any]) -> Any:
        return await core.create_namespaced_event(namespace, body)

    involved = {"kind": "Pod", "name": "p", "namespace": "elsewhere"}
    await expect_refusal(
        create_event,
        {"metadata": {"name": "e"}, "involvedObject": involved, "reason": "R"},
        refused,
        'Event "e"',
        "involvedObject.namespace",
        'Invalid value: "elsewhere": does not match event.namespace',
    )
    await create_event(
        {"metadata": {"name": "e"}, "involvedObject": {**involved, "namespace": namespace}, "reason": "R"}
    )


async def test_custom_resources_get_metadata_validation(
    api_client: client.ApiClient, namespace: str, widget_crd: dict[str, Any], refused: Refused
) -> None:
    """A custom resource's labels obey the same rules as a built-in's."""
    objects = client.CustomObjectsApi(api_client)
    body = {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"tier": "x" * 64}}}
    with pytest.raises(ApiException) as exc:
        await objects.create_namespaced_custom_object("example.dev", "v1", namespace, "widgets", body)
    detail = f'Invalid value: "{"x" * 64}": must be no more than 63 characters'
    refused(exc.value, 'Widget.example.dev "w"', "metadata.labels", detail)
    body["metadata"]["labels"] = {"tier": "x" * 63}
    created = await objects.create_namespaced_custom_object("example.dev", "v1", namespace, "widgets", body)
    assert created["metadata"]["labels"] == {"tier": "x" * 63}
