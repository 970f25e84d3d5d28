"""Label and field selectors: grammar, validation, per-kind field support and agreement with a reference matcher."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_sim.machinery.field_selectors import parse_field_selector
from grove_sim.machinery.label_selectors import (
    SelectorError,
    label_selector_from_dict,
    parse_label_selector,
)

# ---------------------------------------------------------------------------------------------------------------------
# Label selectors: property test against a reference implementation

KEYS = ["app", "tier", "grove.io/role", "x"]
VALUES = ["a", "b", "c-1", "v.2"]

Requirement = tuple[str, str, tuple[str, ...]]

requirements = st.one_of(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(["=", "==", "!="]), st.tuples(st.sampled_from(VALUES))),
    st.tuples(
        st.sampled_from(KEYS),
        st.sampled_from(["in", "notin"]),
        st.lists(st.sampled_from(VALUES), min_size=1, max_size=3).map(tuple),
    ),
    st.tuples(st.sampled_from(KEYS), st.sampled_from(["exists", "!"]), st.just(())),
)
label_maps = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)


def render(reqs: list[Requirement]) -> str:
    """Render requirements in the query syntax, with assorted spacing."""
    parts = []
    for key, op, values in reqs:
        if op == "exists":
            parts.append(key)
        elif op == "!":
            parts.append(f"!{key}")
        elif op in ("in", "notin"):
            parts.append(f"{key} {op} ( {', '.join(values)} )")
        else:
            parts.append(f"{key}{op}{values[0]}")
    return " , ".join(parts)


def reference_match(reqs: list[Requirement], labels: dict[str, str]) -> bool:
    """The documented semantics, written as plainly as possible."""
    for key, op, values in reqs:
        present = key in labels
        value = labels.get(key)
        if op in ("=", "=="):
            ok = present and value == values[0]
        elif op == "!=":
            ok = not present or value != values[0]
        elif op == "in":
            ok = present and value in values
        elif op == "notin":
            ok = not present or value not in values
        else:
            ok = present if op == "exists" else not present
        if not ok:
            return False
    return True


@given(st.lists(requirements, max_size=4), label_maps)
def test_label_selector_agrees_with_reference(reqs: list[Requirement], labels: dict[str, str]) -> None:
    """A parsed selector matches exactly the label maps the reference semantics accept."""
    selector = parse_label_selector(render(reqs))
    assert selector.matches(labels) == reference_match(reqs, labels)
    assert selector.empty == (not reqs)


@given(st.lists(requirements, max_size=4), label_maps)
def test_label_selector_string_round_trips(reqs: list[Requirement], labels: dict[str, str]) -> None:
    """The canonical string of a selector parses back to a selector with the same matches."""
    selector = parse_label_selector(render(reqs))
    again = parse_label_selector(str(selector))
    assert again.matches(labels) == selector.matches(labels)


@given(st.lists(requirements, max_size=4), label_maps)
def test_label_selector_from_dict_agrees_with_string(reqs: list[Requirement], labels: dict[str, str]) -> None:
    """A metav1.LabelSelector dict selects the same maps as the equivalent query string."""
    expressions: list[dict[str, Any]] = []
    op_names = {"in": "In", "notin": "NotIn", "exists": "Exists", "!": "DoesNotExist"}
    string_reqs = []
    for key, op, values in reqs:
        if op in op_names:
            entry: dict[str, Any] = {"key": key, "operator": op_names[op]}
            if values:
                entry["values"] = list(values)
            expressions.append(entry)
            string_reqs.append((key, op, values))
    selector = label_selector_from_dict({"matchExpressions": expressions})
    assert selector.matches(labels) == reference_match(string_reqs, labels)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        pytest.param("", {"a": "b"}, True, id="empty-selects-all"),
        pytest.param("a=", {"a": ""}, True, id="empty-value"),
        pytest.param("a=", {}, False, id="empty-value-needs-key"),
        pytest.param("a!=b", {}, True, id="ne-matches-missing"),
        pytest.param("a notin (b)", {}, True, id="notin-matches-missing"),
        pytest.param("a in (b)", {}, False, id="in-needs-key"),
        pytest.param("a in ()", {"a": ""}, True, id="empty-parens-is-empty-value"),
        pytest.param("n>3", {"n": "4"}, True, id="gt"),
        pytest.param("n>3", {"n": "3"}, False, id="gt-strict"),
        pytest.param("n<3", {"n": "x"}, False, id="lt-non-integer"),
        pytest.param("  a = b  ", {"a": "b"}, True, id="whitespace"),
        pytest.param("example.com/a=b", {"example.com/a": "b"}, True, id="prefixed-key"),
    ],
)
def test_label_selector_cases(text: str, labels: dict[str, str], expected: bool) -> None:
    """Edge cases of the grammar select as the real server does."""
    assert parse_label_selector(text).matches(labels) is expected


def test_label_selector_none_labels() -> None:
    """An object without labels matches only selectors that require absence."""
    assert parse_label_selector("!a").matches(None)
    assert not parse_label_selector("a").matches(None)


@pytest.mark.parametrize(
    "text",
    [
        "a=b=c",
        "!a=b",
        "a in (b c)",
        "a b",
        "=a",
        "a,,b",
        "a=-b",
        "a=" + "x" * 64,
        "x/=1",
        "Upper.Case/a=1",
        "a in b",
        "n>x",
        "a in (b",
    ],
)
def test_label_selector_rejects_invalid(text: str) -> None:
    """Malformed selectors and invalid keys or values raise SelectorError with a parse message."""
    with pytest.raises(SelectorError, match=r"unable to parse requirement|values set|integer"):
        parse_label_selector(text)


@pytest.mark.parametrize(
    "sel",
    [
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        {"matchLabels": {"a": "-bad"}},
    ],
)
def test_label_selector_from_dict_rejects_invalid(sel: dict[str, Any]) -> None:
    """Invalid metav1.LabelSelector dicts raise SelectorError."""
    with pytest.raises(SelectorError):
        label_selector_from_dict(sel)


def test_label_selector_required_value() -> None:
    """An equality requirement exposes its value so the server can use an index."""
    selector = label_selector_from_dict({"matchLabels": {"app": "web"}, "matchExpressions": []})
    assert selector.required_value("app") == "web"
    assert selector.required_value("tier") is None
    assert label_selector_from_dict({}).empty


# ---------------------------------------------------------------------------------------------------------------------
# Field selectors

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"nodeName": "node-1", "schedulerName": "grove-scheduler", "restartPolicy": "Always"},
    "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}], "nominatedNodeName": None},
}


@pytest.mark.parametrize(
    ("resource", "group", "text", "obj", "expected"),
    [
        pytest.param("pods", "", "spec.nodeName=node-1", POD, True, id="pod-node"),
        pytest.param("pods", "", "spec.nodeName==node-2", POD, False, id="pod-node-double-eq"),
        pytest.param("pods", "", "spec.nodeName!=", POD, True, id="pod-bound"),
        pytest.param("pods", "", "spec.nodeName=", {"spec": {}}, True, id="pod-unbound-empty"),
        pytest.param("pods", "", "status.phase!=Succeeded,status.phase!=Failed", POD, True, id="pod-phase-and"),
        pytest.param("pods", "", "status.podIP=10.0.0.1", POD, True, id="pod-ip"),
        pytest.param("pods", "", "status.podIPs=10.0.0.1", POD, True, id="pod-ips"),
        pytest.param("pods", "", "status.nominatedNodeName=", POD, True, id="none-is-empty"),
        pytest.param("pods", "", "spec.hostNetwork=false", POD, True, id="hostnetwork-default-false"),
        pytest.param("pods", "", "spec.host=node-1", POD, True, id="legacy-spec-host"),
        pytest.param("pods", "", "metadata.namespace=ns,metadata.name=p", POD, True, id="pod-meta"),
        pytest.param("nodes", "", "spec.unschedulable=true", {"spec": {"unschedulable": True}}, True, id="node-bool"),
        pytest.param("nodes", "", "spec.unschedulable!=true", {"spec": {}}, True, id="node-bool-missing"),
        pytest.param("namespaces", "", "status.phase=Active", {"status": {"phase": "Active"}}, True, id="ns-phase"),
        pytest.param("secrets", "", "type=Opaque", {"type": "Opaque"}, True, id="secret-type"),
        pytest.param(
            "events",
            "",
            "involvedObject.kind=Pod,involvedObject.name=p,source=kubelet,type=Warning",
            {"involvedObject": {"kind": "Pod", "name": "p"}, "source": {"component": "kubelet"}, "type": "Warning"},
            True,
            id="core-event",
        ),
        pytest.param(
            "events",
            "events.k8s.io",
            "regarding.name=p,involvedObject.kind=Pod,reportingController=sched,reason=Scheduled",
            {"regarding": {"kind": "Pod", "name": "p"}, "reportingController": "sched", "reason": "Scheduled"},
            True,
            id="events-v1",
        ),
        pytest.param("configmaps", "", "metadata.name=a\\,b", {"metadata": {"name": "a,b"}}, True, id="escaped-comma"),
        pytest.param("configmaps", "", "", {}, True, id="empty"),
    ],
)
def test_field_selector_cases(resource: str, group: str, text: str, obj: dict[str, Any], expected: bool) -> None:
    """Supported fields of each kind compare as strings, with missing values as "" and booleans as true/false."""
    assert parse_field_selector(text, resource, group=group).matches(obj) is expected


@pytest.mark.parametrize(
    ("resource", "text", "field"),
    [
        ("pods", "status.hostIP=1.2.3.4", "status.hostIP"),
        ("nodes", "metadata.namespace=x", "metadata.namespace"),
        ("namespaces", "metadata.namespace=x", "metadata.namespace"),
        ("configmaps", "data.a=b", "data.a"),
        ("secrets", "status.phase=x", "status.phase"),
        ("events", "regarding.name=x", "regarding.name"),
    ],
)
def test_field_selector_unsupported_field(resource: str, text: str, field: str) -> None:
    """A field the real server does not index is rejected with its exact message."""
    with pytest.raises(SelectorError) as info:
        parse_field_selector(text, resource)
    assert str(info.value) == f"field label not supported: {field}"


def test_field_selector_custom_resources() -> None:
    """Custom resources support metadata fields and their CRD selectableFields, nothing else."""
    obj = {"metadata": {"name": "a", "namespace": "n"}, "spec": {"color": "red"}}
    selector = parse_field_selector(
        "spec.color=red,metadata.name=a", "things", is_custom=True, selectable_fields=[".spec.color"]
    )
    assert selector.matches(obj)
    with pytest.raises(SelectorError, match=r"field label not supported: spec\.size"):
        parse_field_selector("spec.size=1", "things", is_custom=True, selectable_fields=[".spec.color"])


def test_field_selector_rejects_garbage() -> None:
    """A term without an operator is a parse error."""
    with pytest.raises(SelectorError, match="can't understand"):
        parse_field_selector("metadata.name", "pods")


@given(st.text(max_size=6), st.sampled_from(["=", "==", "!="]))
def test_field_selector_string_round_trips(value: str, op: str) -> None:
    """Any value, escaped in the query syntax, parses and prints back to an equivalent selector."""
    escaped = value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
    selector = parse_field_selector(f"metadata.name{op}{escaped}", "configmaps")
    obj = {"metadata": {"name": value.strip()}}
    assert selector.matches(obj) == (op != "!=")
    assert str(parse_field_selector(str(selector), "configmaps")) == str(selector)


def test_field_selector_required_value() -> None:
    """Only an equality term yields a required value."""
    selector = parse_field_selector("metadata.name=x,spec.nodeName!=", "pods")
    assert selector.required_value("metadata.name") == "x"
    assert selector.required_value("spec.nodeName") is None
    assert not selector.empty
