"""startsAfter resolution (§3.5): AnyOrder, InOrder, Explicit, base/scaled gangs, and the grove-initc container."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grove_api import PodCliqueSet
from grove_operator.desired import pod

BuildHierarchy = Callable[[PodCliqueSet], Any]
LoadSample = Callable[[str], PodCliqueSet]
"""The `hierarchy` fixture: builds every object the controllers would create for a PodCliqueSet."""

SIMPLE2 = "simple/simple2-explicit-startup-order.yaml"
SIMPLE3 = "simple/simple3-explicit-startup-order.yaml"


def _initc_args(pods: list[dict[str, Any]], pclq: str) -> list[str] | None:
    mine = [p for p in pods if p["metadata"]["generateName"] == f"{pclq}-"]
    inits = [c for c in mine[0]["spec"].get("initContainers", []) if c["name"] == "grove-initc"]
    return inits[0]["args"] if inits else None


def test_simple3_worked_example(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """The simple3 worked example of §3.5, on PodClique `startsAfter` and on the init-container args."""
    built = hierarchy(sample(SIMPLE3))
    base_bc = [f"simple3-0-sga-{j}-{c}" for j in (0, 1) for c in ("pcb", "pcc")]
    expected_starts = {
        "simple3-0-pca": None,
        "simple3-0-sga-0-pcb": ["simple3-0-pca"],
        "simple3-0-sga-1-pcc": ["simple3-0-pca"],
        "simple3-0-sga-2-pcb": None,
        "simple3-0-sga-2-pcc": None,
        "simple3-0-sga-0-pcd": sorted(base_bc),
        "simple3-0-sga-1-pcd": sorted(base_bc),
        "simple3-0-sga-2-pcd": ["simple3-0-sga-2-pcb", "simple3-0-sga-2-pcc"],
        "simple3-0-pce": sorted(base_bc),
    }
    for name, parents in expected_starts.items():
        starts = built.pclqs[name].spec.starts_after
        assert (sorted(starts) if starts else None) == parents, name
        args = _initc_args(built.pods, name)
        if parents is None:
            assert args is None, name
        else:
            minimum = 3 if parents == ["simple3-0-pca"] else 2
            assert sorted(args or []) == [f"--podcliques={p}:{minimum}" for p in parents], name


def test_simple2_explicit(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """simple2: pcb/pcc wait for pca:3, pcd waits for pcb:2 and pcc:2 (§4)."""
    built = hierarchy(sample(SIMPLE2))
    assert _initc_args(built.pods, "simple2-0-pca") is None
    assert _initc_args(built.pods, "simple2-0-pcb") == ["--podcliques=simple2-0-pca:3"]
    assert _initc_args(built.pods, "simple2-0-pcc") == ["--podcliques=simple2-0-pca:3"]
    assert _initc_args(built.pods, "simple2-0-pcd") == ["--podcliques=simple2-0-pcb:2", "--podcliques=simple2-0-pcc:2"]


def test_initc_container_and_volumes(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """grove-initc is the last init container, gets no Grove env, and mounts the token and pod-info volumes."""
    pcs = sample(SIMPLE2)
    pcs.spec.template.cliques[1].spec.pod_spec["initContainers"] = [{"name": "user-init", "image": "busybox"}]
    built = hierarchy(pcs)
    pcb = next(p for p in built.pods if p["metadata"]["generateName"] == "simple2-0-pcb-")
    inits = pcb["spec"]["initContainers"]
    assert [c["name"] for c in inits] == ["user-init", "grove-initc"]
    assert inits[1]["image"] == "grove-initc:test"
    assert "env" not in inits[1]
    assert inits[1]["volumeMounts"] == [
        {"name": "sa-token-secret-vol", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True},
        {"name": "pod-info-vol", "mountPath": "/var/grove/pod-info", "readOnly": True},
    ]
    volumes = {v["name"]: v for v in pcb["spec"]["volumes"]}
    assert volumes["sa-token-secret-vol"]["secret"] == {"secretName": "simple2-ic-sat", "defaultMode": 0o644}
    items = volumes["pod-info-vol"]["downwardAPI"]["items"]
    assert [(i["path"], i["fieldRef"]["fieldPath"]) for i in items] == [
        ("namespace", "metadata.namespace"),
        ("podgangname", "metadata.labels['grove.io/podgang']"),
    ]
    assert pod.startup_parents(pcs, built.pclqs["simple2-0-pcd"]) == [("simple2-0-pcb", 2), ("simple2-0-pcc", 2)]


def test_in_order_uses_previous_clique_only(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """InOrder: each clique waits for the one before it (expanded to base-gang instances), ignoring startsAfter."""
    pcs = sample(SIMPLE3)
    pcs.spec.template.clique_startup_type = "CliqueStartupTypeInOrder"
    built = hierarchy(pcs)
    assert built.pclqs["simple3-0-pca"].spec.starts_after is None
    assert built.pclqs["simple3-0-sga-0-pcb"].spec.starts_after == ["simple3-0-pca"]
    assert built.pclqs["simple3-0-sga-1-pcc"].spec.starts_after == ["simple3-0-sga-0-pcb", "simple3-0-sga-1-pcb"]
    assert built.pclqs["simple3-0-sga-2-pcc"].spec.starts_after == ["simple3-0-sga-2-pcb"]
    assert built.pclqs["simple3-0-sga-2-pcb"].spec.starts_after is None
    assert built.pclqs["simple3-0-pce"].spec.starts_after == ["simple3-0-sga-0-pcd", "simple3-0-sga-1-pcd"]


def test_any_order_has_no_parents(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """AnyOrder ignores template startsAfter: no PodClique has parents and no pod an init container."""
    pcs = sample(SIMPLE3)
    pcs.spec.template.clique_startup_type = "CliqueStartupTypeAnyOrder"
    built = hierarchy(pcs)
    assert all(p.spec.starts_after is None for p in built.pclqs.values())
    assert all("initContainers" not in p["spec"] for p in built.pods)
