"""``$(VAR)`` expansion of a container's command and arguments, as kubelet's ``expansion.Expand`` does it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_sim.controllers.execimages import expand

ENV = {"POD_IP": "127.1.0.7", "PORT": "8080"}


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("--bind=$(POD_IP):$(PORT)", "--bind=127.1.0.7:8080"),
        ("$(MISSING) stays", "$(MISSING) stays"),
        ("$$(POD_IP) is escaped", "$(POD_IP) is escaped"),
        ("cost: $5 and $", "cost: $5 and $"),
        ("$(POD_IP", "$(POD_IP"),
    ],
)
def test_references_expand_and_the_rest_stays(text: str, expanded: str) -> None:
    assert expand(text, ENV) == expanded


@given(st.text(alphabet=st.characters(blacklist_characters="$")))
def test_text_without_references_is_unchanged(text: str) -> None:
    assert expand(text, ENV) == text
