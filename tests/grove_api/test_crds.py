"""The generated CRDs are structural, complete, and identical to the files committed in `crds/`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from pydantic import BaseModel

from grove_api import ObjectMeta, crdgen
from grove_api._crdspec import CRD_KINDS

from ..fixtures.samples import load_sample, sample_files

CRDS = {crd["spec"]["names"]["kind"]: crd for crd in crdgen.generate() if crd["spec"]["group"] != "grove.dynamo.ai"}
"""The grove.io and scheduler.grove.io CRDs by kind (grove.dynamo.ai/v1 has a PodClique too: tests/grove_api/
test_first_api.py covers that group)."""
ALLOWED_CEL_CALLS = {"has", "size", "all", "exists", "matches"}


def _schema(kind: str) -> dict[str, Any]:
    """The openAPIV3Schema of `kind`."""
    schema: dict[str, Any] = CRDS[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """Schema node at a dotted path; `x[]` steps into list items."""
    node = schema
    for step in path.split("."):
        node = node["properties"][step.removesuffix("[]")]
        if step.endswith("[]"):
            node = node["items"]
    return node


def _walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node with its path."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from _walk(child, f"{path}.{name}")
    if "items" in node:
        yield from _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(node["additionalProperties"], f"{path}{{}}")


def structural_violations(schema: dict[str, Any]) -> list[str]:
    """Why `schema` is not structural (empty when it is): untyped nodes, $ref, anyOf/oneOf, bad required lists."""
    problems: list[str] = []
    for path, node in _walk(schema):
        if "$ref" in node or "oneOf" in node or "allOf" in node or "not" in node:
            problems.append(f"{path}: forbidden keyword")
        if "anyOf" in node and not node.get("x-kubernetes-int-or-string"):
            problems.append(f"{path}: anyOf outside int-or-string")
        if "type" not in node and not node.get("x-kubernetes-int-or-string"):
            problems.append(f"{path}: no type")
        if node.get("type") == "array" and "items" not in node:
            problems.append(f"{path}: array without items")
        if node.get("type") == "object" and "properties" in node and "additionalProperties" in node:
            problems.append(f"{path}: both properties and additionalProperties")
        missing = set(node.get("required", [])) - set(node.get("properties", {}))
        if missing:
            problems.append(f"{path}: required but undeclared {sorted(missing)}")
        for key in node.get("x-kubernetes-list-map-keys", []):
            if key not in node["items"].get("required", []):
                problems.append(f"{path}: list-map key {key} not required")
    return problems


def test_files_on_disk_match_generation(repo_root: Path) -> None:
    """`crds/` is exactly what the models generate (run `make crds` after changing a model)."""
    expected = {crdgen.crd_filename(crd): crdgen.render(crd) for crd in crdgen.generate()}
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in sorted((repo_root / "crds").glob("*.yaml"))}
    assert sorted(on_disk) == sorted(expected)
    for name, text in expected.items():
        assert on_disk[name] == text, f"crds/{name} is stale: run `make crds`"


def test_write_crds_is_deterministic_and_prunes_stale_files(tmp_path: Path) -> None:
    """Writing twice yields identical files, and an obsolete Grove CRD file is removed."""
    (tmp_path / "grove.io_podgangsets.yaml").write_text("old", encoding="utf-8")
    (tmp_path / "grove.dynamo.ai_podgangs.yaml").write_text("old", encoding="utf-8")
    first = {p.name: p.read_text(encoding="utf-8") for p in crdgen.write_crds(tmp_path)}
    second = {p.name: p.read_text(encoding="utf-8") for p in crdgen.write_crds(tmp_path)}
    assert first == second
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(first)
    assert crdgen.main([str(tmp_path / "out")]) == 0
    assert len(list((tmp_path / "out").glob("*.yaml"))) == 9


@pytest.mark.parametrize(
    ("kind", "group", "plural", "short", "scope"),
    [
        pytest.param("PodCliqueSet", "grove.io", "podcliquesets", "pcs", "Namespaced", id="pcs"),
        pytest.param("PodClique", "grove.io", "podcliques", "pclq", "Namespaced", id="pclq"),
        pytest.param("PodCliqueScalingGroup", "grove.io", "podcliquescalinggroups", "pcsg", "Namespaced", id="pcsg"),
        pytest.param("ClusterTopologyBinding", "grove.io", "clustertopologybindings", "ct", "Cluster", id="ct"),
        pytest.param("PodGang", "scheduler.grove.io", "podgangs", "pg", "Namespaced", id="pg"),
    ],
)
def test_crd_names_and_scope(kind: str, group: str, plural: str, short: str, scope: str) -> None:
    """Each CRD has upstream's group, plural, short name, `grove` category, scope and one stored version."""
    crd = CRDS[kind]
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{plural}.{group}"
    assert spec["group"] == group
    assert spec["names"]["plural"] == plural
    assert spec["names"]["singular"] == kind.lower()
    assert spec["names"]["shortNames"] == [short]
    assert spec["names"]["categories"] == ["grove"]
    assert spec["scope"] == scope
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert structural_violations(version["schema"]["openAPIV3Schema"]) == []


@pytest.mark.parametrize(
    ("kind", "scale"),
    [
        pytest.param("PodCliqueSet", (".spec.replicas", ".status.replicas", ".status.hpaPodSelector"), id="pcs"),
        pytest.param("PodClique", (".spec.replicas", ".status.replicas", ".status.hpaPodSelector"), id="pclq"),
        pytest.param("PodCliqueScalingGroup", (".spec.replicas", ".status.replicas", ".status.selector"), id="pcsg"),
        pytest.param("ClusterTopologyBinding", None, id="ct"),
        pytest.param("PodGang", None, id="pg"),
    ],
)
def test_subresources(kind: str, scale: tuple[str, str, str] | None) -> None:
    """Status everywhere; scale with the exact paths of §1.1 only on PCS, PCLQ and PCSG."""
    sub = CRDS[kind]["spec"]["versions"][0]["subresources"]
    assert sub["status"] == {}
    if scale is None:
        assert "scale" not in sub
    else:
        got = sub["scale"]
        assert (got["specReplicasPath"], got["statusReplicasPath"], got["labelSelectorPath"]) == scale


@pytest.mark.parametrize(
    ("kind", "columns"),
    [
        pytest.param(
            "PodCliqueSet",
            ["Replicas", "Available", "Updated", "PCLQs-Updated", "PCLQs-Total", "PCSGs-Updated", "PCSGs-Total", "Age"],
            id="pcs",
        ),
        pytest.param(
            "PodClique",
            ["MinAvail", "Replicas", "Ready", "Scheduled", "Updated", "Gated", "MinBreached", "Age"],
            id="pclq",
        ),
        pytest.param(
            "PodCliqueScalingGroup",
            [
                "MinAvail",
                "Replicas",
                "Available",
                "Scheduled",
                "Updated",
                "PCLQs-Updated",
                "PCLQs-Total",
                "MinBreached",
                "Age",
            ],
            id="pcsg",
        ),
        pytest.param("ClusterTopologyBinding", ["Domains", "Age"], id="ct"),
        pytest.param("PodGang", ["Phase", "Age"], id="pg"),
    ],
)
def test_printer_columns(kind: str, columns: list[str]) -> None:
    """Printer columns appear in §1.1 order; Gated/MinBreached are priority 1; Age is a date column."""
    got = CRDS[kind]["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in got] == columns
    for column in got:
        assert column["jsonPath"].startswith(".")
        assert column.get("priority", 0) == (1 if column["name"] in {"Gated", "MinBreached"} else 0)
        assert column["type"] in {"integer", "string", "date"}
    assert got[-1] == {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def test_printer_column_paths_exist_in_schema() -> None:
    """Every `.spec`/`.status` column path points at a declared schema field."""
    for kind in CRDS:
        for column in CRDS[kind]["spec"]["versions"][0]["additionalPrinterColumns"]:
            path = column["jsonPath"].lstrip(".")
            if path.startswith("metadata"):
                continue
            steps = re.sub(r"\[[^\]]*\]", "[]", path)
            assert _at(_schema(kind), steps.removesuffix("[]")) is not None


@pytest.mark.parametrize(
    ("kind", "path", "default"),
    [
        pytest.param("PodCliqueSet", "spec.replicas", 0, id="pcs-replicas"),
        pytest.param("PodCliqueSet", "spec.updateStrategy.type", "RollingRecreate", id="update-strategy"),
        pytest.param("PodCliqueSet", "spec.template.cliqueStartupType", "CliqueStartupTypeAnyOrder", id="startup"),
        pytest.param(
            "PodCliqueSet", "spec.template.headlessServiceConfig.publishNotReadyAddresses", True, id="headless"
        ),
        pytest.param("PodCliqueSet", "spec.template.podCliqueScalingGroups[].replicas", 1, id="pcsg-cfg-replicas"),
        pytest.param("PodCliqueSet", "spec.template.podCliqueScalingGroups[].minAvailable", 1, id="pcsg-cfg-min"),
        pytest.param("PodCliqueSet", "spec.template.cliques[].spec.roleName", "", id="role-name"),
        pytest.param("PodCliqueScalingGroup", "spec.replicas", 1, id="pcsg-replicas"),
        pytest.param("PodCliqueScalingGroup", "spec.minAvailable", 1, id="pcsg-min"),
    ],
)
def test_crd_defaults(kind: str, path: str, default: object) -> None:
    """CRD-level defaults of §1/§8 are present in the schema."""
    assert _at(_schema(kind), path)["default"] == default


def test_enums_minimums_patterns_and_list_maps() -> None:
    """Enums, minimums, topology-domain patterns and the cliques list-map are declared."""
    pcs = _schema("PodCliqueSet")
    assert _at(pcs, "spec.template.cliqueStartupType")["enum"] == [
        "CliqueStartupTypeAnyOrder",
        "CliqueStartupTypeInOrder",
        "CliqueStartupTypeExplicit",
    ]
    assert _at(pcs, "spec.updateStrategy.type")["enum"] == ["RollingRecreate", "OnDelete"]
    assert _at(pcs, "spec.replicas")["minimum"] == 0
    assert _at(pcs, "spec.template.cliques")["minItems"] == 1
    cliques = _at(pcs, "spec.template.cliques")
    assert cliques["x-kubernetes-list-type"] == "map"
    assert cliques["x-kubernetes-list-map-keys"] == ["name"]
    domain = _at(pcs, "spec.template.topologyConstraint.pack.required")
    assert (domain["pattern"], domain["maxLength"], domain["minLength"]) == (r"^[a-z][a-z0-9-]*$", 63, 1)
    pod_spec = _at(pcs, "spec.template.cliques[].spec.podSpec")
    assert pod_spec == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert _at(pcs, "spec.template.resourceClaimTemplates[].templateSpec")["x-kubernetes-preserve-unknown-fields"]
    metrics = _at(pcs, "spec.template.cliques[].spec.autoScalingConfig.metrics")["items"]
    assert metrics["x-kubernetes-preserve-unknown-fields"] is True
    assert _at(_schema("PodGang"), "status.phase")["enum"] == ["Pending", "Starting", "Running"]
    assert _at(_schema("ClusterTopologyBinding"), "spec.levels")["minItems"] == 1
    assert set(_schema("PodGang")["required"]) == {"spec"}
    assert "podgroups" in _at(_schema("PodGang"), "spec")["required"]


def test_cel_rules_where_upstream_has_them() -> None:
    """Pack needs required or preferred; immutable fields carry `self == oldSelf`."""
    pcs = _schema("PodCliqueSet")
    pack_rules = [r["rule"] for r in _at(pcs, "spec.template.topologyConstraint.pack")["x-kubernetes-validations"]]
    assert pack_rules == ["has(self.required) || has(self.preferred)"]
    tc_rules = [r["rule"] for r in _at(pcs, "spec.template.topologyConstraint")["x-kubernetes-validations"]]
    assert "has(self.pack) || has(self.packDomain)" in tc_rules
    immutable = [
        ("PodCliqueSet", "spec.template.cliqueStartupType"),
        ("PodCliqueSet", "spec.template.topologyConstraint.topologyName"),
        ("PodCliqueScalingGroup", "spec.cliqueNames"),
        ("PodCliqueScalingGroup", "spec.minAvailable"),
        ("PodClique", "spec.roleName"),
    ]
    for kind, path in immutable:
        rules = [r["rule"] for r in _at(_schema(kind), path)["x-kubernetes-validations"]]
        assert rules == ["self == oldSelf"], (kind, path)


def test_cel_rules_stay_in_the_simulator_subset() -> None:
    """Every CEL rule only calls functions the simulated API server evaluates."""
    count = 0
    for kind in CRDS:
        for _, node in _walk(_schema(kind)):
            for rule in node.get("x-kubernetes-validations", []):
                count += 1
                assert set(rule) == {"rule", "message"}
                calls = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", rule["rule"]))
                assert calls <= ALLOWED_CEL_CALLS, rule["rule"]
    assert count >= 8


def _undeclared(value: Any, node: dict[str, Any], path: str = "") -> Iterator[str]:
    """Paths in `value` that the schema would prune (not declared and not under preserve-unknown-fields)."""
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict):
        if "properties" in node:
            for key, child in value.items():
                if key not in node["properties"]:
                    yield f"{path}.{key}"
                else:
                    yield from _undeclared(child, node["properties"][key], f"{path}.{key}")
        elif isinstance(node.get("additionalProperties"), dict):
            for key, child in value.items():
                yield from _undeclared(child, node["additionalProperties"], f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _undeclared(item, node["items"], f"{path}[{i}]")


@pytest.mark.parametrize("path", sample_files())
def test_samples_survive_pruning(path: str) -> None:
    """No field of a sample-shaped fixture would be pruned by the generated PodCliqueSet schema."""
    doc = load_sample(path)
    assert list(_undeclared(doc, _schema("PodCliqueSet"))) == []


def test_rendered_yaml_has_no_anchors() -> None:
    """Rendered CRDs contain no YAML anchors/aliases (shared nodes), so every tool reads them alike."""
    for crd in crdgen.generate():
        text = crdgen.render(crd)
        assert "&id" not in text
        assert "*id" not in text
        assert yaml.safe_load(text) == crd


def test_structural_checker_flags_violations() -> None:
    """The checker itself rejects untyped nodes, `$ref`, bare anyOf and undeclared required fields."""
    bad = {
        "type": "object",
        "properties": {
            "a": {"description": "untyped"},
            "b": {"$ref": "#/definitions/x", "type": "object"},
            "c": {"anyOf": [{"type": "string"}, {"type": "integer"}], "type": "string"},
            "d": {"type": "array"},
        },
        "required": ["e"],
    }
    problems = structural_violations(bad)
    assert any(p.startswith(".a:") for p in problems)
    assert any(p.startswith(".b:") for p in problems)
    assert any(p.startswith(".c:") for p in problems)
    assert any(p.startswith(".d:") for p in problems)
    assert any("undeclared" in p for p in problems)
    int_or_string = {"type": "object", "properties": {"x": {"x-kubernetes-int-or-string": True, "anyOf": []}}}
    assert structural_violations(int_or_string) == []


def _model_paths(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every (dotted JSON path, annotation) a model can emit, stepping into nested models and lists."""
    for name, info in model.model_fields.items():
        path = f"{prefix}{info.alias or name}"
        yield path, info.annotation
        for arg in _flatten(info.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel) and arg is not ObjectMeta:
                step = "[]" if "list[" in str(info.annotation) else ""
                yield from _model_paths(arg, f"{path}{step}.")


def _flatten(annotation: Any) -> Iterator[Any]:
    """All types mentioned anywhere inside an annotation."""
    yield annotation
    for arg in get_args(annotation):
        yield from _flatten(arg)


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_every_model_field_is_declared(kind: str) -> None:
    """Each field a model can serialise exists in its CRD schema under the same JSON name (nothing is pruned)."""
    model = next(k.model for k in CRD_KINDS if k.kind == kind)
    paths = [p for p, _ in _model_paths(model)]
    assert len(paths) > 5
    for path in paths:
        assert _at(_schema(kind), path) is not None, path
