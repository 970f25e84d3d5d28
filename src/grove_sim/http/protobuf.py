"""Decode the Kubernetes protobuf request bodies that kubectl >= 1.32 sends, into the JSON dicts the server stores.

``kubectl create namespace|configmap|secret|serviceaccount|service|quota|role|clusterrole|rolebinding|
clusterrolebinding|priorityclass|deployment`` POST ``application/vnd.kubernetes.protobuf`` and fail outright on 415
(apiserver-notes §0.2, §2.11), so the server must read these bodies (``kubectl run`` sends JSON). A body is the magic
``k8s\\x00`` followed by a ``runtime.Unknown`` whose ``raw`` field holds the object message. The field tables are in
``grove_sim.http.protobuf_messages``.

Go's protobuf marshalling writes every non-pointer scalar, even when empty, while its JSON marshalling omits empty
``omitempty`` fields. To produce the dict a JSON client would have sent, empty scalars are dropped unless the field
is marked ``keep`` (pointer fields and the few fields without ``omitempty``); nested messages are always kept, as Go
JSON never omits a struct. Field numbers that no table lists are skipped.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Final

from grove_sim.http.protobuf_messages import MESSAGES, Field, supported_kinds

__all__ = ["MAGIC", "ProtobufError", "decode_k8s_protobuf", "supported_kinds"]

MAGIC: Final = b"k8s\x00"


class ProtobufError(ValueError):
    """A body that is not a well-formed Kubernetes protobuf envelope of a supported kind."""


# ---------------------------------------------------------------------------------------------------------------------
# Wire format


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a base-128 varint; returns the value and the next position."""
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ProtobufError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError("varint too long")


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield ``(field number, wire type, value)``; varints and fixed ints as int, length-delimited as bytes."""
    pos = 0
    end = len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError("invalid field number 0")
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            if pos + 8 > end:
                raise ProtobufError("truncated fixed64")
            value, pos = int.from_bytes(buf[pos : pos + 8], "little"), pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > end:
                raise ProtobufError("truncated length-delimited field")
            value, pos = buf[pos : pos + length], pos + length
        elif wire == 5:
            if pos + 4 > end:
                raise ProtobufError("truncated fixed32")
            value, pos = int.from_bytes(buf[pos : pos + 4], "little"), pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        yield number, wire, value


def _signed(value: int) -> int:
    """Interpret a varint as a two's complement int64 (negative int32/int64 are sign-extended to 10 bytes)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: int | bytes) -> str:
    """A string field's UTF-8 payload."""
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtobufError("invalid UTF-8 in a string field") from exc


def _blob(value: int | bytes) -> bytes:
    """A length-delimited payload (bytes field or nested message)."""
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited field")
    return value


def _number(value: int | bytes) -> int:
    """A varint field's signed value."""
    if not isinstance(value, int):
        raise ProtobufError("expected a varint field")
    return _signed(value)


def _time(buf: bytes) -> str | None:
    """``metav1.Time`` {seconds, nanos} as RFC 3339 (second precision); the zero time is None, as in JSON."""
    seconds = 0
    for number, _wire, value in _fields(buf):
        if number == 1:
            seconds = _number(value)
    if seconds in (0, -62135596800):
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _quantity(buf: bytes) -> str:
    """``resource.Quantity`` is a message holding its canonical string in field 1."""
    text = ""
    for number, _wire, value in _fields(buf):
        if number == 1:
            text = _text(value)
    return text


def _int_or_string(buf: bytes) -> int | str:
    """``intstr.IntOrString`` {type 0=int 1=string, intVal, strVal} as a JSON number or string."""
    kind, number, text = 0, 0, ""
    for field, _wire, value in _fields(buf):
        if field == 1:
            kind = _number(value)
        elif field == 2:
            number = _number(value)
        elif field == 3:
            text = _text(value)
    return text if kind == 1 else number


def _map_entry(buf: bytes, kind: str) -> tuple[str, Any]:
    """One ``map<string, V>`` entry {1: key, 2: value}, with V a string, bytes (base64) or a Quantity."""
    key = ""
    value: Any = b"" if kind == "map_bytes" else ""
    for number, _wire, raw in _fields(buf):
        if number == 1:
            key = _text(raw)
        elif number == 2:
            if kind == "map":
                value = _text(raw)
            elif kind == "map_bytes":
                value = _blob(raw)
            else:
                value = _quantity(_blob(raw))
    if isinstance(value, bytes):
        value = base64.b64encode(value).decode("ascii")
    return key, value


def _scalar(field: Field, raw: int | bytes) -> Any:
    """Decode one non-map occurrence of a field."""
    kind = field.kind
    if kind == "str":
        return _text(raw)
    if kind == "int":
        return _number(raw)
    if kind == "bool":
        return _number(raw) != 0
    if kind == "bytes":
        return base64.b64encode(_blob(raw)).decode("ascii")
    if kind == "time":
        return _time(_blob(raw))
    if kind == "quantity":
        return _quantity(_blob(raw))
    if kind == "intorstr":
        return _int_or_string(_blob(raw))
    if kind == "fieldsv1":
        raw_json = b""
        for number, _wire, value in _fields(_blob(raw)):
            if number == 1:
                raw_json = _blob(value)
        try:
            return json.loads(raw_json) if raw_json else {}
        except ValueError as exc:
            raise ProtobufError("fieldsV1 does not hold JSON") from exc
    return _message(_blob(raw), field.msg)


_ALWAYS_KEPT: Final = frozenset({"msg", "intorstr", "inline"})


def _is_empty(value: Any) -> bool:
    """Go's ``omitempty`` notion of empty: "", 0, false, no items, or the zero time (decoded as None)."""
    return not value


def _message(buf: bytes, name: str) -> dict[str, Any]:
    """Decode a message by its table into a JSON-shaped dict."""
    table = MESSAGES[name]
    out: dict[str, Any] = {}
    for number, wire, raw in _fields(buf):
        field = table.get(number)
        if field is None:
            continue
        if field.kind.startswith("map"):
            key, value = _map_entry(_blob(raw), field.kind)
            out.setdefault(field.name, {})[key] = value
        elif field.kind == "inline":
            out.update(_message(_blob(raw), field.msg))
        elif field.repeated:
            if field.kind == "int" and wire == 2:  # packed repeated varints
                packed, pos = _blob(raw), 0
                while pos < len(packed):
                    item, pos = _varint(packed, pos)
                    out.setdefault(field.name, []).append(_signed(item))
            else:
                out.setdefault(field.name, []).append(_scalar(field, raw))
        else:
            out[field.name] = _scalar(field, raw)
    for field in table.values():
        if field.name in out and field.kind not in _ALWAYS_KEPT and not field.keep and _is_empty(out[field.name]):
            del out[field.name]
    return out


def decode_k8s_protobuf(body: bytes) -> dict[str, Any]:
    """Decode a ``application/vnd.kubernetes.protobuf`` request body into the object's JSON dict.

    The result carries ``apiVersion`` and ``kind`` from the envelope's TypeMeta. Raises ``ProtobufError`` for a bad
    envelope, an encoded (compressed) payload, malformed wire data or a kind this module cannot decode.
    """
    if not body.startswith(MAGIC):
        raise ProtobufError("body does not start with the Kubernetes protobuf magic number k8s\\x00")
    api_version = kind = encoding = ""
    raw = b""
    for number, _wire, value in _fields(body[len(MAGIC) :]):
        if number == 1:
            for meta_number, _meta_wire, meta_value in _fields(_blob(value)):
                if meta_number == 1:
                    api_version = _text(meta_value)
                elif meta_number == 2:
                    kind = _text(meta_value)
        elif number == 2:
            raw = _blob(value)
        elif number == 3:
            encoding = _text(value)
    if encoding:
        raise ProtobufError(f"unsupported protobuf content encoding {encoding!r}")
    if (api_version, kind) not in supported_kinds():
        raise ProtobufError(f"protobuf bodies of {api_version or '?'}/{kind or '?'} are not supported")
    return {"kind": kind, "apiVersion": api_version, **_message(raw, kind)}
