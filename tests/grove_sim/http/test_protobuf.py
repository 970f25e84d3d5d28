"""Kubernetes protobuf request bodies: real kubectl captures and bodies built by a tiny test-only encoder."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_sim.http.protobuf import MAGIC, ProtobufError, decode_k8s_protobuf, supported_kinds

FIXTURES = Path(__file__).parent.parent / "fixtures"
CAPTURES = sorted(FIXTURES.glob("kubectl132-*.bin"))

# ---------------------------------------------------------------------------------------------------------------------
# A tiny encoder: just enough protobuf to build bodies the way Go's generated marshallers do.


def varint(value: int) -> bytes:
    """Base-128 varint; negative numbers as 64-bit two's complement, like Go's int32/int64."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def vint(number: int, value: int) -> bytes:
    """A varint field."""
    return varint(number << 3) + varint(value)


def ld(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def entries(number: int, mapping: dict[str, str]) -> bytes:
    """A map<string, string> field."""
    return b"".join(ld(number, ld(1, k) + ld(2, v)) for k, v in mapping.items())


def envelope(kind: str, raw: bytes, api_version: str = "v1", encoding: str = "") -> bytes:
    """The ``k8s\\0`` + runtime.Unknown envelope."""
    return MAGIC + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw) + ld(3, encoding) + ld(4, "")


def quantity_map(number: int, mapping: dict[str, str]) -> bytes:
    """A map<string, Quantity> field."""
    return b"".join(ld(number, ld(1, k) + ld(2, ld(1, v))) for k, v in mapping.items())


UNKNOWN_FIELDS = vint(99, 7) + varint(98 << 3 | 1) + b"\0" * 8 + ld(97, b"junk") + varint(96 << 3 | 5) + b"\0" * 4


# ---------------------------------------------------------------------------------------------------------------------
# Real captures


@pytest.mark.parametrize("body_path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_kubectl_capture_decodes_to_the_json_kubectl_131_sends(body_path: Path) -> None:
    """A protobuf body from kubectl 1.32 decodes to exactly the JSON body kubectl 1.31 sends for the same command."""
    expected = json.loads(FIXTURES.joinpath(body_path.stem.replace("kubectl132", "kubectl131") + ".json").read_text())
    assert expected["metadata"]["creationTimestamp"] is None
    assert decode_k8s_protobuf(body_path.read_bytes()) == without_null_timestamps(expected)


def without_null_timestamps(value: Any) -> Any:
    """The JSON body minus the ``null`` entries Go writes for the zero time (``creationTimestamp``) and for nil
    slices without ``omitempty`` (a review's ``status.resourceRules``): protobuf has no null."""
    if isinstance(value, dict):
        return {k: without_null_timestamps(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_null_timestamps(v) for v in value]
    return value


def test_captures_cover_every_generator_kind() -> None:
    """The captured fixtures cover every supported kind except Pod (kubectl run sends JSON)."""
    captured = {(body["apiVersion"], body["kind"]) for body in map(decode_k8s_protobuf, map(Path.read_bytes, CAPTURES))}
    assert captured == supported_kinds() - {("v1", "Pod")}


def test_secret_and_binary_data_are_base64() -> None:
    """Secret data and ConfigMap binaryData bytes come out base64-encoded, as JSON carries them."""
    secret = decode_k8s_protobuf(FIXTURES.joinpath("kubectl132-secret-s.bin").read_bytes())
    assert base64.b64decode(secret["data"]["a"]) == b"b"
    config_map = decode_k8s_protobuf(FIXTURES.joinpath("kubectl132-configmap-cm.bin").read_bytes())
    assert base64.b64decode(config_map["binaryData"]["bin"]) == b"\xff\x00\x01"


# ---------------------------------------------------------------------------------------------------------------------
# Encoded bodies


def pod_body() -> bytes:
    """A Pod as a Go client would marshal it, empty scalars included."""
    meta = (
        ld(1, "p")
        + ld(2, "")
        + ld(3, "ns")
        + vint(7, 0)
        + ld(8, b"")
        + entries(11, {"run": "p"})
        + entries(12, {"a": "b"})
        + ld(13, ld(5, "v1") + ld(1, "Node") + ld(3, "n") + ld(4, "u1") + vint(6, 1))
        + ld(14, "f1")
        + ld(14, "f2")
    )
    container = (
        ld(1, "p")
        + ld(2, "busybox")
        + ld(3, "sh")
        + ld(4, "-c")
        + ld(4, "sleep 1")
        + ld(5, "")
        + ld(6, ld(1, "") + vint(2, 0) + vint(3, 80) + ld(4, "TCP"))
        + ld(7, ld(1, "A") + ld(2, "1"))
        + ld(7, ld(1, "B") + ld(3, ld(4, ld(1, ld(1, "sec")) + ld(2, "key"))))
        + ld(8, quantity_map(1, {"nvidia.com/gpu": "1"}) + quantity_map(2, {"cpu": "100m", "memory": "64Mi"}))
        + ld(9, ld(1, "data") + ld(3, "/data") + vint(2, 0))
        + ld(13, "/dev/termination-log")
        + ld(20, "File")
        + ld(14, "IfNotPresent")
        + vint(16, 0)
        + UNKNOWN_FIELDS
    )
    spec = (
        ld(2, container)
        + ld(3, "Never")
        + vint(4, 30)
        + ld(6, "ClusterFirst")
        + entries(7, {"gpu": "true"})
        + ld(10, "")
        + vint(11, 0)
        + ld(19, "grove-scheduler")
        + ld(22, ld(1, "k") + ld(2, "Exists") + ld(4, "NoSchedule"))
        + vint(25, -5)
        + ld(38, ld(1, "grove.io/podgang-pending-creation"))
    )
    return envelope("Pod", ld(1, meta) + ld(2, spec) + ld(3, ld(1, "Pending") + ld(7, vint(1, 0))))


def test_pod_decodes_like_its_json() -> None:
    """A Pod body decodes to its JSON form: empty scalars dropped, pointers and messages kept, unknowns skipped."""
    assert decode_k8s_protobuf(pod_body()) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "labels": {"run": "p"},
            "annotations": {"a": "b"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u1", "controller": True}],
            "finalizers": ["f1", "f2"],
        },
        "spec": {
            "containers": [
                {
                    "name": "p",
                    "image": "busybox",
                    "command": ["sh"],
                    "args": ["-c", "sleep 1"],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [
                        {"name": "A", "value": "1"},
                        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "key"}}},
                    ],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "100m", "memory": "64Mi"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "nodeSelector": {"gpu": "true"},
            "schedulerName": "grove-scheduler",
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "priority": -5,
            "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}],
        },
        "status": {"phase": "Pending"},
    }


def test_pointer_fields_keep_zero_values() -> None:
    """Fields Go declares as pointers keep explicit false/0 values, which JSON would carry too."""
    meta = ld(1, "cm") + vint(10, 0) + ld(9, vint(1, 1_700_000_000) + vint(2, 5))
    body = envelope("ConfigMap", ld(1, meta) + vint(4, 0))
    assert decode_k8s_protobuf(body) == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "cm", "deletionGracePeriodSeconds": 0, "deletionTimestamp": "2023-11-14T22:13:20Z"},
        "immutable": False,
    }


label_values = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)


@given(st.dictionaries(st.text(min_size=1, max_size=8), label_values, max_size=5), st.binary(max_size=16))
def test_configmap_round_trip(data: dict[str, str], blob: bytes) -> None:
    """Any string map and binary value survive encoding and decoding."""
    raw = ld(1, ld(1, "cm")) + entries(2, data) + ld(3, ld(1, "b") + ld(2, blob))
    decoded = decode_k8s_protobuf(envelope("ConfigMap", raw))
    assert decoded.get("data", {}) == data
    assert base64.b64decode(decoded["binaryData"]["b"]) == blob


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b'{"kind":"Namespace"}', "magic", id="json"),
        pytest.param(envelope("Job", b"", api_version="batch/v1"), "not supported", id="unsupported-kind"),
        pytest.param(envelope("Namespace", b"", encoding="gzip"), "content encoding", id="encoded"),
        pytest.param(MAGIC + b"\x0a\x05ab", "truncated", id="truncated"),
        pytest.param(MAGIC + b"\x0b", "wire type", id="group-wire-type"),
        pytest.param(MAGIC + b"\x08" + b"\xff" * 11, "varint", id="long-varint"),
        pytest.param(envelope("Namespace", ld(1, ld(1, b"\xff"))), "UTF-8", id="bad-utf8"),
        pytest.param(envelope("Namespace", vint(1, 5)), "length-delimited", id="wrong-wire-type"),
    ],
)
def test_malformed_bodies_raise(body: bytes, message: str) -> None:
    """Malformed or unsupported bodies raise ProtobufError with a helpful message."""
    with pytest.raises(ProtobufError, match=message):
        decode_k8s_protobuf(body)
