"""grove_runtime.webhook: JSON patches, reviews, handlers, certificates and the HTTPS server, without a cluster."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import ssl
from typing import Any

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from grove_runtime.webhook import certs
from grove_runtime.webhook.handlers import (
    DefaultingHandler,
    Denied,
    ValidatingHandler,
    Warnings,
    dict_codec,
    safe_handle,
)
from grove_runtime.webhook.jsonpatch import create_patch
from grove_runtime.webhook.review import AdmissionRequest, ReviewError, invalid_status, review_response
from grove_runtime.webhook.server import WebhookServer
from grove_sim.machinery.patch import json_patch

Obj = dict[str, Any]
NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab/~", max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab/~", max_size=3), inner, max_size=3),
    max_leaves=12,
)


@given(json_values, json_values)
def test_patch_turns_the_original_into_the_modified(original: Any, modified: Any) -> None:
    """Applying the created patch to the original gives exactly the modified document."""
    assert json_patch(original, create_patch(original, modified)) == modified


def test_patch_of_equal_documents_is_empty_and_keys_are_escaped() -> None:
    """No change, no operation; ``/`` and ``~`` in keys are escaped (RFC 6901)."""
    assert create_patch({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == []
    assert create_patch({}, {"x/y~z": 1}) == [{"op": "add", "path": "/x~1y~0z", "value": 1}]


def _review(operation: str = "CREATE", obj: Obj | None = None, old: Obj | None = None) -> Obj:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "operation": operation,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "name": "cm",
            "namespace": "ns",
            "userInfo": {"username": "alice"},
            "object": obj,
            "oldObject": old,
        },
    }


def test_review_decoding_refuses_what_is_not_a_v1_review() -> None:
    """A body without a request uid, or of another version, is refused with a reason."""
    assert AdmissionRequest.from_review(_review(obj={"a": 1})).username == "alice"
    for body in ({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1"}, {"kind": "Pod"}, []):
        with pytest.raises(ReviewError):
            AdmissionRequest.from_review(body)


def test_invalid_status_is_the_api_servers_wording() -> None:
    """One cause is named inline, several in brackets, each also in details.causes."""
    one = invalid_status("grove.io", "PodCliqueSet", "x", [("spec.replicas", "Invalid", "must be >= 0")])
    assert one["message"] == 'PodCliqueSet.grove.io "x" is invalid: spec.replicas: Invalid value: must be >= 0'
    two = invalid_status("", "ConfigMap", "c", [("a", "Required", "r"), ("b", "Forbidden", "f")])
    assert two["message"] == 'ConfigMap "c" is invalid: [a: Required value: r, b: Forbidden: f]'
    assert [c["reason"] for c in two["details"]["causes"]] == ["FieldValueRequired", "FieldValueForbidden"]
    assert two["code"] == 422


class _Labeller:
    async def default(self, request: AdmissionRequest, obj: Obj) -> Warnings:
        obj.setdefault("metadata", {}).setdefault("labels", {})["defaulted"] = "yes"
        return ["labelled"]


class _NoDots:
    async def validate_create(self, request: AdmissionRequest, obj: Obj) -> Warnings:
        if "." in obj["metadata"]["name"]:
            raise Denied(
                invalid_status("", "ConfigMap", obj["metadata"]["name"], [("metadata.name", "Invalid", "dot")])
            )
        return ["checked"]

    async def validate_update(self, request: AdmissionRequest, old: Obj, new: Obj) -> Warnings:
        raise RuntimeError("boom")

    async def validate_delete(self, request: AdmissionRequest, obj: Obj) -> Warnings:
        return ()


async def test_defaulting_answers_with_the_patch_and_validating_with_status_or_warnings() -> None:
    """The defaulter's change is a JSON patch; a denial keeps its Status; a crash is a 500 refusal."""
    request = AdmissionRequest.from_review(_review(obj={"metadata": {"name": "a.b"}}))
    defaulted = await safe_handle("d", DefaultingHandler(_Labeller(), dict_codec()), request)
    assert defaulted.allowed
    assert defaulted.warnings == ("labelled",)
    assert json_patch(request.object, list(defaulted.patch)) == {
        "metadata": {"name": "a.b", "labels": {"defaulted": "yes"}}
    }
    validator = ValidatingHandler(_NoDots(), dict_codec())
    refused = await safe_handle("v", validator, request)
    assert (refused.allowed, (refused.status or {})["code"]) == (False, 422)
    crashed = await safe_handle("v", validator, AdmissionRequest.from_review(_review("UPDATE", {"a": 1}, {"a": 2})))
    assert (crashed.allowed, (crashed.status or {})["code"]) == (False, 500)
    encoded = review_response("u-1", defaulted)["response"]
    assert encoded["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(encoded["patch"])) == list(defaulted.patch)


def test_serving_certificate_names_and_renewal() -> None:
    """The serving certificate names what it was issued for; renewal is due after two thirds of its lifetime."""
    bundle = certs.issue(["svc.ns.svc", "127.0.0.1"], NOW)
    assert certs.covers(bundle.cert, ["svc.ns.svc", "127.0.0.1"])
    assert not certs.covers(bundle.cert, ["other.ns.svc"])
    assert not certs.renewal_due(bundle.cert, NOW + dt.timedelta(days=200))
    assert certs.renewal_due(bundle.cert, NOW + dt.timedelta(days=250))
    assert not certs.renewal_due(bundle.ca_cert, NOW + dt.timedelta(days=2000))
    assert set(certs.names_of(bundle.cert)) == {"svc.ns.svc", "127.0.0.1"}


async def _post(port: int, ca: bytes, server_name: str, body: Any) -> tuple[int, Any]:
    context = ssl.create_default_context(cadata=ca.decode())
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"https://127.0.0.1:{port}/v", json=body, ssl=context, server_hostname=server_name) as response,
    ):
        text = await response.text()
        return response.status, json.loads(text) if response.status == 200 else text


async def test_server_speaks_tls_verified_by_the_ca_and_counts_reviews() -> None:
    """A client trusting only the CA reaches the server by a name in the certificate, not by another; a bad body
    is a 400; answered reviews are counted by webhook and verdict."""
    registry = CollectorRegistry()
    server = WebhookServer(port=0, prefix="test", registry=registry)
    server.register("/v", "no-dots", ValidatingHandler(_NoDots(), dict_codec()))
    bundle = certs.issue(["hooks.ns.svc", "127.0.0.1"], dt.datetime.now(dt.UTC))
    server.load_certificate(bundle.cert, bundle.key)
    await server.start()
    try:
        status, answer = await _post(
            server.port, bundle.ca_cert, "hooks.ns.svc", _review(obj={"metadata": {"name": "a"}})
        )
        assert status == 200
        assert answer["response"] == {"uid": "u-1", "allowed": True, "warnings": ["checked"]}
        assert (await _post(server.port, bundle.ca_cert, "127.0.0.1", {"kind": "Nope"}))[0] == 400
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await _post(server.port, bundle.ca_cert, "elsewhere.ns.svc", _review())
        other = certs.issue(["hooks.ns.svc"], dt.datetime.now(dt.UTC))
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await _post(server.port, other.ca_cert, "hooks.ns.svc", _review())
        assert registry.get_sample_value("test_webhook_requests_total", {"webhook": "no-dots", "allowed": "true"}) == 1
    finally:
        await server.stop()
    await asyncio.sleep(0)


async def test_a_new_certificate_is_served_without_a_restart() -> None:
    """After ``load_certificate`` the next handshake presents the new certificate (clients of the new CA pass)."""
    server = WebhookServer(port=0, prefix="test2", registry=CollectorRegistry())
    server.register("/v", "no-dots", ValidatingHandler(_NoDots(), dict_codec()))
    first = certs.issue(["127.0.0.1"], dt.datetime.now(dt.UTC))
    server.load_certificate(first.cert, first.key)
    await server.start()
    try:
        second = certs.issue(["127.0.0.1"], dt.datetime.now(dt.UTC))
        server.load_certificate(second.cert, second.key)
        assert (await _post(server.port, second.ca_cert, "127.0.0.1", _review(obj={"metadata": {"name": "a"}})))[
            0
        ] == 200
    finally:
        await server.stop()
