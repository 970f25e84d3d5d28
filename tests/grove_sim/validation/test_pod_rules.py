"""Pods are validated as kube-apiserver validates them: each rule refuses with its field and upstream's message,
and the valid value next to the refused one is accepted (through kubernetes-asyncio, on a real grove-sim)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

Pod = dict[str, Any]
Edit = Callable[[Pod], None]

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
ENV_MSG = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must "
    "not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation "
    "is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
)
GPU = "nvidia.com/gpu"


def base_pod(name: str) -> Pod:
    return {
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def container(pod: Pod, index: int = 0) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod["spec"]["containers"]
    return containers[index]


def set_resources(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> Edit:
    def edit(pod: Pod) -> None:
        resources: dict[str, Any] = {}
        if requests is not None:
            resources["requests"] = requests
        if limits is not None:
            resources["limits"] = limits
        container(pod)["resources"] = resources

    return edit


def spec(**fields: Any) -> Edit:
    def edit(pod: Pod) -> None:
        pod["spec"].update(copy.deepcopy(fields))

    return edit


def labels(values: dict[str, str]) -> Edit:
    def edit(pod: Pod) -> None:
        pod["metadata"]["labels"] = values

    return edit


def annotations(values: dict[str, str]) -> Edit:
    def edit(pod: Pod) -> None:
        pod["metadata"]["annotations"] = values

    return edit


def in_container(**fields: Any) -> Edit:
    def edit(pod: Pod) -> None:
        container(pod).update(copy.deepcopy(fields))

    return edit


def containers(*items: dict[str, Any], init: list[dict[str, Any]] | None = None) -> Edit:
    def edit(pod: Pod) -> None:
        pod["spec"]["containers"] = copy.deepcopy(list(items))
        if init is not None:
            pod["spec"]["initContainers"] = copy.deepcopy(init)

    return edit


def mount_with_volume(pod: Pod) -> None:
    in_container(volumeMounts=[{"name": "cache", "mountPath": "/cache"}])(pod)
    spec(volumes=[{"name": "cache", "emptyDir": {}}])(pod)


# (case, refused edit, field, upstream detail, accepted neighbour edit)
CASES: list[tuple[str, Edit, str, str, Edit]] = [
    (
        "label-value-too-long",
        labels({"app": "x" * 64}),
        "metadata.labels",
        f'Invalid value: "{"x" * 64}": must be no more than 63 characters',
        labels({"app": "x" * 63}),
    ),
    (
        "label-value-format",
        labels({"app": "-web"}),
        "metadata.labels",
        f'Invalid value: "-web": {LABEL_VALUE_MSG}',
        labels({"app": "web-"[:-1]}),
    ),
    (
        "label-key-two-slashes",
        labels({"a/b/c": "x"}),
        "metadata.labels",
        f"Invalid value: \"a/b/c\": a qualified name {QUALIFIED_MSG} with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName')",
        labels({"example.com/c": "x"}),
    ),
    (
        "label-key-name-too-long",
        labels({"k" * 64: "x"}),
        "metadata.labels",
        f'Invalid value: "{"k" * 64}": name part must be no more than 63 characters',
        labels({"k" * 63: "x"}),
    ),
    (
        "annotations-total-size",
        annotations({"big": "x" * (256 * 1024 - 2)}),
        "metadata.annotations",
        "Too long: may not be more than 262144 bytes",
        annotations({"big": "x" * (256 * 1024 - 3)}),
    ),
    (
        "annotation-key",
        annotations({"bad key": "x"}),
        "metadata.annotations",
        f'Invalid value: "bad key": name part {QUALIFIED_MSG}',
        annotations({"Example.com/Good-Key": "x"}),
    ),
    (
        "hostname-too-long",
        spec(hostname="h" * 64),
        "spec.hostname",
        f'Invalid value: "{"h" * 64}": must be no more than 63 characters',
        spec(hostname="h" * 63),
    ),
    (
        "hostname-not-a-label",
        spec(hostname="web.0"),
        "spec.hostname",
        f'Invalid value: "web.0": {LABEL_MSG}',
        spec(hostname="web-0"),
    ),
    (
        "subdomain-not-a-label",
        spec(subdomain="Svc"),
        "spec.subdomain",
        f'Invalid value: "Svc": {LABEL_MSG}',
        spec(subdomain="svc"),
    ),
    (
        "fractional-gpu",
        set_resources(limits={GPU: 0.5}),
        f"spec.containers[0].resources.limits[{GPU}]",
        'Invalid value: "500m": must be an integer',
        set_resources(limits={GPU: 1}),
    ),
    (
        "gpu-requests-without-limits",
        set_resources(requests={GPU: "2"}),
        "spec.containers[0].resources.limits",
        "Required value: Limit must be set for non overcommitable resources",
        set_resources(requests={GPU: "2"}, limits={GPU: "2"}),
    ),
    (
        "gpu-requests-below-limits",
        set_resources(requests={GPU: "1"}, limits={GPU: "2"}),
        "spec.containers[0].resources.requests",
        'Invalid value: "1": must be equal to nvidia.com/gpu limit of 2',
        set_resources(requests={GPU: "2"}, limits={GPU: "2"}),
    ),
    (
        "cpu-requests-above-limits",
        set_resources(requests={"cpu": "1500m"}, limits={"cpu": "1"}),
        "spec.containers[0].resources.requests",
        'Invalid value: "1500m": must be less than or equal to cpu limit of 1',
        set_resources(requests={"cpu": "500m"}, limits={"cpu": "1"}),
    ),
    (
        "negative-memory",
        set_resources(limits={"memory": "-1Gi"}),
        "spec.containers[0].resources.limits[memory]",
        'Invalid value: "-1Gi": must be greater than or equal to 0',
        set_resources(limits={"memory": "1Gi"}),
    ),
    (
        "unknown-bare-resource",
        set_resources(limits={"gpu": "1"}),
        "spec.containers[0].resources.limits[gpu]",
        'Invalid value: "gpu": must be a standard resource for containers',
        set_resources(limits={"example.com/gpu": "1"}),
    ),
    (
        "duplicate-container-names",
        containers({"name": "main", "image": "a"}, {"name": "main", "image": "b"}),
        "spec.containers[1].name",
        'Duplicate value: "main"',
        containers({"name": "main", "image": "a"}, {"name": "side", "image": "b"}),
    ),
    (
        "container-name-not-a-label",
        containers({"name": "Main_1", "image": "a"}),
        "spec.containers[0].name",
        f'Invalid value: "Main_1": {LABEL_MSG}',
        containers({"name": "main-1", "image": "a"}),
    ),
    (
        "init-container-name-taken",
        containers({"name": "main", "image": "a"}, init=[{"name": "main", "image": "b"}]),
        "spec.initContainers[0].name",
        'Duplicate value: "main"',
        containers({"name": "main", "image": "a"}, init=[{"name": "setup", "image": "b"}]),
    ),
    (
        "container-image-missing",
        containers({"name": "main"}),
        "spec.containers[0].image",
        "Required value",
        containers({"name": "main", "image": "a"}),
    ),
    (
        "port-out-of-range",
        in_container(ports=[{"containerPort": 70000}]),
        "spec.containers[0].ports[0].containerPort",
        "Invalid value: 70000: must be between 1 and 65535, inclusive",
        in_container(ports=[{"containerPort": 65535}]),
    ),
    (
        "port-protocol",
        in_container(ports=[{"containerPort": 80, "protocol": "HTTP"}]),
        "spec.containers[0].ports[0].protocol",
        'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        in_container(ports=[{"containerPort": 80, "protocol": "UDP"}]),
    ),
    (
        "port-names-unique",
        in_container(ports=[{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81}]),
        "spec.containers[0].ports[1].name",
        'Duplicate value: "http"',
        in_container(ports=[{"name": "http", "containerPort": 80}, {"name": "metrics", "containerPort": 81}]),
    ),
    (
        "env-name",
        in_container(env=[{"name": "1TOKEN", "value": "x"}]),
        "spec.containers[0].env[0].name",
        f'Invalid value: "1TOKEN": {ENV_MSG}',
        in_container(env=[{"name": "TOKEN1", "value": "x"}]),
    ),
    (
        "env-value-and-value-from",
        in_container(env=[{"name": "N", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
        "spec.containers[0].env[0].valueFrom",
        'Invalid value: "": may not be specified when `value` is not empty',
        in_container(env=[{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
    ),
    (
        "restart-policy",
        spec(restartPolicy="Sometimes"),
        "spec.restartPolicy",
        'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
        spec(restartPolicy="OnFailure"),
    ),
    (
        "volume-name",
        spec(volumes=[{"name": "Data", "emptyDir": {}}]),
        "spec.volumes[0].name",
        f'Invalid value: "Data": {LABEL_MSG}',
        spec(volumes=[{"name": "data", "emptyDir": {}}]),
    ),
    (
        "volume-names-unique",
        spec(volumes=[{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]),
        "spec.volumes[1].name",
        'Duplicate value: "data"',
        spec(volumes=[{"name": "data", "emptyDir": {}}, {"name": "logs", "emptyDir": {}}]),
    ),
    (
        "mount-of-missing-volume",
        in_container(volumeMounts=[{"name": "cache", "mountPath": "/cache"}]),
        "spec.containers[0].volumeMounts[0].name",
        'Not found: "cache"',
        mount_with_volume,
    ),
    (
        "toleration-exists-with-value",
        spec(tolerations=[{"key": GPU, "operator": "Exists", "value": "present"}]),
        "spec.tolerations[0].operator",
        "Invalid value: \"present\": value must be empty when `operator` is 'Exists'",
        spec(tolerations=[{"key": GPU, "operator": "Exists"}]),
    ),
    (
        "scheduling-gate-name",
        spec(schedulingGates=[{"name": "wait for it"}]),
        "spec.schedulingGates[0]",
        f'Invalid value: "wait for it": name part {QUALIFIED_MSG}',
        spec(schedulingGates=[{"name": "example.com/wait-for-it"}]),
    ),
    (
        "active-deadline",
        spec(activeDeadlineSeconds=0),
        "spec.activeDeadlineSeconds",
        "Invalid value: 0: must be between 1 and 2147483647, inclusive",
        spec(activeDeadlineSeconds=1),
    ),
    (
        "node-name-while-gated",
        spec(nodeName="node-0", schedulingGates=[{"name": "example.com/wait"}]),
        "spec.nodeName",
        "Forbidden: cannot be set until all schedulingGates have been cleared",
        spec(nodeName="node-0"),
    ),
    (
        "service-account-name",
        spec(serviceAccountName="Bad_SA"),
        "spec.serviceAccountName",
        f'Invalid value: "Bad_SA": {SUBDOMAIN_MSG}',
        spec(serviceAccountName="default"),
    ),
]


@pytest.mark.parametrize(("case", "refused_edit", "field", "detail", "accepted_edit"), CASES, ids=[c[0] for c in CASES])
async def test_pod_rule(
    api_client: client.ApiClient,
    namespace: str,
    refused: Callable[..., dict[str, Any]],
    case: str,
    refused_edit: Edit,
    field: str,
    detail: str,
    accepted_edit: Edit,
) -> None:
    """The refused pod gets a 422 naming ``field`` with upstream's ``detail``; its valid neighbour is created."""
    core = client.CoreV1Api(api_client)
    bad = base_pod("bad")
    refused_edit(bad)
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod(namespace, bad)
    refused(exc.value, 'Pod "bad"', field, detail)
    good = base_pod("good")
    accepted_edit(good)
    created = await core.create_namespaced_pod(namespace, good)
    assert created.metadata.name == "good"


async def test_name_and_generate_name_rules(
    api_client: client.ApiClient, namespace: str, refused: Callable[..., dict[str, Any]]
) -> None:
    """A pod name is a DNS-1123 subdomain; a generateName prefix may end in '-' and is checked as well."""
    core = client.CoreV1Api(api_client)
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod(namespace, base_pod("Web_0"))
    refused(exc.value, 'Pod "Web_0"', "metadata.name", f'Invalid value: "Web_0": {SUBDOMAIN_MSG}')
    assert (await core.create_namespaced_pod(namespace, base_pod("web.0"))).metadata.name == "web.0"
    generated = {**base_pod(""), "metadata": {"generateName": "Web_"}}
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod(namespace, generated)
    generated_name = json.loads(exc.value.body)["details"]["name"]
    assert generated_name.startswith("Web_")
    assert len(generated_name) == 9
    subject = f'Pod "{generated_name}"'
    refused(exc.value, subject, "metadata.generateName", f'Invalid value: "Web_": {SUBDOMAIN_MSG}')
    refused(exc.value, subject, "metadata.name", f'Invalid value: "{generated_name}": {SUBDOMAIN_MSG}')
    created = await core.create_namespaced_pod(namespace, {**generated, "metadata": {"generateName": "web-"}})
    assert created.metadata.name.startswith("web-")


async def test_several_causes_in_one_status(api_client: client.ApiClient, namespace: str) -> None:
    """Every broken rule is reported at once, in upstream's order, as a bracketed list in the message."""
    pod = base_pod("many")
    pod["metadata"]["labels"] = {"app": "x" * 64}
    pod["spec"].update({"hostname": "H", "restartPolicy": "Sometimes"})
    with pytest.raises(ApiException) as exc:
        await client.CoreV1Api(api_client).create_namespaced_pod(namespace, pod)
    status = json.loads(exc.value.body)
    fields = [c["field"] for c in status["details"]["causes"]]
    assert fields == ["metadata.labels", "spec.restartPolicy", "spec.hostname"]
    assert status["message"].startswith('Pod "many" is invalid: [metadata.labels: Invalid value: ')
    assert status["message"].endswith("]")


async def test_undecodable_values_are_bad_requests(api_client: client.ApiClient, namespace: str) -> None:
    """A number where a string belongs, or text that is no quantity, fails like the real decoder: 400."""
    core = client.CoreV1Api(api_client)
    bad_label = base_pod("typed")
    bad_label["metadata"]["labels"] = {"app": 5}
    bad_quantity = base_pod("typed")
    set_resources(limits={"cpu": "lots"})(bad_quantity)
    for body, fragment in (
        (bad_label, "json: cannot unmarshal number into Go struct field metadata.labels of type string"),
        (bad_quantity, "quantities must match the regular expression"),
    ):
        with pytest.raises(ApiException) as exc:
            await core.create_namespaced_pod(namespace, body)
        status = json.loads(exc.value.body)
        assert (exc.value.status, status["reason"]) == (400, "BadRequest")
        assert status["message"].startswith('Pod in version "v1" cannot be handled as a Pod: ')
        assert fragment in status["message"]


async def test_defaults_make_limits_only_pods_valid(api_client: client.ApiClient, namespace: str) -> None:
    """Requests default to limits and container ports to TCP before validation, as upstream defaulting does."""
    pod = base_pod("defaults")
    set_resources(limits={GPU: "4", "cpu": "2"})(pod)
    in_container(ports=[{"containerPort": 8080}])(pod)
    created = await client.CoreV1Api(api_client).create_namespaced_pod(namespace, pod)
    main = created.spec.containers[0]
    assert main.resources.requests == {GPU: "4", "cpu": "2"}
    assert main.ports[0].protocol == "TCP"
