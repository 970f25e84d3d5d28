"""Discovery lists CRD groups as kube-apiserver does, so kubectl resolves a name two groups serve the same way."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_sim.http.discovery import aggregated_discovery, api_group_list
from grove_sim.registry.resources import Registry


def _crd(group: str, plural: str, kind: str) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"plural": plural, "singular": plural[:-1], "kind": kind},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


CRDS = [
    _crd("grove.io", "podcliques", "PodClique"),
    _crd("grove.dynamo.ai", "podcliques", "PodClique"),
    _crd("scheduler.grove.io", "podgangs", "PodGang"),
    _crd("apps.example.com", "widgets", "Widget"),
]


@given(st.permutations(CRDS))
def test_crd_groups_follow_builtins_sorted_by_name_whatever_the_creation_order(crds: list[dict[str, Any]]) -> None:
    """Every CRD group has the same priority in kube-apiserver (1000), so ties go by name: `grove.dynamo.ai` is
    listed before `grove.io`, and kubectl's `get podclique` picks it, whichever CRD was created first."""
    registry = Registry()
    builtin = list(registry.group_versions())
    for crd in crds:
        registry.register_crd(crd)
    groups = list(registry.group_versions())
    assert groups[: len(builtin)] == builtin
    assert groups[len(builtin) :] == ["apps.example.com", "grove.dynamo.ai", "grove.io", "scheduler.grove.io"]
    legacy = [g["name"] for g in api_group_list(registry)["groups"]]
    aggregated = [i["metadata"]["name"] for i in aggregated_discovery(registry, core=False, api_version="v2")["items"]]
    assert legacy == aggregated == [g for g in groups if g]
