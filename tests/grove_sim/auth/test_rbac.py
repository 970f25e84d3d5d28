"""With ``--authorization-mode RBAC`` grove-sim enforces Roles, ClusterRoles and their bindings as kube-apiserver does:
403s worded as upstream's, ``system:masters`` allowed everything, the default discovery roles, impersonation checked,
and ``kubectl auth can-i`` (access reviews) answering exactly what the server enforces."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

from grove_sim.testing import SimCluster

from .conftest import (
    ADMIN_HEADERS,
    RBAC,
    admin,
    cluster_role_binding,
    group,
    role_binding,
    service_account,
    user,
)

KUBECTL = "/usr/bin/kubectl"
NS = "sched"
SA = "binder"
SA_USER = f"system:serviceaccount:{NS}:{SA}"
READ_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
BIND_PODS = {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}


def kubectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, env=env, timeout=60, check=False)


async def _sa_client(sim: SimCluster) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=sim.service_account_kubeconfig(NS, SA), client_configuration=configuration
    )
    return client.ApiClient(configuration=configuration)


async def _bind(api: client.ApiClient, pod: str) -> int:
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod}, "target": {"kind": "Node", "name": "n1"}}
    try:
        await client.CoreV1Api(api).create_namespaced_pod_binding(pod, NS, body, _preload_content=False)
    except ApiException as exc:
        return int(exc.status)
    return 201


@pytest.mark.kubectl
async def test_a_service_account_without_pods_binding_gets_403_and_can_i_agrees(
    sim: SimCluster, kubectl_env: dict[str, str]
) -> None:
    """The issue's acceptance: the account may read pods but not bind them; its bind is a 403 naming user, verb,
    resource and namespace; ``kubectl auth can-i`` says no; once its Role grants ``pods/binding`` both say yes."""
    api = await _sa_client(sim)
    role = {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "binder"}, "rules": [READ_PODS]}
    pod = {"metadata": {"name": "p"}, "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "i"}]}}
    try:
        async with aiohttp.ClientSession() as session:
            await admin(session, sim, "POST", f"/apis/{RBAC}/v1/namespaces/{NS}/roles", role)
            binding = role_binding("binder", "Role", "binder", [service_account(NS, SA)])
            await admin(session, sim, "POST", f"/apis/{RBAC}/v1/namespaces/{NS}/rolebindings", binding)
            await admin(session, sim, "POST", f"/api/v1/namespaces/{NS}/pods", pod)
        pods = await client.CoreV1Api(api).list_namespaced_pod(NS)
        assert [p.metadata.name for p in pods.items] == ["p"]
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"name": "n1"}}
        with pytest.raises(ApiException) as refused:
            await client.CoreV1Api(api).create_namespaced_pod_binding("p", NS, body)
        assert refused.value.status == 403
        status = json.loads(refused.value.body or b"{}")
        assert status["reason"] == "Forbidden"
        assert status["message"] == (
            f'pods "p" is forbidden: User "{SA_USER}" cannot create resource "pods/binding" in API group "" '
            f'in the namespace "{NS}"'
        )
        assert status["details"] == {"name": "p", "kind": "pods"}
        can_i = ("auth", "can-i", "create", "pods", "--subresource=binding", "-n", NS, f"--as={SA_USER}")
        answer = kubectl(kubectl_env, *can_i)
        assert (answer.returncode, answer.stdout.strip()) == (1, "no"), answer.stderr
        assert kubectl(kubectl_env, "auth", "can-i", "list", "pods", "-n", NS, f"--as={SA_USER}").stdout == "yes\n"
        granted = {**role, "rules": [READ_PODS, BIND_PODS]}
        async with aiohttp.ClientSession() as session:
            await admin(session, sim, "PUT", f"/apis/{RBAC}/v1/namespaces/{NS}/roles/binder", granted)
        answer = kubectl(kubectl_env, *can_i)
        assert (answer.returncode, answer.stdout.strip()) == (0, "yes"), answer.stderr
        assert await _bind(api, "p") == 201
    finally:
        await api.close()


@pytest.mark.kubectl
def test_kubectl_auth_can_i_list_shows_the_rules_in_force(sim: SimCluster, kubectl_env: dict[str, str]) -> None:
    """``kubectl auth can-i --list`` (a SelfSubjectRulesReview) lists the bound rules and the default ones."""
    listed = kubectl(kubectl_env, "auth", "can-i", "--list", "-n", "default", "--as=carol")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert any(line.split()[:1] == ["selfsubjectaccessreviews.authorization.k8s.io"] for line in lines)
    assert any(line.split()[:2] == ["[/api/*]", "[]"] for line in lines)
    assert not any(line.startswith("pods ") for line in lines)


@pytest.mark.kubectl
def test_masters_may_do_everything_and_the_default_policy_exists(kubectl_env: dict[str, str]) -> None:
    """The administrator (``system:masters``) reads the seeded ClusterRoles; a user without bindings is refused
    with kube-apiserver's cluster-scope wording, and an anonymous caller cannot even list namespaces."""
    masters = ("--as=kubernetes-admin", "--as-group=system:masters")
    roles = kubectl(kubectl_env, "get", "clusterroles", "-o", "name", *masters)
    assert roles.returncode == 0, roles.stderr
    for name in ("cluster-admin", "system:discovery", "system:basic-user", "system:public-info-viewer"):
        assert f"clusterrole.rbac.authorization.k8s.io/{name}" in roles.stdout
    refused = kubectl(kubectl_env, "get", "nodes", "--as=dave")
    assert refused.returncode == 1
    assert (
        'Error from server (Forbidden): nodes is forbidden: User "dave" cannot list resource "nodes" in API group "" '
        "at the cluster scope" in refused.stderr
    )
    assert kubectl(kubectl_env, "auth", "can-i", "*", "*", *masters).stdout.strip() == "yes"


async def test_forbidden_wording_for_paths_missing_roles_and_impersonation(sim: SimCluster) -> None:
    """A non-resource path, a binding whose role does not exist (RBAC's reason is appended) and an impersonation
    the caller may not make are refused as kube-apiserver refuses them."""
    async with aiohttp.ClientSession() as session:
        async with session.get(sim.url + "/apis") as anonymous:
            assert anonymous.status == 403
            assert (await anonymous.json())["message"] == 'forbidden: User "system:anonymous" cannot get path "/apis"'
        async with session.get(sim.url + "/version") as public:
            assert public.status == 200
        await admin(
            session, sim, "POST", f"/apis/{RBAC}/v1/clusterrolebindings",
            cluster_role_binding("dangling", "no-such-role", [user("erin")]),
        )  # fmt: skip
        headers = {"Impersonate-User": "erin", **_admin()}
        async with session.get(sim.url + "/api/v1/nodes", headers=headers) as dangling:
            assert (await dangling.json())["message"] == (
                'nodes is forbidden: User "erin" cannot list resource "nodes" in API group "" at the cluster scope: '
                f'RBAC: clusterrole.{RBAC} "no-such-role" not found'
            )
        token = _token(sim.service_account_kubeconfig("imp", "nobody"))
        async with session.get(
            sim.url + "/version", headers={"Authorization": f"Bearer {token}", "Impersonate-User": "frank"}
        ) as impersonating:
            assert impersonating.status == 403
            assert (await impersonating.json())["message"] == (
                'users "frank" is forbidden: User "system:serviceaccount:imp:nobody" cannot impersonate resource '
                '"users" in API group "" at the cluster scope'
            )


def _admin() -> dict[str, str]:
    return dict(ADMIN_HEADERS)


def _token(kubeconfig: str) -> str:
    with open(kubeconfig, encoding="utf-8") as handle:
        return str(yaml.safe_load(handle)["users"][0]["user"]["token"])


# ------------------------------------------------------------------------------------------ the property: can-i == 403

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
RESOURCES = ("configmaps", "pods", "pods/status", "*", "*/status", "nodes", "namespaces")
NAMESPACES = ("pa", "pb")

rules = st.lists(
    st.fixed_dictionaries(
        {
            "apiGroups": st.sampled_from([[""], [""], ["*"], ["apps"]]),
            "resources": st.lists(st.sampled_from(RESOURCES), min_size=1, max_size=3, unique=True),
            "verbs": st.lists(st.sampled_from((*VERBS, "*", "*")), min_size=1, max_size=4, unique=True),
        },
        optional={"resourceNames": st.just(["x"])},
    ),
    max_size=3,
)
requests = st.lists(
    st.tuples(
        st.sampled_from(VERBS),
        st.sampled_from(("configmaps", "pods", "pods/status", "nodes", "namespaces")),
        st.sampled_from(("pa", "pa", "pb", "")),
        st.sampled_from(("x", "y")),
    ),
    min_size=1,
    max_size=8,
)


def _path(verb: str, resource: str, namespace: str, name: str) -> tuple[str, str]:
    """(method, path) of a request with this verb on this resource (writes are dry runs)."""
    plural, _, sub = resource.partition("/")
    cluster_scoped = plural in ("nodes", "namespaces")
    base = "/api/v1" + ("" if cluster_scoped or not namespace else f"/namespaces/{namespace}") + f"/{plural}"
    if plural == "namespaces" and verb not in ("list", "watch", "create"):
        name = namespace or name
    method = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH"}
    named = verb not in ("list", "watch", "create")
    if not named and sub:
        named = True
    path = base + (f"/{name}" if named else "") + (f"/{sub}" if sub and named else "")
    if verb == "watch":
        path += "?watch=true&timeoutSeconds=1"
    elif verb in ("create", "update", "patch", "delete"):
        path += "?dryRun=All"
    return method.get(verb, "DELETE"), path


def _attributes(verb: str, resource: str, namespace: str, name: str) -> dict[str, Any]:
    """What a client's SelfSubjectAccessReview asks for the request ``_path`` builds."""
    plural, _, sub = resource.partition("/")
    if sub and verb in ("list", "watch", "create"):
        verb = {"list": "get", "watch": "get", "create": "create"}[verb]
    cluster_scoped = plural in ("nodes", "namespaces")
    attrs: dict[str, Any] = {"verb": verb, "resource": plural, "group": ""}
    if sub:
        attrs["subresource"] = sub
    if plural == "namespaces" and verb not in ("list", "watch", "create"):
        attrs["namespace"] = attrs["name"] = namespace or name
    elif not cluster_scoped and namespace:
        attrs["namespace"] = namespace
    if verb not in ("list", "watch", "create") or sub:
        attrs.setdefault("name", name)
    return attrs


@dataclass(frozen=True)
class Scenario:
    """Roles, who they are bound to, and the requests to make."""

    cluster_rules: list[dict[str, Any]]
    role_rules: list[dict[str, Any]]
    bind_cluster: str | None
    bind_role: str | None
    role_kind: str
    asked: list[tuple[str, str, str, str]]


scenarios = st.builds(
    Scenario,
    cluster_rules=rules,
    role_rules=rules,
    bind_cluster=st.sampled_from(["user", "group", "sa", None]),
    bind_role=st.sampled_from(["user", "group", "sa", "sa-implicit", None]),
    role_kind=st.sampled_from(["Role", "ClusterRole"]),
    asked=requests,
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
def test_can_i_answers_what_the_server_enforces(sim: SimCluster, scenario: Scenario) -> None:
    """For random roles, bindings and requests, a SelfSubjectAccessReview's answer equals whether the request
    itself is refused with a 403 (every write a dry run, so the cluster does not change)."""
    asyncio.run(_check(sim, scenario))


async def _check(sim: SimCluster, scenario: Scenario) -> None:
    cluster_rules, role_rules, role_kind = scenario.cluster_rules, scenario.role_rules, scenario.role_kind
    bind_cluster, bind_role, asked = scenario.bind_cluster, scenario.bind_role, scenario.asked
    tag = uuid.uuid4().hex[:8]
    username, group_name, sa_name = f"u-{tag}", f"g-{tag}", f"sa-{tag}"
    subjects = {
        "user": user(username),
        "group": group(group_name),
        "sa": service_account("pa", sa_name),
        "sa-implicit": {"kind": "ServiceAccount", "name": sa_name},
    }
    as_sa = bind_cluster == "sa" or (bind_role or "").startswith("sa")
    headers = {**_admin(), "Impersonate-User": f"system:serviceaccount:pa:{sa_name}" if as_sa else username}
    if not as_sa:
        headers["Impersonate-Group"] = group_name
    async with aiohttp.ClientSession() as session:
        for namespace in NAMESPACES:
            async with session.post(
                sim.url + "/api/v1/namespaces", json={"metadata": {"name": namespace}}, headers=_admin()
            ):
                pass
        role = {"apiVersion": f"{RBAC}/v1", "metadata": {"name": f"r-{tag}"}, "rules": cluster_rules}
        await admin(session, sim, "POST", f"/apis/{RBAC}/v1/clusterroles", {**role, "kind": "ClusterRole"})
        if role_kind == "Role":
            namespaced = {**role, "kind": "Role", "metadata": {"name": f"r-{tag}"}, "rules": role_rules}
            await admin(session, sim, "POST", f"/apis/{RBAC}/v1/namespaces/pa/roles", namespaced)
        if bind_cluster is not None:
            crb = cluster_role_binding(f"crb-{tag}", f"r-{tag}", [subjects[bind_cluster]])
            await admin(session, sim, "POST", f"/apis/{RBAC}/v1/clusterrolebindings", crb)
        if bind_role is not None:
            rb = role_binding(f"rb-{tag}", role_kind, f"r-{tag}", [subjects[bind_role]])
            await admin(session, sim, "POST", f"/apis/{RBAC}/v1/namespaces/pa/rolebindings", rb)
        for verb, resource, namespace, name in asked:
            method, path = _path(verb, resource, namespace, name)
            body = {"metadata": {"name": name}} if method in ("POST", "PUT") else None
            kind = "application/merge-patch+json" if method == "PATCH" else "application/json"
            async with session.request(
                method, sim.url + path, data=json.dumps(body or {}), headers={**headers, "Content-Type": kind}
            ) as response:
                await response.read()
                enforced = response.status != 403
            review = {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": _attributes(verb, resource, namespace, name)},
            }
            url = sim.url + "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
            async with session.post(url, json=review, headers=headers) as answered:
                assert answered.status == 201
                allowed = (await answered.json())["status"]["allowed"]
            event(f"allowed={allowed}")
            assert allowed == enforced, (verb, resource, namespace, name, method, path)


async def test_nobody_grants_permissions_they_do_not_hold(sim: SimCluster) -> None:
    """Escalation prevention: a user who may write Roles and RoleBindings may grant what she holds, not more (403
    listing what is missing, as kube-apiserver words it), unless she may ``escalate``/``bind``."""
    ns, rbac = "esc", f"/apis/{RBAC}/v1/namespaces/esc"
    writer = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": "writer"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
            {"apiGroups": [RBAC], "resources": ["roles", "rolebindings"], "verbs": ["create", "update"]},
        ],
    }
    as_gina = {**_admin(), "Impersonate-User": "gina"}

    def role(name: str, verbs: list[str], resources: tuple[str, ...] = ("pods", "pods/log")) -> dict[str, Any]:
        rules = [{"apiGroups": [""], "resources": list(resources), "verbs": verbs}]
        return {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": name}, "rules": rules}

    async with aiohttp.ClientSession() as session:
        await admin(session, sim, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        await admin(session, sim, "POST", f"{rbac}/roles", writer)
        await admin(session, sim, "POST", f"{rbac}/rolebindings", role_binding("w", "Role", "writer", [user("gina")]))
        async with session.post(sim.url + f"{rbac}/roles", json=role("same", ["get"], ("pods",)), headers=as_gina) as r:
            assert r.status == 201, await r.text()
        async with session.post(sim.url + f"{rbac}/roles", json=role("more", ["get", "delete"]), headers=as_gina) as r:
            body = await r.json()
        assert (r.status, body["reason"]) == (403, "Forbidden")
        assert body["message"] == (
            'roles.rbac.authorization.k8s.io "more" is forbidden: user "gina" (groups=["system:authenticated"]) is '
            "attempting to grant RBAC permissions not currently held:\n"
            '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}\n'
            '{APIGroups:[""], Resources:["pods/log"], Verbs:["get" "delete"]}'
        )
        grant_admin = role_binding("to-admin", "ClusterRole", "cluster-admin", [user("gina")])
        async with session.post(sim.url + f"{rbac}/rolebindings", json=grant_admin, headers=as_gina) as r:
            assert r.status == 403
            assert "is attempting to grant RBAC permissions not currently held" in (await r.json())["message"]
        grant_same = role_binding("to-same", "Role", "same", [user("hank")])
        async with session.post(sim.url + f"{rbac}/rolebindings", json=grant_same, headers=as_gina) as r:
            assert r.status == 201, await r.text()
        escalator = {**writer, "metadata": {"name": "escalator"}, "rules": [
            {"apiGroups": [RBAC], "resources": ["roles"], "verbs": ["escalate"]},
        ]}  # fmt: skip
        await admin(session, sim, "POST", f"{rbac}/roles", escalator)
        await admin(
            session, sim, "POST", f"{rbac}/rolebindings", role_binding("e", "Role", "escalator", [user("gina")])
        )
        async with session.post(sim.url + f"{rbac}/roles", json=role("more", ["get", "delete"]), headers=as_gina) as r:
            assert r.status == 201, await r.text()


async def test_subject_access_reviews_ask_about_another_user(sim: SimCluster) -> None:
    """SubjectAccessReview (cluster) and LocalSubjectAccessReview (namespaced) answer for the user, groups and
    namespace the spec names, with RBAC's reason; a spec naming nobody is a 422 and a namespace mismatch a 400."""
    reviews = "/apis/authorization.k8s.io/v1"
    reader = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "sar-reader"},
        "rules": [READ_PODS],
    }
    async with aiohttp.ClientSession() as session:
        await admin(session, sim, "POST", f"/apis/{RBAC}/v1/clusterroles", reader)
        binding = role_binding("sar-readers", "ClusterRole", "sar-reader", [group("readers")])
        await admin(session, sim, "POST", "/api/v1/namespaces", {"metadata": {"name": "sar"}})
        await admin(session, sim, "POST", f"/apis/{RBAC}/v1/namespaces/sar/rolebindings", binding)
        attributes = {"namespace": "sar", "verb": "list", "resource": "pods"}
        spec = {"user": "ivy", "groups": ["readers"], "resourceAttributes": attributes}
        answer = await admin(session, sim, "POST", f"{reviews}/subjectaccessreviews", {"spec": spec})
        assert answer["status"] == {
            "allowed": True,
            "reason": 'RBAC: allowed by RoleBinding "sar-readers/sar" of ClusterRole "sar-reader" to Group "readers"',
        }
        other = {"spec": {**spec, "resourceAttributes": {**attributes, "namespace": "default"}}}
        assert (await admin(session, sim, "POST", f"{reviews}/subjectaccessreviews", other))["status"] == {
            "allowed": False
        }
        local = {
            "spec": {"user": "ivy", "groups": ["readers"], "resourceAttributes": {"verb": "get", "resource": "pods"}}
        }
        path = f"{reviews}/namespaces/sar/localsubjectaccessreviews"
        assert (await admin(session, sim, "POST", path, local))["status"]["allowed"] is True
        for body, code in (
            ({"spec": {"resourceAttributes": attributes}}, 422),
            ({"spec": {"user": "ivy", "resourceAttributes": {**attributes, "namespace": "default"}}}, 400),
        ):
            url = sim.url + (f"{reviews}/subjectaccessreviews" if code == 422 else path)
            async with session.post(url, json=body, headers=_admin()) as response:
                assert response.status == code, await response.text()
