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
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

from grove_sim.machinery.errors import ApiError
from grove_sim.registry.core import Core
from grove_sim.registry.resources import Registry
from grove_sim.storage.store import Store
from grove_sim.testing import SimCluster
from grove_sim.validation import builtin
from grove_sim.validation.meta import SUBDOMAIN_NAMES, validate_object_meta
from grove_sim.validation.pod import validate_pod
from grove_sim.validation.pod_update import validate_pod_update

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
    "metadata": {"name": "t"},
    "spec": {
        "hostname": "t-0",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "env": [{"name": "A", "value": "1"}],
                "ports": [{"containerPort": 80}],
                "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}},
            }
        ],
    },
}
FIELD_EDITS = st.sampled_from(
    [
        ("hostname", ["t-1", "T-1", "t" * 64, "t.1"]),
        ("nodeName", ["node-0", "Node_0"]),
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


def _admit(core: Core, body: dict[str, Any], plural: str = "pods") -> tuple[int, Any]:
    """The answer to a (dry-run) create: 201 and the stored spec, or the error's code and causes."""
    info = core.registry.get("", "v1", plural)
    assert info is not None
    try:
        return 201, core.create(info, "default", body, dry_run=True).get("spec")
    except ApiError as exc:
        return exc.code, (exc.details or {}).get("causes")


def _core() -> Core:
    core = Core(Store(), Registry())
    namespaces = core.registry.get("", "v1", "namespaces")
    assert namespaces is not None
    core.create(namespaces, "", {"metadata": {"name": "default"}})
    return core


WARM = _core()


@settings(max_examples=200, deadline=None)
@given(edits=st.lists(FIELD_EDITS.flatmap(lambda f: st.tuples(st.just(f[0]), st.sampled_from(f[1]))), max_size=3))
def test_admitted_templates_change_no_answer(edits: list[tuple[str, Any]]) -> None:
    """A pod created after its template was admitted gets the same answer and stored spec as in a fresh registry."""
    body = copy.deepcopy(TEMPLATE)
    for path, value in edits:
        body["spec"] = _edit(body["spec"], path, value)
    assert _admit(WARM, copy.deepcopy(TEMPLATE))[0] == 201
    assert _admit(WARM, copy.deepcopy(body)) == _admit(_core(), copy.deepcopy(body))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
ANY_PATHS = [
    "metadata",
    "metadata/labels",
    "metadata/annotations",
    "metadata/ownerReferences",
    "metadata/finalizers",
    "metadata/generateName",
    "spec",
    "spec/containers",
    "spec/containers/0",
    "spec/containers/0/env",
    "spec/containers/0/env/0",
    "spec/containers/0/ports",
    "spec/containers/0/ports/0/containerPort",
    "spec/containers/0/resources",
    "spec/containers/0/resources/requests",
    "spec/containers/0/resources/requests/cpu",
    "spec/containers/0/volumeMounts",
    "spec/volumes",
    "spec/tolerations",
    "spec/schedulingGates",
    "spec/nodeSelector",
    "spec/hostname",
    "spec/initContainers",
    "spec/topologySpreadConstraints",
]
KIND_BODIES: dict[str, dict[str, Any]] = {
    "services": {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}},
    "configmaps": {"metadata": {"name": "c"}, "data": {"a": "b"}},
    "secrets": {"metadata": {"name": "s"}, "data": {"a": "Yg=="}},
    "serviceaccounts": {"metadata": {"name": "sa"}},
    "events": {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}},
}


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(ANY_PATHS), value=json_values)
@example(path="spec/containers/0/resources/requests", value={"cpu": float("inf")})
def test_no_pod_body_crashes_the_registry(path: str, value: Any) -> None:
    """Whatever JSON sits anywhere in a pod, the answer is the pod or a 400/422 Status, never a crash."""
    body = copy.deepcopy(TEMPLATE)
    *parents, last = path.split("/")
    target: Any = body
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    target[int(last) if last.isdigit() else last] = value
    code, _answer = _admit(WARM, body)
    assert code in (201, 400, 422)


@settings(max_examples=200, deadline=None)
@given(
    plural=st.sampled_from(sorted(KIND_BODIES)),
    key=st.sampled_from(["spec", "data", "metadata", "type"]),
    value=json_values,
)
def test_no_body_of_other_kinds_crashes_the_registry(plural: str, key: str, value: Any) -> None:
    """The same for the other built-in kinds: a wrong JSON type anywhere is a Status, never a crash."""
    body = {**copy.deepcopy(KIND_BODIES[plural]), key: value}
    assert _admit(WARM, body, plural)[0] in (201, 400, 422)


@settings(max_examples=200, deadline=None)
@given(path=st.sampled_from(ANY_PATHS), value=json_values)
def test_no_pod_update_crashes_the_registry(path: str, value: Any) -> None:
    """A merge patch putting any JSON anywhere in a stored pod is answered, never a crash."""
    pods = WARM.registry.get("", "v1", "pods")
    assert pods is not None
    name = "patched"
    if WARM.store.get(pods.key, "default", name) is None:
        WARM.create(pods, "default", {**copy.deepcopy(TEMPLATE), "metadata": {"name": name}})
    patch: dict[str, Any] = {}
    target = patch
    parts = [p for p in path.split("/") if not p.isdigit()]
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value
    try:
        code = WARM.patch(pods, "default", name, "application/merge-patch+json", patch, dry_run=True)[1]
    except ApiError as exc:
        code = exc.code
    assert code in (200, 400, 422)


UPDATE_EDITS = st.sampled_from(
    [
        ("spec/hostname", ["t-1", "T-1"]),
        (
            "spec/schedulingGates",
            [[], [{"name": "example.com/a"}], [{"name": "example.com/b"}], [{"name": "bad gate"}]],
        ),
        ("spec/tolerations", [[], [{"key": "k", "operator": "Exists"}], [{"operator": "Equal"}]]),
        ("spec/activeDeadlineSeconds", [10, 0, None]),
        ("spec/containers/0/image", ["busybox:2", "", " busybox"]),
        ("spec/containers/0/env/0/name", ["B", "1B"]),
        ("spec/nodeSelector", [{"pool": "a"}, {"pool": "a", "rack": "r"}, {"pool": "b" * 64}]),
        ("metadata/labels", [{"app": "x"}, {"app": "x" * 64}]),
    ]
)


@settings(max_examples=200, deadline=None)
@given(edits=st.lists(UPDATE_EDITS.flatmap(lambda f: st.tuples(st.just(f[0]), st.sampled_from(f[1]))), max_size=3))
def test_updates_check_what_changed_as_a_full_check_would(edits: list[tuple[str, Any]]) -> None:
    """Checking only the fields an update changed gives the causes that checking the whole new pod gives."""
    old = copy.deepcopy(TEMPLATE)
    old["spec"].update({"schedulingGates": [{"name": "example.com/a"}], "nodeSelector": {"pool": "a"}})
    old["metadata"]["labels"] = {"app": "x"}
    pods = WARM.registry.get("", "v1", "pods")
    assert pods is not None
    stored = WARM.create(pods, "default", old, dry_run=True)
    new = copy.deepcopy(stored)
    for path, value in edits:
        *parents, last = path.split("/")
        target: Any = new
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value
    full = (
        validate_object_meta(new["metadata"], SUBDOMAIN_NAMES, builtin=True)
        + validate_pod(new)
        + validate_pod_update(new, stored)
    )
    assert builtin.validate(("", "pods"), new, stored, builtin=True) == full
