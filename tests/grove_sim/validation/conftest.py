"""Helpers for the validation tests: what a kube-apiserver refusal looks like, checked in one place."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio.client.rest import ApiException

Refusal = Callable[[ApiException, str, str, str], dict[str, Any]]


def check_refusal(exc: ApiException, subject: str, field: str, detail: str) -> dict[str, Any]:
    """A 422 ``Status`` with reason Invalid naming ``subject`` (``Pod "x"``), with (field, detail) among its causes
    and ``<field>: <detail>`` in its message, as kube-apiserver answers."""
    status: dict[str, Any] = json.loads(exc.body)
    assert exc.status == 422, status
    assert (status["kind"], status["status"], status["reason"], status["code"]) == ("Status", "Failure", "Invalid", 422)
    causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    assert (field, detail) in causes, causes
    assert status["message"].startswith(f"{subject} is invalid: "), status["message"]
    assert f"{field}: {detail}" in status["message"], status["message"]
    return status


@pytest.fixture
def refused() -> Refusal:
    """``check_refusal`` for tests."""
    return check_refusal
