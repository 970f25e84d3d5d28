"""The defaulting webhook leaves a body of the wrong shape alone: mutation runs before the API server's schema
validation, which refuses it naming the field; a crash here was answered 500 (found by the chaos suite's fuzzing)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from grove_operator.webhooks.podcliqueset import PodCliqueSetDefaulter

CLIQUE = {"name": "a", "spec": {"roleName": "a", "replicas": 1, "podSpec": None}}


@pytest.mark.parametrize(
    "spec",
    [None, "x", [], {"replicas": 1, "template": {"cliques": [CLIQUE]}}],
)
def test_a_malformed_body_is_left_for_schema_validation(spec: Any) -> None:
    body = {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "metadata": {"name": "m"}, "spec": spec}
    before = repr(body)
    assert asyncio.run(PodCliqueSetDefaulter().default(None, body)) == ()  # type: ignore[arg-type]
    assert repr(body) == before
