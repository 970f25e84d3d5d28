"""errors maps HTTP status to the exception hierarchy; keys round-trip; the package exports are sorted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import grove_runtime
from grove_runtime import errors
from grove_runtime.keys import ObjectKey


@pytest.mark.parametrize(
    ("status", "reason", "cls"),
    [
        pytest.param(404, "NotFound", errors.NotFound, id="404"),
        pytest.param(409, "Conflict", errors.Conflict, id="409"),
        pytest.param(409, "AlreadyExists", errors.AlreadyExists, id="409-exists"),
        pytest.param(410, "Expired", errors.Gone, id="410"),
        pytest.param(422, "Invalid", errors.Invalid, id="422"),
        pytest.param(403, "Forbidden", errors.Forbidden, id="403"),
        pytest.param(429, "TooManyRequests", errors.TooManyRequests, id="429"),
        pytest.param(503, "ServiceUnavailable", errors.ServerError, id="503"),
        pytest.param(418, "Teapot", errors.ClientError, id="418"),
        pytest.param(0, "", errors.ConnectionLost, id="no-status"),
    ],
)
def test_error_for_status(status: int, reason: str, cls: type[errors.ApiError]) -> None:
    """Each status (and reason) maps to its class, keeping status, reason and message."""
    exc = errors.error_for_status(status, f'{{"reason": "{reason}", "message": "m"}}', retry_after="2")
    assert type(exc) is cls
    assert exc.status == status
    assert exc.message == "m"
    assert exc.retry_after == 2.0
    assert errors.is_retryable(exc) is (status in (0, 429, 503))


def test_from_api_exception_reads_body_and_retry_after() -> None:
    """A kubernetes-asyncio ApiException is translated with its Retry-After header."""
    from kubernetes_asyncio.client import ApiException

    exc = ApiException(status=429, reason="Too Many")
    exc.body = b"not json"
    exc.headers = {"Retry-After": "3"}
    mapped = errors.from_api_exception(exc)
    assert isinstance(mapped, errors.TooManyRequests)
    assert mapped.retry_after == 3.0
    assert mapped.message == "Too Many"


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=20)


@given(st.one_of(st.just(""), names), names)
def test_object_key_round_trips(namespace: str, name: str) -> None:
    """ObjectKey.parse inverts str for namespaced and cluster-scoped keys."""
    key = ObjectKey(namespace, name)
    assert ObjectKey.parse(str(key)) == key


def test_exports_sorted_and_resolvable() -> None:
    """The package's __all__ is sorted and every name exists."""
    assert grove_runtime.__all__ == sorted(grove_runtime.__all__)
    assert all(hasattr(grove_runtime, n) for n in grove_runtime.__all__)


@given(st.tuples(names, names), st.tuples(names, names))
def test_object_key_equality_and_hash_follow_fields(a: tuple[str, str], b: tuple[str, str]) -> None:
    """Keys are equal (and hash equal) exactly when namespace and name are, and order like their tuples."""
    ka, kb = ObjectKey(*a), ObjectKey(*b)
    assert (ka == kb) is (a == b)
    if a == b:
        assert hash(ka) == hash(kb)
    assert (ka < kb) is (a < b)
    assert ka != a
