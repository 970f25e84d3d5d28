"""Properties of the validation, against a running grove-sim (kubernetes-asyncio, dry runs) and in-process.

Each oracle below restates an upstream rule independently (a regular expression and a length), so a generated value
is refused exactly when the rule says so, whatever the implementation's caching and fast paths do.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

from grove_sim.testing import SimCluster
from grove_sim.validation import builtin, names, pod

Create = Callable[[dict[str, Any]], int]
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def base_pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "probe", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


@pytest.fixture(scope="module")
def create_pod(sim: SimCluster) -> Iterator[Create]:
    """Create a pod as a dry run through kubernetes-asyncio; returns the HTTP status (201 or the error's)."""
    loop = asyncio.new_event_loop()

    async def connect() -> client.ApiClient:
        configuration = client.Configuration()
        await config.load_kube_config(config_file=sim.kubeconfig, client_configuration=configuration)
        return client.ApiClient(configuration=configuration)

    api = loop.run_until_complete(connect())
    core = client.CoreV1Api(api)

    async def attempt(body: dict[str, Any]) -> int:
        try:
            await core.create_namespaced_pod("default", body, dry_run="All")
        except ApiException as exc:
            return int(exc.status)
        return 201

    yield lambda body: loop.run_until_complete(attempt(body))
    loop.run_until_complete(api.close())
    loop.close()


label_values = st.one_of(
    st.text(alphabet="abcXYZ019-_.", max_size=70),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    st.builds(lambda n: "a" * n, st.integers(60, 66)),
)


@PROPERTY
@given(value=label_values)
def test_label_values_are_accepted_iff_valid(create_pod: Create, value: str) -> None:
    """A label value is accepted exactly when it is at most 63 bytes of the label-value format."""
    body = base_pod()
    body["metadata"]["labels"]["app"] = value
    valid = len(value.encode()) <= 63 and LABEL_VALUE.fullmatch(value) is not None
    assert create_pod(body) == (201 if valid else 422)


@PROPERTY
@given(amount=st.decimals(min_value=0, max_value=16, places=3, allow_nan=False, allow_infinity=False))
def test_extended_resources_are_accepted_iff_whole(create_pod: Create, amount: Decimal) -> None:
    """An extended resource (requests equal to limits) is accepted exactly when the amount is a whole number."""
    body = base_pod()
    text = str(amount)
    body["spec"]["containers"][0]["resources"] = {
        "requests": {"nvidia.com/gpu": text},
        "limits": {"nvidia.com/gpu": text},
    }
    assert create_pod(body) == (201 if amount == amount.to_integral_value() else 422)


@PROPERTY
@given(hostname=st.text(alphabet="ab0-.A", min_size=1, max_size=70))
def test_hostnames_are_accepted_iff_dns_labels(create_pod: Create, hostname: str) -> None:
    """``spec.hostname`` is accepted exactly when it is a DNS-1123 label of at most 63 characters."""
    body = base_pod()
    body["spec"]["hostname"] = hostname
    valid = len(hostname) <= 63 and DNS_LABEL.fullmatch(hostname) is not None
    assert create_pod(body) == (201 if valid else 422)


TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "t", "namespace": "default"},
    "spec": {
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "hostname": "t-0",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePolicy": "File",
                "env": [{"name": "A", "value": "1"}],
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}},
            }
        ],
    },
}
FIELD_EDITS = st.sampled_from(
    [
        ("hostname", ["t-1", "T-1", "t" * 64, "t.1"]),
        ("restartPolicy", ["Never", "Sometimes"]),
        ("containers/0/name", ["side", "Side", ""]),
        ("containers/0/env/0/name", ["B", "1B"]),
        ("containers/0/ports/0/containerPort", [81, 0, 70000]),
        ("containers/0/resources/requests/cpu", ["2", "3", "-1"]),
        ("containers/0/image", ["busybox:2", ""]),
    ]
)


def _edit(spec: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    edited = copy.deepcopy(spec)
    *parents, last = path.split("/")
    target: Any = edited
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    target[last] = value
    return edited


@settings(max_examples=200, deadline=None)
@given(edits=st.lists(FIELD_EDITS.flatmap(lambda f: st.tuples(st.just(f[0]), st.sampled_from(f[1]))), max_size=3))
def test_remembered_templates_change_no_verdict(edits: list[tuple[str, Any]]) -> None:
    """A pod checked against the cache of specs found valid gets the same causes as with every cache emptied."""
    obj = copy.deepcopy(TEMPLATE)
    for path, value in edits:
        obj["spec"] = _edit(obj["spec"], path, value)
    assert builtin.validate(("", "pods"), TEMPLATE, None, builtin=True) == []
    warm = builtin.validate(("", "pods"), obj, None, builtin=True)
    pod._valid_templates.clear()
    for format_ in (names.DNS1123_LABEL, names.DNS1123_SUBDOMAIN, names.ENV_VAR_NAME, names.LABEL_VALUE):
        format_.valid.clear()
    cold = builtin.validate(("", "pods"), obj, None, builtin=True)
    assert warm == cold
