"""Structural schema pruning, defaulting and validation with apiserver-style messages, including CEL rules."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from grove_sim.schema.structural import FieldError, SchemaError, StructuralSchema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["template"],
            "x-kubernetes-validations": [
                {
                    "rule": "self.minAvailable <= self.replicas",
                    "message": "minAvailable must not exceed replicas",
                    "fieldPath": ".minAvailable",
                }
            ],
            "properties": {
                "replicas": {"type": "integer", "format": "int32", "minimum": 0, "default": 1},
                "minAvailable": {
                    "type": "integer",
                    "default": 1,
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "minAvailable is immutable"}],
                },
                "mode": {"type": "string", "enum": ["Fast", "Safe"], "default": "Safe"},
                "name": {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[a-z][a-z0-9-]*$"},
                "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2},
                "extra": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"known": {"type": "object", "properties": {"a": {"type": "integer"}}}},
                },
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 3},
                "note": {"type": "string", "nullable": True},
                "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": True},
                "resources": {"type": "object", "default": {"cpu": "1"}, "properties": {"cpu": {"type": "string"}}},
                "template": {
                    "type": "object",
                    "properties": {
                        "cliques": {
                            "type": "array",
                            "minItems": 1,
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "role": {
                                        "type": "string",
                                        "default": "worker",
                                        "x-kubernetes-validations": [
                                            {"rule": "self == oldSelf", "message": "role is immutable"}
                                        ],
                                    },
                                    "size": {"type": "integer", "default": 1, "minimum": 1},
                                    "podSpec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                },
                            },
                        }
                    },
                },
                "pack": {
                    "type": "object",
                    "properties": {"required": {"type": "string"}, "preferred": {"type": "string"}},
                    "x-kubernetes-validations": [
                        {
                            "rule": "has(self.required) || has(self.preferred)",
                            "message": "pack must specify at least one of required or preferred",
                        },
                        {
                            "rule": "!has(self.required) || self.required != 'host'",
                            "reason": "FieldValueForbidden",
                            "message": "host packing is forbidden",
                        },
                    ],
                },
                "window": {
                    "type": "object",
                    "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}},
                    "x-kubernetes-validations": [
                        {"rule": "self.end > self.start"},
                        {"rule": "self.end - self.start < 100", "messageExpression": "'too wide: ' + string(self.end)"},
                    ],
                },
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "integer"}}},
    },
}


def base() -> dict[str, Any]:
    """A valid, already-defaulted object."""
    return {
        "apiVersion": "example.dev/v1",
        "kind": "Demo",
        "metadata": {"name": "demo", "labels": {"x": "y"}},
        "spec": {
            "replicas": 2,
            "minAvailable": 1,
            "mode": "Safe",
            "resources": {"cpu": "1"},
            "template": {"cliques": [{"name": "a", "role": "leader", "size": 1, "podSpec": {"containers": []}}]},
        },
    }


@pytest.fixture(scope="module")
def schema() -> StructuralSchema:
    """The compiled representative schema."""
    return StructuralSchema(SCHEMA)


# ---------------------------------------------------------------------------------------------------------------------
# Defaulting


def test_defaults_fill_missing_fields_recursively(schema: StructuralSchema) -> None:
    """Missing properties get their defaults, including inside list items and inside freshly defaulted objects."""
    obj: dict[str, Any] = {"metadata": {"name": "d"}, "spec": {"template": {"cliques": [{"name": "a"}]}}}
    schema.apply_defaults(obj)
    assert obj["spec"] == {
        "replicas": 1,
        "minAvailable": 1,
        "mode": "Safe",
        "resources": {"cpu": "1"},
        "template": {"cliques": [{"name": "a", "role": "worker", "size": 1}]},
    }
    assert obj["metadata"] == {"name": "d"}


def test_defaults_keep_explicit_values_and_handle_nulls(schema: StructuralSchema) -> None:
    """Set values stay; a non-nullable null takes the default or is dropped; a nullable null stays."""
    obj: dict[str, Any] = {
        "spec": {"replicas": 5, "mode": None, "name": None, "note": None, "template": {"cliques": [{"name": "a"}]}}
    }
    schema.apply_defaults(obj)
    assert obj["spec"]["replicas"] == 5
    assert obj["spec"]["mode"] == "Safe"
    assert "name" not in obj["spec"]
    assert obj["spec"]["note"] is None


def test_defaults_are_copied_not_shared(schema: StructuralSchema) -> None:
    """Two objects defaulted from the same schema never share a default's mutable value."""
    first: dict[str, Any] = {"spec": {"template": {}}}
    second: dict[str, Any] = {"spec": {"template": {}}}
    schema.apply_defaults(first)
    schema.apply_defaults(second)
    first["spec"]["resources"]["cpu"] = "8"
    assert second["spec"]["resources"] == {"cpu": "1"}


# ---------------------------------------------------------------------------------------------------------------------
# Pruning


def test_prune_drops_unknown_fields_and_reports_paths(schema: StructuralSchema) -> None:
    """Unknown fields go (with their paths); server-owned root fields, maps and preserved subtrees stay."""
    obj = base()
    obj["spec"]["bogus"] = 1
    obj["spec"]["template"]["cliques"][0]["typo"] = "x"
    obj["spec"]["labels"] = {"any-key": "v"}
    obj["spec"]["extra"] = {"free": {"form": True}, "known": {"a": 1, "b": 2}}
    obj["status"] = {"ready": 1, "phase": "x"}
    obj["topLevel"] = True
    dropped = schema.prune(obj)
    assert sorted(dropped) == sorted(
        ["spec.bogus", "spec.template.cliques[0].typo", "spec.extra.known.b", "status.phase", "topLevel"]
    )
    assert obj["spec"]["labels"] == {"any-key": "v"}
    assert obj["spec"]["extra"] == {"free": {"form": True}, "known": {"a": 1}}
    assert obj["spec"]["template"]["cliques"][0]["podSpec"] == {"containers": []}
    assert obj["metadata"] == {"name": "demo", "labels": {"x": "y"}}
    assert obj["kind"] == "Demo"


COMPILED = StructuralSchema(SCHEMA)
junk_values = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda c: st.dictionaries(st.text(max_size=4), c, max_size=3) | st.lists(c, max_size=3),
    max_leaves=8,
)


@given(junk_values)
def test_prune_is_idempotent(junk: Any) -> None:
    """Pruning twice drops nothing the second time, whatever junk was added to a valid object."""
    compiled = COMPILED
    obj = base()
    obj["spec"]["junk"] = junk
    obj["spec"]["extra"] = {"junk": junk}
    compiled.prune(obj)
    assert compiled.prune(obj) == []
    assert "junk" not in obj["spec"]
    assert obj["spec"]["extra"] == {"junk": junk}


# ---------------------------------------------------------------------------------------------------------------------
# Validation


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(obj: dict[str, Any]) -> None:
        target: Any = obj
        keys = path.split(".")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(keys[-1])] = value
        else:
            target[keys[-1]] = value

    return mutate


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = obj
        for key in parents:
            target = target[key]
        del target[last]

    return mutate


NOT_CHECKED = (
    '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; '
    "correct the existing errors to complete validation"
)
CLIQUE_DUP = [{"name": "a", "size": 1}, {"name": "b", "size": 1}, {"name": "a", "size": 2}]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(
            _set("spec.replicas", -1),
            [
                "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
                'spec.minAvailable: Invalid value: "object": minAvailable must not exceed replicas',
            ],
            id="minimum-then-cel",
        ),
        pytest.param(
            _set("spec.replicas", "two"),
            [
                'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
                NOT_CHECKED,
            ],
            id="type-blocks-cel",
        ),
        pytest.param(
            _set("spec.replicas", 2**31),
            ['spec.replicas: Invalid value: 2147483648: spec.replicas in body must be of type int32: "2147483648"'],
            id="int32-range",
        ),
        pytest.param(_set("spec.replicas", 3.0), [], id="integral-float-is-integer"),
        pytest.param(
            _set("spec.mode", "Slow"),
            ['spec.mode: Unsupported value: "Slow": supported values: "Fast", "Safe"'],
            id="enum",
        ),
        pytest.param(
            _set("spec.name", "a-very-long-name"),
            ["spec.name: Too long: may not be more than 8 bytes", NOT_CHECKED],
            id="max-length",
        ),
        pytest.param(
            _set("spec.name", "Ab"),
            ["spec.name: Invalid value: \"Ab\": spec.name in body should match '^[a-z][a-z0-9-]*$'"],
            id="pattern",
        ),
        pytest.param(
            _set("spec.name", "a"),
            ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long'],
            id="min-length",
        ),
        pytest.param(_set("spec.port", "http"), [], id="int-or-string-string"),
        pytest.param(_set("spec.port", 8080), [], id="int-or-string-int"),
        pytest.param(
            _set("spec.port", True),
            [
                'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
                NOT_CHECKED,
            ],
            id="int-or-string-bad",
        ),
        pytest.param(
            _set("spec.name", None),
            ['spec.name: Invalid value: "null": spec.name in body must be of type string: "null"', NOT_CHECKED],
            id="null-not-nullable",
        ),
        pytest.param(_set("spec.note", None), [], id="nullable-null"),
        pytest.param(
            _set("spec.ratio", 1),
            ["spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"],
            id="exclusive-maximum",
        ),
        pytest.param(
            _set("spec.labels", {"a": "1", "b": "2", "c": "3"}),
            ["spec.labels: Too many: 3: must have at most 2 items", NOT_CHECKED],
            id="max-properties",
        ),
        pytest.param(
            _set("spec.labels", {"a": 1}),
            [
                'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"',
                NOT_CHECKED,
            ],
            id="additional-properties-type",
        ),
        pytest.param(
            _set("spec.tags", ["x", "y", "x"]),
            ['spec.tags[2]: Duplicate value: "x"'],
            id="list-set-duplicate",
        ),
        pytest.param(
            _set("spec.tags", ["a", "b", "c", "d"]),
            ["spec.tags: Too many: 4: must have at most 3 items", NOT_CHECKED],
            id="max-items",
        ),
        pytest.param(
            _set("spec.template.cliques", CLIQUE_DUP),
            ['spec.template.cliques[2]: Duplicate value: map[string]interface {}{"name":"a"}'],
            id="list-map-duplicate",
        ),
        pytest.param(
            _set("spec.template.cliques", []),
            ["spec.template.cliques: Invalid value: 0: spec.template.cliques in body should have at least 1 items"],
            id="min-items",
        ),
        pytest.param(
            _set("spec.template.cliques", [{"size": 0}]),
            [
                "spec.template.cliques[0].name: Required value",
                "spec.template.cliques[0].size: Invalid value: 0: spec.template.cliques[0].size in body should be "
                "greater than or equal to 1",
            ],
            id="nested-required-and-minimum",
        ),
        pytest.param(_delete("spec.template"), ["spec.template: Required value"], id="required"),
        pytest.param(
            _set("spec.minAvailable", 3),
            ['spec.minAvailable: Invalid value: "object": minAvailable must not exceed replicas'],
            id="cel-field-path",
        ),
        pytest.param(
            _set("spec.pack", {}),
            ['spec.pack: Invalid value: "object": pack must specify at least one of required or preferred'],
            id="cel-message",
        ),
        pytest.param(
            _set("spec.pack", {"required": "host"}),
            ["spec.pack: Forbidden: host packing is forbidden"],
            id="cel-reason-forbidden",
        ),
        pytest.param(
            _set("spec.window", {"start": 5, "end": 1}),
            ['spec.window: Invalid value: "object": failed rule: self.end > self.start'],
            id="cel-default-message",
        ),
        pytest.param(
            _set("spec.window", {"start": 0, "end": 500}),
            ['spec.window: Invalid value: "object": too wide: 500'],
            id="cel-message-expression",
        ),
        pytest.param(
            _set("spec.window", {"start": 5}),
            [
                'spec.window: Invalid value: "object": no such key: end evaluating rule: self.end > self.start',
                'spec.window: Invalid value: "object": no such key: end evaluating rule: self.end - self.start < 100',
            ],
            id="cel-evaluation-error",
        ),
        pytest.param(
            _set("spec.minAvailable", -5),
            [],
            id="cel-passes",
        ),
    ],
)
def test_validation_messages(
    schema: StructuralSchema, mutate: Callable[[dict[str, Any]], None], expected: list[str]
) -> None:
    """Each violation yields exactly the apiserver's field error message (schema errors first, CEL last)."""
    obj = base()
    mutate(obj)
    assert [e.message for e in schema.validate(obj)] == expected


def test_schema_without_rules_adds_no_rules_marker() -> None:
    """The 'rules were not checked' marker only appears when the schema has CEL rules to skip."""
    plain = StructuralSchema(
        {"type": "object", "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer"}}}}}
    )
    assert [e.message for e in plain.validate({"spec": {"n": "x"}})] == [
        'spec.n: Invalid value: "string": spec.n in body must be of type integer: "string"'
    ]


def test_valid_object_has_no_errors(schema: StructuralSchema) -> None:
    """The base object validates cleanly, before and after defaulting."""
    obj = base()
    assert schema.validate(obj) == []
    schema.apply_defaults(obj)
    assert schema.validate(obj) == []


def test_field_error_carries_path_and_reason(schema: StructuralSchema) -> None:
    """FieldError exposes the field path and metav1 cause reason the server puts into Status.details.causes."""
    obj = base()
    obj["spec"]["mode"] = "Slow"
    del obj["spec"]["template"]
    errors = schema.validate(obj)
    assert [(e.field, e.reason) for e in errors] == [
        ("spec.template", "FieldValueRequired"),
        ("spec.mode", "FieldValueNotSupported"),
    ]
    assert all(isinstance(e, FieldError) and e.message == f"{e.field}: {e.body}" for e in errors)
    assert errors[0].body == "Required value"


def test_root_server_fields_are_not_validated(schema: StructuralSchema) -> None:
    """metadata, apiVersion and kind at the root are left to the server even if the schema types them."""
    obj = base()
    obj["metadata"] = "not-an-object"
    obj["kind"] = 7
    assert schema.validate(obj) == []


def test_root_rule_errors_use_nil_path() -> None:
    """A rule on the schema root reports its error at Go's nil path, as kubectl shows it."""
    root = StructuralSchema(
        {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "has(self.spec)", "message": "spec is required"}],
            "properties": {"spec": {"type": "object"}},
        }
    )
    assert [e.message for e in root.validate({"metadata": {"name": "x"}})] == [
        '<nil>: Invalid value: "object": spec is required'
    ]


def test_unexpected_value_shapes_become_rule_errors() -> None:
    """A rule applied to values it cannot handle yields a field error rather than an exception."""
    odd = StructuralSchema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "x-kubernetes-validations": [{"rule": "self.k in {'a': 1}"}],
                }
            },
        }
    )
    errors = odd.validate({"spec": {"k": [1, 2]}})
    assert len(errors) == 1
    assert errors[0].field == "spec"
    assert "evaluating rule: self.k in {'a': 1}" in errors[0].message


# ---------------------------------------------------------------------------------------------------------------------
# Transition rules


def test_transition_rules_skip_on_create(schema: StructuralSchema) -> None:
    """Rules using oldSelf are not evaluated when there is no old object."""
    assert schema.validate(base(), None) == []


def test_transition_rule_rejects_change_on_update(schema: StructuralSchema) -> None:
    """An immutable field changed on update fails with the rule's message."""
    old = base()
    new = copy.deepcopy(old)
    new["spec"]["minAvailable"] = 2
    assert [e.message for e in schema.validate(new, old)] == [
        'spec.minAvailable: Invalid value: "integer": minAvailable is immutable'
    ]


def test_transition_rule_correlates_list_map_items_by_key(schema: StructuralSchema) -> None:
    """List-type=map items are matched by key, so reordering is fine and only a real change is caught."""
    old = base()
    old["spec"]["template"]["cliques"] = [{"name": "a", "role": "leader"}, {"name": "b", "role": "worker"}]
    new = copy.deepcopy(old)
    new["spec"]["template"]["cliques"].reverse()
    assert schema.validate(new, old) == []
    new["spec"]["template"]["cliques"][1]["role"] = "worker"
    new["spec"]["template"]["cliques"].append({"name": "c", "role": "anything"})
    assert [e.message for e in schema.validate(new, old)] == [
        'spec.template.cliques[1].role: Invalid value: "string": role is immutable'
    ]


def test_transition_rule_skips_when_old_value_absent(schema: StructuralSchema) -> None:
    """A field newly set on update has no oldSelf, so its transition rule does not run."""
    old = base()
    del old["spec"]["minAvailable"]
    new = base()
    assert schema.validate(new, old) == []


# ---------------------------------------------------------------------------------------------------------------------
# Ratcheting


def test_unchanged_invalid_values_are_ratcheted_on_update(schema: StructuralSchema) -> None:
    """On update, invalid values equal to the stored ones do not fail; new or changed invalid values still do."""
    old = base()
    old["spec"]["name"] = "BadName"
    old["spec"]["pack"] = {}
    old["spec"]["template"]["cliques"][0]["size"] = 0
    assert len(schema.validate(old)) == 3
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    assert schema.validate(new, old) == []
    new["spec"]["name"] = "StillBad"
    new["spec"]["template"]["cliques"].append({"name": "b", "size": 0})
    assert sorted(e.field for e in schema.validate(new, old)) == ["spec.name", "spec.template.cliques[1].size"]


def test_transition_rules_are_not_ratcheted(schema: StructuralSchema) -> None:
    """A rule using oldSelf still runs on an unchanged value (and passes for self == oldSelf)."""
    rules = StructuralSchema(
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > oldSelf", "message": "grow"}]}
            },
        }
    )
    assert [e.message for e in rules.validate({"n": 1}, {"n": 1})] == ['n: Invalid value: "integer": grow']
    assert rules.validate({"n": 2}, {"n": 1}) == []


# ---------------------------------------------------------------------------------------------------------------------
# Schema compilation and the project's own CRDs


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"type": "string", "pattern": "("}, id="bad-pattern"),
        pytest.param({"type": "object", "x-kubernetes-validations": [{"rule": "self.a ==", "message": "m"}]}, id="cel"),
    ],
)
def test_unusable_schema_is_rejected(bad: dict[str, Any]) -> None:
    """A schema whose pattern or CEL rule does not compile raises SchemaError (the CRD would be rejected)."""
    with pytest.raises(SchemaError):
        StructuralSchema({"type": "object", "properties": {"spec": bad}})


REPO = Path(__file__).resolve().parents[3]


def _crd_schemas() -> dict[str, StructuralSchema]:
    schemas: dict[str, StructuralSchema] = {}
    for path in sorted((REPO / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            schemas[f"{crd['spec']['group']}/{version['name']}/{crd['spec']['names']['kind']}"] = StructuralSchema(
                version["schema"]["openAPIV3Schema"]
            )
    return schemas


def test_project_crds_compile_and_accept_upstream_samples() -> None:
    """Every CRD in crds/ compiles, and every upstream sample of those kinds prunes nothing and validates."""
    schemas = _crd_schemas()
    samples = sorted((REPO / "tests" / "fixtures" / "pcs").rglob("*.yaml"))
    checked = 0
    for path in samples:
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict):
                continue
            schema = schemas.get(f"{doc.get('apiVersion')}/{doc.get('kind')}")
            if schema is None:
                continue
            assert schema.prune(doc) == [], path
            schema.apply_defaults(doc)
            assert schema.validate(doc) == [], path
            assert schema.validate(doc, copy.deepcopy(doc)) == [], path
            checked += 1
    assert schemas
    assert checked > 0


@pytest.mark.parametrize(
    ("bound", "value", "expected"),
    [
        pytest.param(1000000, 1000001, "should be less than or equal to 1e+06", id="go-exponent-form"),
        pytest.param(123456, 123457, "should be less than or equal to 123456", id="plain-integer"),
        pytest.param(0.5, 0.75, "should be less than or equal to 0.5", id="fraction"),
        pytest.param(0.00001, 0.5, "should be less than or equal to 1e-05", id="small-exponent"),
    ],
)
def test_bounds_render_like_go_floats(bound: float, value: float, expected: str) -> None:
    """Numeric bounds are printed with Go's %v float formatting, as kube-openapi does."""
    compiled = StructuralSchema({"type": "object", "properties": {"n": {"type": "number", "maximum": bound}}})
    (error,) = compiled.validate({"n": value})
    assert error.message.endswith(f"n in body {expected}")


def test_number_fields_are_doubles_in_cel() -> None:
    """A JSON integer in a ``type: number`` field is a double to CEL, so double arithmetic on it works."""
    compiled = StructuralSchema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"ratio": {"type": "number"}, "count": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "self.ratio * 2.0 <= double(self.count)", "message": "m"}],
                }
            },
        }
    )
    assert compiled.validate({"spec": {"ratio": 1, "count": 2}}) == []
    assert [e.message for e in compiled.validate({"spec": {"ratio": 2, "count": 2}})] == [
        'spec: Invalid value: "object": m'
    ]


def test_project_pcs_immutability_rule_on_update() -> None:
    """The PodCliqueSet CRD's transition rule rejects changing cliqueStartupType of a stored object."""
    schema = _crd_schemas().get("grove.io/v1alpha1/PodCliqueSet")
    assert schema is not None, "crds/grove.io_podcliquesets.yaml is missing"
    sample: dict[str, Any] = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "demo"},
        "spec": {"replicas": 1, "template": {"cliques": [{"name": "w", "spec": {"replicas": 1, "podSpec": {}}}]}},
    }
    schema.apply_defaults(sample)
    assert sample["spec"]["template"]["cliqueStartupType"] == "CliqueStartupTypeAnyOrder"
    changed = copy.deepcopy(sample)
    changed["spec"]["template"]["cliqueStartupType"] = "CliqueStartupTypeInOrder"
    assert schema.validate(changed) == []
    assert [e.message for e in schema.validate(changed, sample)] == [
        'spec.template.cliqueStartupType: Invalid value: "string": cliqueStartupType is immutable'
    ]
