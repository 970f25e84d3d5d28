"""`json_copy` is a deep copy of a JSON tree (finite floats: JSON has no others), whatever else the tree holds."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_runtime.jsoncopy import json_copy

_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
_trees = st.recursive(_scalars, lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids), max_leaves=30)


@given(_trees)
def test_a_copy_equals_the_tree_and_shares_no_container_with_it(tree: Any) -> None:
    """Integers beyond 64 bits go through `copy.deepcopy` (orjson refuses them); the result is the same."""
    copied = json_copy(tree)
    assert copied == tree
    assert copied == copy.deepcopy(tree)
    if isinstance(tree, (dict, list)) and tree:
        assert copied is not tree
        _mutate(copied)
        assert tree == copy.deepcopy(tree)


def _mutate(node: Any) -> None:
    if isinstance(node, dict):
        node["changed"] = True
        for value in list(node.values()):
            _mutate(value)
    elif isinstance(node, list):
        node.append("changed")
        for value in node[:-1]:
            _mutate(value)


def test_what_orjson_refuses_is_still_copied() -> None:
    tree = {"big": 2**70, "keys": {1: "one"}, "nested": [{"a": [1, 2]}]}
    copied = json_copy(tree)
    assert copied == tree
    assert copied["nested"][0] is not tree["nested"][0]
