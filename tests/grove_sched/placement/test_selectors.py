"""Vectorised Kubernetes selector semantics."""

from __future__ import annotations

import pytest
from placement_kit import node

from grove_sched.model import LabelSelector, NodeSelectorTerm, Requirement, Taint, Toleration
from grove_sched.placement import (
    SelectorError,
    Snapshot,
    label_selector_mask,
    node_terms_mask,
    tolerates,
    untolerated_taints,
)

SNAP = Snapshot.build(
    [
        node("a", labels={"tier": "gold", "cores": "16"}),
        node("b", labels={"tier": "silver", "cores": "64"}),
        node("c", labels={"cores": "x"}),
    ],
    [],
)


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        pytest.param(Requirement("tier", "In", ("gold", "bronze")), [True, False, False], id="in"),
        pytest.param(Requirement("tier", "NotIn", ("gold",)), [False, True, True], id="notin-includes-missing"),
        pytest.param(Requirement("tier", "Exists"), [True, True, False], id="exists"),
        pytest.param(Requirement("tier", "DoesNotExist"), [False, False, True], id="does-not-exist"),
        pytest.param(Requirement("cores", "Gt", ("32",)), [False, True, False], id="gt-skips-non-integers"),
        pytest.param(Requirement("cores", "Lt", ("32",)), [True, False, False], id="lt"),
    ],
)
def test_node_requirement_operators(req: Requirement, expected: list[bool]) -> None:
    """Each matchExpression operator follows Kubernetes semantics."""
    assert list(node_terms_mask(SNAP, (NodeSelectorTerm((req,)),))) == expected


def test_terms_are_ored_and_match_fields_select_names() -> None:
    """Node selector terms are alternatives; matchFields metadata.name picks nodes by name."""
    terms = (
        NodeSelectorTerm((Requirement("tier", "In", ("gold",)),)),
        NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("c",)),)),
    )
    assert list(node_terms_mask(SNAP, terms)) == [True, False, True]


def test_invalid_operators_are_reported() -> None:
    """A Gt with a non-integer value is a malformed selector."""
    with pytest.raises(SelectorError, match="integer"):
        node_terms_mask(SNAP, (NodeSelectorTerm((Requirement("cores", "Gt", ("many",)),)),))


def test_pod_label_selector_combines_labels_and_expressions() -> None:
    """matchLabels and matchExpressions must all hold."""
    snap = Snapshot.build([node("a")], [])
    columns = snap.node_labels
    sel = LabelSelector({"kubernetes.io/hostname": "a"}, (Requirement("tier", "DoesNotExist"),))
    assert list(label_selector_mask(columns, sel)) == [True]


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        pytest.param(Toleration("k", "Equal", "v"), Taint("k", "v"), True, id="equal"),
        pytest.param(Toleration("k", "Equal", "w"), Taint("k", "v"), False, id="equal-other-value"),
        pytest.param(Toleration("k", "Exists"), Taint("k", "v"), True, id="exists"),
        pytest.param(Toleration("", "Exists"), Taint("k", "v", "NoExecute"), True, id="wildcard"),
        pytest.param(Toleration("k", "Exists", effect="NoExecute"), Taint("k", "v"), False, id="effect-mismatch"),
    ],
)
def test_toleration_matching(toleration: Toleration, taint: Taint, expected: bool) -> None:
    """Tolerations match taints by key, value, operator and effect."""
    assert tolerates(toleration, taint) is expected


def test_prefer_no_schedule_taints_do_not_filter() -> None:
    """Only NoSchedule and NoExecute taints exclude nodes."""
    snap = Snapshot.build(
        [node("a", taints=(Taint("soft", "", "PreferNoSchedule"),)), node("b", taints=(Taint("hard"),))], []
    )
    assert list(untolerated_taints(snap, ())) == [False, True]
