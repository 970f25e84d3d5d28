"""Scale-in victim order and lowest-free indices (§2.1, §3.4), RBAC objects (§2.1) and template hashes (§3.8)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_api import PodCliqueSet
from grove_api import labels as gl
from grove_operator import hashing
from grove_operator.desired import rbac, scalein

LoadSample = Callable[[str], PodCliqueSet]

SIMPLE1 = "simple/simple1.yaml"


def _pod(name: str, **kw: Any) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if kw.get("ready") else "False"}]
    pod: dict[str, Any] = {
        "metadata": {
            "name": name,
            "creationTimestamp": kw.get("created", "2026-11-22T08:00:00Z"),
            "labels": {gl.LABEL_POD_TEMPLATE_HASH: kw.get("hash", "new")},
        },
        "spec": {"hostname": f"pclq-{kw.get('index', 0)}"},
        "status": {"phase": kw.get("phase", "Running"), "conditions": conditions},
    }
    if kw.get("node", True):
        pod["spec"]["nodeName"] = "n1"
    if kw.get("terminating"):
        pod["metadata"]["deletionTimestamp"] = "2026-11-22T09:00:00Z"
    return pod


def test_scale_in_victim_order() -> None:
    """Unassigned < Pending < Unknown < Running, then not-ready < ready, old hash < new, newest first."""
    pods = [
        _pod("running-ready-new-old", ready=True, created="2026-11-22T08:00:00Z"),
        _pod("running-ready-new-young", ready=True, created="2026-11-22T08:05:00Z"),
        _pod("running-ready-oldhash", ready=True, hash="old"),
        _pod("running-notready", ready=False),
        _pod("unknown", phase="Unknown"),
        _pod("pending", phase="Pending"),
        _pod("unassigned", phase="Pending", node=False),
        _pod("terminating", terminating=True, node=False),
    ]
    assert scalein.scale_in_victims(pods, 10, current_hash="new") == [
        "unassigned",
        "pending",
        "unknown",
        "running-notready",
        "running-ready-oldhash",
        "running-ready-new-young",
        "running-ready-new-old",
    ]
    assert scalein.scale_in_victims(pods, 2, current_hash="new") == ["unassigned", "pending"]


def test_lowest_free_indices_fill_holes() -> None:
    """Holes are filled first; terminating and finished pods free their index."""
    pods = [
        _pod("a", index=0),
        _pod("b", index=2),
        _pod("c", index=1, terminating=True),
        _pod("d", index=4, phase="Failed"),
    ]
    assert scalein.lowest_free_indices(pods, 3) == [1, 3, 4]


@given(used=st.sets(st.integers(0, 40), max_size=20), count=st.integers(0, 20))
def test_lowest_free_indices_property(used: set[int], count: int) -> None:
    """New indices are unique, unused, and together with the used ones dense from the lowest free index."""
    pods = [_pod(f"p{i}", index=i) for i in used]
    free = scalein.lowest_free_indices(pods, count)
    assert len(free) == count == len(set(free))
    assert not set(free) & used
    assert free == sorted(free)
    all_indices = used | set(free)
    if free:
        assert set(range(free[-1] + 1)) <= all_indices


def test_rbac_objects(sample: LoadSample) -> None:
    """ServiceAccount, Role, RoleBinding and token Secret have upstream names, rules and labels."""
    pcs = sample(SIMPLE1)
    sa, role, binding, secret = (
        rbac.build_service_account(pcs),
        rbac.build_role(pcs),
        rbac.build_role_binding(pcs),
        rbac.build_sa_token_secret(pcs),
    )
    assert sa["metadata"]["name"] == "simple1"
    assert sa["automountServiceAccountToken"] is True
    assert role["metadata"]["name"] == "grove.io:pcs:simple1"
    assert role["metadata"]["labels"][gl.LABEL_NAME] == "grove.io-pcs-simple1"
    assert role["metadata"]["labels"][gl.LABEL_COMPONENT] == "pod-role"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["get", "list", "watch"]}
    ]
    assert binding["roleRef"]["name"] == "grove.io:pcs:simple1"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "simple1", "namespace": "default"}]
    assert secret["metadata"]["name"] == "simple1-ic-sat"
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "simple1"}
    for obj in (sa, role, binding, secret):
        assert obj["metadata"]["ownerReferences"][0]["uid"] == "uid-simple1"


def test_fnv64a_known_vectors() -> None:
    """FNV-1a 64 matches the reference vectors."""
    assert hashing.fnv64a(b"") == 0xCBF29CE484222325
    assert hashing.fnv64a(b"a") == 0xAF63DC4C8601EC8C
    assert hashing.fnv64a(b"foobar") == 0x85944171F73967E8


def test_hashes_follow_pod_templates_only(sample: LoadSample) -> None:
    """Hashes change with pod templates and priorityClassName, not with replicas or minAvailable."""
    pcs = sample(SIMPLE1)
    before, clique_before = (
        hashing.generation_hash(pcs.spec.template),
        hashing.pod_template_hash(pcs.spec.template.cliques[0]),
    )
    assert before == hashing.generation_hash(pcs.model_copy(deep=True).spec.template)
    scaled = pcs.model_copy(deep=True)
    scaled.spec.template.cliques[0].spec.replicas = 9
    scaled.spec.template.cliques[0].spec.min_available = 1
    assert hashing.generation_hash(scaled.spec.template) == before
    changed = pcs.model_copy(deep=True)
    changed.spec.template.cliques[0].spec.pod_spec["containers"][0]["image"] = "nginx:1.27"
    assert hashing.generation_hash(changed.spec.template) != before
    assert hashing.pod_template_hash(changed.spec.template.cliques[0]) != clique_before
    assert hashing.pod_template_hash(changed.spec.template.cliques[1]) == hashing.pod_template_hash(
        pcs.spec.template.cliques[1]
    )
    priority = pcs.model_copy(deep=True)
    priority.spec.template.priority_class_name = "high"
    assert hashing.generation_hash(priority.spec.template) != before
    assert set(before) <= set("bcdfghjklmnpqrstvwxz2456789")
