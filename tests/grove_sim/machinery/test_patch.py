"""JSON merge patch, JSON patch and strategic merge patch: algebraic laws and upstream-behaviour tables."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_sim.machinery.patch import (
    PatchError,
    PatchTestFailed,
    copy_json,
    json_merge_patch,
    json_patch,
)
from grove_sim.machinery.strategic_patch import strategic_merge_patch

scalars = st.one_of(st.booleans(), st.integers(-5, 5), st.text("abc", max_size=3))
keys = st.sampled_from(["a", "b", "c", "d/e", "f~g"])
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=10,
)
documents = st.dictionaries(keys, json_values, max_size=4)


def merge_diff(old: Any, new: Any) -> Any:
    """The RFC 7386 patch that turns ``old`` into ``new`` (both objects)."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return new
    diff: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        if key not in old:
            diff[key] = value
        elif old[key] != value or type(old[key]) is not type(value):
            diff[key] = merge_diff(old[key], value) if isinstance(old[key], dict) and isinstance(value, dict) else value
    return diff


def pointer(*tokens: str) -> str:
    """Escape tokens into a JSON pointer."""
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


# ---------------------------------------------------------------------------------------------------------------------
# JSON merge patch


@given(documents, documents)
def test_merge_patch_applies_its_diff(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Applying the merge diff of two documents turns the first into the second."""
    assert json_merge_patch(old, merge_diff(old, new)) == new


@given(documents, documents)
def test_merge_patch_is_idempotent_and_pure(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    """A merge patch applied twice equals it applied once, and neither input is mutated."""
    doc_before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    once = json_merge_patch(doc, patch)
    assert json_merge_patch(once, patch) == once
    assert doc == doc_before
    assert patch == patch_before


@given(documents, documents)
def test_patch_results_share_nothing_with_inputs(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    """Mutating any patch result never reaches back into the target or the patch."""
    doc_before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    results = [
        json_merge_patch(doc, patch),
        strategic_merge_patch(doc, patch, "Pod"),
        json_patch(doc, [{"op": "add", "path": "/new", "value": patch}]),
    ]
    for result in results:
        scramble(result)
    assert doc == doc_before
    assert patch == patch_before


@given(documents, documents, st.sampled_from(["Pod", "Widget"]))
def test_copy_on_write_patches_equal_copying_ones(doc: dict[str, Any], patch: dict[str, Any], kind: str) -> None:
    """``copy_target=False`` gives the same document, never mutates the target, and shares nothing with the patch."""
    doc_before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    merged = json_merge_patch(doc, patch, copy_target=False)
    strategic = strategic_merge_patch(doc, patch, kind, copy_target=False)
    assert merged == json_merge_patch(doc, patch)
    assert strategic == strategic_merge_patch(doc, patch, kind)
    assert doc == doc_before
    scramble(merged)
    scramble(strategic)
    assert patch == patch_before


def test_copy_on_write_patch_shares_untouched_subtrees() -> None:
    """A status patch rebuilds only the containers on the patched path; spec and metadata stay shared."""
    target = pod(
        spec={"containers": [{"name": "c", "image": "busybox"}]},
        status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    )
    patch = {"status": {"conditions": [{"type": "Probe", "status": "True"}]}}
    result = strategic_merge_patch(target, patch, "Pod", copy_target=False)
    assert result["spec"] is target["spec"]
    assert result["metadata"] is target["metadata"]
    assert result["status"] is not target["status"]
    assert result["status"]["conditions"][0] is target["status"]["conditions"][0]
    assert [c["type"] for c in result["status"]["conditions"]] == ["Ready", "Probe"]
    assert [c["type"] for c in target["status"]["conditions"]] == ["Ready"]
    copied = strategic_merge_patch(target, patch, "Pod")
    assert copied["spec"] is not target["spec"]


def test_copy_json_copies_containers_and_shares_string_instances() -> None:
    """``copy_json`` is a deep copy whose equal short strings (keys and values) are one object each."""
    first = json.loads('{"metadata": {"name": "a", "labels": {"tier": "frontend"}}, "list": [{"x": "True"}]}')
    second = json.loads('{"metadata": {"name": "b", "labels": {"tier": "frontend"}}, "list": [{"x": "True"}]}')
    one, two = copy_json(first), copy_json(second)
    assert one == first
    assert one["metadata"] is not first["metadata"]
    assert one["list"][0] is not first["list"][0]
    key_one = next(k for k in one if k == "metadata")
    key_two = next(k for k in two if k == "metadata")
    assert key_one is key_two
    assert one["metadata"]["labels"]["tier"] is two["metadata"]["labels"]["tier"]
    assert one["list"][0]["x"] is two["list"][0]["x"]
    long_value = "v" * 200
    assert copy_json({"k": long_value})["k"] is long_value


def scramble(value: Any) -> None:
    """Mutate every container inside a JSON value in place."""
    if isinstance(value, dict):
        for child in list(value.values()):
            scramble(child)
        value["scrambled"] = True
    elif isinstance(value, list):
        for child in value:
            scramble(child)
        value.append("scrambled")


@given(documents, keys)
def test_merge_patch_null_deletes(doc: dict[str, Any], key: str) -> None:
    """A null value removes the key and nulls never appear in the result."""
    result = json_merge_patch(doc, {key: None, "z": {"nested": None, "kept": 1}})
    assert key not in result
    assert "nested" not in result["z"]
    assert result["z"]["kept"] == 1


def test_merge_patch_replaces_lists_and_non_objects() -> None:
    """Lists are replaced wholesale and a non-object patch replaces the whole target."""
    assert json_merge_patch({"a": [1, 2]}, {"a": [3]}) == {"a": [3]}
    assert json_merge_patch({"a": 1}, [1]) == [1]
    assert json_merge_patch("x", {"a": None, "b": 1}) == {"b": 1}


# ---------------------------------------------------------------------------------------------------------------------
# JSON patch


@given(documents, st.text("xyz/~", min_size=1, max_size=4), json_values)
def test_json_patch_add_then_remove_is_identity(doc: dict[str, Any], key: str, value: Any) -> None:
    """Adding a new member and removing it again gives back the original document."""
    if key in doc:
        return
    path = pointer(key)
    added = json_patch(doc, [{"op": "add", "path": path, "value": value}])
    assert added[key] == value
    assert json_patch(added, [{"op": "remove", "path": path}]) == doc


@given(st.lists(scalars, max_size=5), scalars, st.data())
def test_json_patch_array_insert_then_remove(items: list[Any], value: Any, data: st.DataObject) -> None:
    """Inserting at any index (or "-") and removing that index restores the array."""
    index = data.draw(st.integers(0, len(items)))
    token = data.draw(st.sampled_from([str(index), "-"])) if index == len(items) else str(index)
    added = json_patch({"l": items}, [{"op": "add", "path": f"/l/{token}", "value": value}])
    assert added["l"][index] == value
    assert json_patch(added, [{"op": "remove", "path": f"/l/{index}"}]) == {"l": items}


def test_json_patch_all_operations() -> None:
    """Every RFC 6902 operation applies in order, with pointer escaping."""
    doc = {"a/b": {"c~d": 1}, "list": [1, 2, 3], "m": {"x": 1}}
    ops = [
        {"op": "test", "path": "/a~1b/c~0d", "value": 1},
        {"op": "replace", "path": "/a~1b/c~0d", "value": 2},
        {"op": "move", "from": "/m/x", "path": "/m/y"},
        {"op": "copy", "from": "/list", "path": "/copy"},
        {"op": "remove", "path": "/list/0"},
        {"op": "add", "path": "/list/-", "value": 4},
    ]
    assert json_patch(doc, ops) == {"a/b": {"c~d": 2}, "list": [2, 3, 4], "m": {"y": 1}, "copy": [1, 2, 3]}
    assert doc["list"] == [1, 2, 3]


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "add", "path": "/no/parent", "value": 1}],
        [{"op": "add", "path": "/l/5", "value": 1}],
        [{"op": "add", "path": "/l/01", "value": 1}],
        [{"op": "move", "from": "/m", "path": "/m/x"}],
        [{"op": "frobnicate", "path": "/m"}],
        [{"op": "add", "path": "/m"}],
        [{"op": "add", "path": "m", "value": 1}],
        {"op": "add"},
    ],
)
def test_json_patch_errors(ops: Any) -> None:
    """Invalid operations or paths raise PatchError and leave nothing half-applied."""
    doc = {"l": [1], "m": {"x": 1}}
    with pytest.raises(PatchError):
        json_patch(doc, ops)
    assert doc == {"l": [1], "m": {"x": 1}}


def test_json_patch_test_failure_keeps_booleans_apart() -> None:
    """A failing test op raises PatchTestFailed, and JSON true never equals 1."""
    with pytest.raises(PatchTestFailed):
        json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": True}])
    with pytest.raises(PatchTestFailed):
        json_patch({"a": [1]}, [{"op": "test", "path": "/a", "value": [2]}])
    assert json_patch({"a": 1.0}, [{"op": "test", "path": "/a", "value": 1}]) == {"a": 1.0}


# ---------------------------------------------------------------------------------------------------------------------
# Strategic merge patch


def pod(**spec_and_status: Any) -> dict[str, Any]:
    """A minimal Pod document."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, **spec_and_status}


CONDITIONS = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]


@pytest.mark.parametrize(
    ("kind", "target", "patch", "expected"),
    [
        pytest.param(
            "Pod",
            pod(status={"conditions": CONDITIONS}),
            {"status": {"conditions": [{"type": "Ready", "status": "True"}], "phase": "Running"}},
            pod(
                status={
                    "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
                    "phase": "Running",
                }
            ),
            id="pod-conditions-by-type",
        ),
        pytest.param(
            "Pod",
            pod(spec={"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}),
            {"spec": {"containers": [{"name": "b", "image": "z"}, {"name": "c", "image": "w"}]}},
            pod(
                spec={
                    "containers": [
                        {"name": "a", "image": "x"},
                        {"name": "b", "image": "z"},
                        {"name": "c", "image": "w"},
                    ]
                }
            ),
            id="containers-by-name",
        ),
        pytest.param(
            "Pod",
            pod(
                spec={"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]}
            ),
            {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "3"}]}]}},
            pod(
                spec={"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}]}]}
            ),
            id="env-by-name",
        ),
        pytest.param(
            "Pod",
            pod(spec={"containers": [{"name": "a"}, {"name": "b"}]}),
            {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}},
            pod(spec={"containers": [{"name": "b"}]}),
            id="list-item-patch-delete",
        ),
        pytest.param(
            "Pod",
            pod(spec={"containers": [{"name": "a"}, {"name": "b"}]}),
            {"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}},
            pod(spec={"containers": [{"name": "c"}]}),
            id="list-patch-replace",
        ),
        pytest.param(
            "Pod",
            pod(spec={"nodeSelector": {"a": "1", "b": "2"}}),
            {"spec": {"nodeSelector": {"$patch": "replace", "c": "3"}}},
            pod(spec={"nodeSelector": {"c": "3"}}),
            id="map-patch-replace",
        ),
        pytest.param(
            "Pod",
            pod(spec={"affinity": {"nodeAffinity": {}}, "x": 1}),
            {"spec": {"affinity": {"$patch": "delete"}}},
            pod(spec={"x": 1}),
            id="map-patch-delete",
        ),
        pytest.param(
            "Pod",
            pod(spec={"tolerations": [{"key": "a"}, {"key": "b"}]}),
            {"spec": {"tolerations": [{"key": "c"}]}},
            pod(spec={"tolerations": [{"key": "c"}]}),
            id="tolerations-replace",
        ),
        pytest.param(
            "Pod",
            pod(spec={"containers": [{"name": "a"}, {"name": "b"}]}),
            {
                "spec": {
                    "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}],
                    "containers": [{"name": "c", "image": "i"}],
                }
            },
            pod(spec={"containers": [{"name": "c", "image": "i"}, {"name": "b"}, {"name": "a"}]}),
            id="set-element-order",
        ),
        pytest.param(
            "Pod",
            pod(spec={"containers": [{"name": "a"}, {"name": "s"}, {"name": "b"}]}),
            {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}},
            pod(spec={"containers": [{"name": "s"}, {"name": "b"}, {"name": "a"}]}),
            id="set-element-order-keeps-server-only",
        ),
        pytest.param(
            "Pod",
            {"metadata": {"finalizers": ["a", "b"]}},
            {"metadata": {"finalizers": ["b", "c"]}},
            {"metadata": {"finalizers": ["a", "b", "c"]}},
            id="finalizers-set-merge",
        ),
        pytest.param(
            "ConfigMap",
            {"metadata": {"finalizers": ["a", "b", "c"]}},
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}},
            {"metadata": {"finalizers": ["a", "c"]}},
            id="delete-from-primitive-list",
        ),
        pytest.param(
            "ConfigMap",
            {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}},
            {"metadata": {"ownerReferences": [{"uid": "2", "controller": True}]}},
            {
                "metadata": {
                    "ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b", "controller": True}]
                }
            },
            id="owner-references-by-uid",
        ),
        pytest.param(
            "Node",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": [{"type": "Hostname"}]}},
            {"status": {"conditions": [{"type": "DiskPressure", "status": "False"}], "addresses": [{"type": "A"}]}},
            {
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}],
                    "addresses": [{"type": "Hostname"}, {"type": "A"}],
                }
            },
            id="node-conditions-and-addresses",
        ),
        pytest.param(
            "Node",
            {"spec": {"taints": [{"key": "a"}]}},
            {"spec": {"taints": [{"key": "b"}]}},
            {"spec": {"taints": [{"key": "b"}]}},
            id="node-taints-replace",
        ),
        pytest.param(
            "Service",
            {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443}]}},
            {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}},
            {"spec": {"ports": [{"port": 80, "name": "http", "targetPort": 8080}, {"port": 443}]}},
            id="service-ports-by-port",
        ),
        pytest.param(
            "Deployment",
            {"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 1}]}]}}}},
            {"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 2}]}]}}}},
            {
                "spec": {
                    "template": {
                        "spec": {"containers": [{"name": "a", "ports": [{"containerPort": 1}, {"containerPort": 2}]}]}
                    }
                }
            },
            id="template-spec-prefix",
        ),
        pytest.param(
            "Pod",
            pod(spec={"volumes": [{"name": "v", "emptyDir": {}}]}),
            {"spec": {"volumes": [{"name": "v", "hostPath": {"path": "/x"}, "$retainKeys": ["name", "hostPath"]}]}},
            pod(spec={"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]}),
            id="retain-keys",
        ),
        pytest.param(
            "Pod",
            pod(metadata={"labels": {"a": "1", "b": "2"}}),
            {"metadata": {"labels": {"a": None}}, "spec": {"containers": [{"name": "a", "image": None}]}},
            {**pod(metadata={"labels": {"b": "2"}}), "spec": {"containers": [{"name": "a"}]}},
            id="null-deletes",
        ),
        pytest.param(
            "PodCliqueSet",
            {"spec": {"cliques": [{"name": "a"}, {"name": "b"}]}},
            {"spec": {"cliques": [{"name": "c"}]}},
            {"spec": {"cliques": [{"name": "c"}]}},
            id="unknown-kind-is-merge-patch",
        ),
    ],
)
def test_strategic_merge_patch_table(
    kind: str, target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Lists merge by their upstream merge keys and directives behave as upstream, without mutating inputs."""
    before = copy.deepcopy(target)
    assert strategic_merge_patch(target, patch, kind) == expected
    assert target == before


def test_strategic_merge_patch_requires_merge_key() -> None:
    """A merge-by-key list item without its key is rejected."""
    with pytest.raises(PatchError, match="merge key"):
        strategic_merge_patch(pod(), {"spec": {"containers": [{"image": "x"}]}}, "Pod")


def test_strategic_merge_patch_rejects_unknown_directive() -> None:
    """An unknown $patch value is an error."""
    with pytest.raises(PatchError, match="unknown patch type"):
        strategic_merge_patch(pod(), {"spec": {"$patch": "explode"}}, "Pod")


@given(documents, documents)
def test_strategic_merge_patch_equals_merge_patch_without_lists(old: dict[str, Any], new: dict[str, Any]) -> None:
    """For a kind with no list metadata at these paths, SMP agrees with RFC 7386."""
    diff = merge_diff(old, new)
    assert strategic_merge_patch(old, diff, "ConfigMap") == json_merge_patch(old, diff) == new


def test_kubectl_apply_patch_on_live_pod() -> None:
    """A real kubectl apply patch merges into the live pod as the real server would, keeping server-side fields."""
    fixtures = Path(__file__).parent.parent / "fixtures"
    live = json.loads((fixtures / "kubectl132-apply-pod-live.json").read_text())
    patch = json.loads((fixtures / "kubectl132-apply-pod-patch.json").read_text())
    result = strategic_merge_patch(live, patch, "Pod")
    spec = result["spec"]
    assert result["metadata"]["labels"] == {"app": "b"}
    assert result["metadata"]["finalizers"] == ["example.com/f"]
    assert [c["name"] for c in spec["containers"]] == ["extra", "main"]
    main = spec["containers"][1]
    assert main["image"] == "busybox:2"
    assert main["env"] == [{"name": "C", "value": "3"}, {"name": "A", "value": "1"}, {"name": "SERVER", "value": "s"}]
    assert main["ports"] == [{"containerPort": 8080}]
    assert main["terminationMessagePath"] == "/dev/termination-log"
    assert spec["tolerations"] == [{"key": "k2", "operator": "Exists"}]
    assert spec["volumes"] == [{"name": "v1", "hostPath": {"path": "/tmp"}}]
    assert spec["nodeName"] == "node-1"
    assert result["status"] == live["status"]
    assert not any(key.startswith("$") for key in all_keys(result))


def all_keys(value: Any) -> list[str]:
    """Every object key anywhere inside a JSON value."""
    if isinstance(value, dict):
        return [*value, *(k for child in value.values() for k in all_keys(child))]
    if isinstance(value, list):
        return [k for child in value for k in all_keys(child)]
    return []
