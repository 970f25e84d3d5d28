"""The kubectl JSONPath subset used by CRD printer columns and scale subresource paths."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_sim.machinery.jsonpath import JsonPathError, compile_jsonpath

DOC: dict[str, Any] = {
    "metadata": {"name": "demo", "labels": {"app.kubernetes.io/name": "grove", "tier": "gpu"}},
    "spec": {"replicas": 3, "levels": [{"domain": "zone", "key": "z"}, {"domain": "rack", "key": "r"}], "off": False},
    "status": {
        "conditions": [
            {"type": "Ready", "status": "True", "count": 1},
            {"type": "Progressing", "status": "False", "count": 5},
        ],
        "selector": "app=grove",
    },
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param(".spec.replicas", [3], id="field"),
        pytest.param("{.spec.replicas}", [3], id="braces"),
        pytest.param("$.spec.replicas", [3], id="dollar-root"),
        pytest.param(".spec.off", [False], id="false-value"),
        pytest.param(".spec.levels[*].domain", ["zone", "rack"], id="wildcard-index"),
        pytest.param(".spec.levels[1].key", ["r"], id="index"),
        pytest.param(".spec.levels[-1].key", ["r"], id="negative-index"),
        pytest.param(".spec.levels[0:1].key", ["z"], id="slice"),
        pytest.param(".spec.levels[0,1].key", ["z", "r"], id="union"),
        pytest.param('.status.conditions[?(@.type=="Ready")].status', ["True"], id="filter-eq"),
        pytest.param(".status.conditions[?(@.type!='Ready')].type", ["Progressing"], id="filter-ne"),
        pytest.param(".status.conditions[?(@.count > 2)].type", ["Progressing"], id="filter-gt"),
        pytest.param(".status.conditions[?(@.missing)].type", [], id="filter-exists"),
        pytest.param(".metadata.labels['app.kubernetes.io/name']", ["grove"], id="quoted-key"),
        pytest.param(r".metadata.labels.app\.kubernetes\.io/name", ["grove"], id="escaped-dots"),
        pytest.param(".metadata.labels.*", ["grove", "gpu"], id="dot-wildcard"),
        pytest.param("..domain", ["zone", "rack"], id="recursive"),
        pytest.param(".spec.missing.deeper", [], id="missing-is-empty"),
        pytest.param(".spec.replicas.x", [], id="field-of-scalar"),
        pytest.param(".spec.levels[9]", [], id="index-out-of-range"),
    ],
)
def test_find(expr: str, expected: list[Any]) -> None:
    """Each expression selects the expected values, with missing keys giving no result."""
    assert compile_jsonpath(expr).find(DOC) == expected


def test_first_returns_default_when_missing() -> None:
    """first() gives the first match or the default, which is how printer cells and scale paths read values."""
    assert compile_jsonpath(".status.selector").first(DOC) == "app=grove"
    assert compile_jsonpath(".status.nothing").first(DOC, "<none>") == "<none>"


@pytest.mark.parametrize("expr", ["", "{}", ".a[", ".a[x]", ".a[?(@.b ~ 1)]", ".a[::0]"])
def test_invalid_expressions(expr: str) -> None:
    """Malformed expressions raise JsonPathError when compiled."""
    with pytest.raises(JsonPathError):
        compile_jsonpath(expr)


keys = st.text(alphabet="abcxyz", min_size=1, max_size=4)


@given(st.lists(keys, min_size=1, max_size=5), st.integers())
def test_dotted_path_reads_nested_value(path: list[str], value: int) -> None:
    """For any nested dict, the dotted path to a leaf finds exactly that leaf."""
    doc: Any = value
    for key in reversed(path):
        doc = {key: doc}
    assert compile_jsonpath("." + ".".join(path)).find(doc) == [value]
