"""Decode the Kubernetes protobuf request bodies that kubectl >= 1.32 sends, into the JSON dicts the server stores.

``kubectl create namespace|configmap|secret|serviceaccount|service|quota|role|clusterrole|rolebinding|
clusterrolebinding|priorityclass|deployment`` POST ``application/vnd.kubernetes.protobuf`` and fail outright on 415
(apiserver-notes §0.2, §2.11), so the server must read these bodies (``kubectl run`` sends JSON). A body is the magic
``k8s\\x00`` followed by a ``runtime.Unknown`` whose ``raw`` field holds the object message. Field numbers below are
those of the ``k8s.io/api`` and ``k8s.io/apimachinery`` ``generated.proto`` files as compiled into kubectl 1.32.

Go's protobuf marshalling writes every non-pointer scalar, even when empty, while its JSON marshalling omits empty
``omitempty`` fields. To produce the dict a JSON client would have sent, empty scalars are dropped unless the field
is marked ``keep`` (pointer fields and the few fields without ``omitempty``); nested messages are always kept, as Go
JSON never omits a struct. Field numbers that no table lists are skipped.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

__all__ = ["MAGIC", "ProtobufError", "decode_k8s_protobuf", "supported_kinds"]

MAGIC: Final = b"k8s\x00"


class ProtobufError(ValueError):
    """A body that is not a well-formed Kubernetes protobuf envelope of a supported kind."""


@dataclass(frozen=True, slots=True)
class _F:
    """How one protobuf field maps to JSON: its name, value kind, message type and emptiness rule."""

    name: str
    kind: (
        str  # str | bytes | int | bool | time | quantity | intorstr | fieldsv1 | msg | inline | map | map_bytes | map_q
    )
    msg: str = ""
    repeated: bool = False
    keep: bool = False


def _s(name: str, *, keep: bool = False, rep: bool = False) -> _F:
    """A string field."""
    return _F(name, "str", repeated=rep, keep=keep)


def _i(name: str, *, keep: bool = False) -> _F:
    """An int32/int64 field."""
    return _F(name, "int", keep=keep)


def _b(name: str, *, keep: bool = False) -> _F:
    """A bool field."""
    return _F(name, "bool", keep=keep)


def _m(name: str, msg: str, *, rep: bool = False) -> _F:
    """A nested message field."""
    return _F(name, "msg", msg=msg, repeated=rep)


_META: Final = _m("metadata", "ObjectMeta")
_LOCAL_REF: Final = _F("", "inline", msg="LocalObjectReference")

_MESSAGES: Final[dict[str, dict[int, _F]]] = {
    "ObjectMeta": {
        1: _s("name"),
        2: _s("generateName"),
        3: _s("namespace"),
        4: _s("selfLink"),
        5: _s("uid"),
        6: _s("resourceVersion"),
        7: _i("generation"),
        8: _F("creationTimestamp", "time"),
        9: _F("deletionTimestamp", "time"),
        10: _i("deletionGracePeriodSeconds", keep=True),
        11: _F("labels", "map"),
        12: _F("annotations", "map"),
        13: _m("ownerReferences", "OwnerReference", rep=True),
        14: _s("finalizers", rep=True),
        17: _m("managedFields", "ManagedFieldsEntry", rep=True),
    },
    "OwnerReference": {
        5: _s("apiVersion", keep=True),
        1: _s("kind", keep=True),
        3: _s("name", keep=True),
        4: _s("uid", keep=True),
        6: _b("controller", keep=True),
        7: _b("blockOwnerDeletion", keep=True),
    },
    "ManagedFieldsEntry": {
        1: _s("manager"),
        2: _s("operation"),
        3: _s("apiVersion"),
        4: _F("time", "time"),
        6: _s("fieldsType"),
        7: _F("fieldsV1", "fieldsv1"),
        8: _s("subresource"),
    },
    "Condition": {
        1: _s("type", keep=True),
        2: _s("status", keep=True),
        3: _i("observedGeneration"),
        4: _F("lastTransitionTime", "time"),
        5: _s("reason", keep=True),
        6: _s("message", keep=True),
    },
    "LocalObjectReference": {1: _s("name")},
    "ObjectReference": {
        1: _s("kind"),
        2: _s("namespace"),
        3: _s("name"),
        4: _s("uid"),
        5: _s("apiVersion"),
        6: _s("resourceVersion"),
        7: _s("fieldPath"),
    },
    # Namespace, ConfigMap, Secret, ServiceAccount
    "Namespace": {1: _META, 2: _m("spec", "NamespaceSpec"), 3: _m("status", "NamespaceStatus")},
    "NamespaceSpec": {1: _s("finalizers", rep=True)},
    "NamespaceStatus": {1: _s("phase"), 2: _m("conditions", "NamespaceCondition", rep=True)},
    "NamespaceCondition": {
        1: _s("type", keep=True),
        2: _s("status", keep=True),
        4: _F("lastTransitionTime", "time"),
        5: _s("reason"),
        6: _s("message"),
    },
    "ConfigMap": {1: _META, 2: _F("data", "map"), 3: _F("binaryData", "map_bytes"), 4: _b("immutable", keep=True)},
    "Secret": {
        1: _META,
        2: _F("data", "map_bytes"),
        3: _s("type"),
        4: _F("stringData", "map"),
        5: _b("immutable", keep=True),
    },
    "ServiceAccount": {
        1: _META,
        2: _m("secrets", "ObjectReference", rep=True),
        3: _m("imagePullSecrets", "LocalObjectReference", rep=True),
        4: _b("automountServiceAccountToken", keep=True),
    },
    # Service
    "Service": {1: _META, 2: _m("spec", "ServiceSpec"), 3: _m("status", "ServiceStatus")},
    "ServiceSpec": {
        1: _m("ports", "ServicePort", rep=True),
        2: _F("selector", "map"),
        3: _s("clusterIP"),
        18: _s("clusterIPs", rep=True),
        4: _s("type"),
        5: _s("externalIPs", rep=True),
        7: _s("sessionAffinity"),
        8: _s("loadBalancerIP"),
        9: _s("loadBalancerSourceRanges", rep=True),
        10: _s("externalName"),
        11: _s("externalTrafficPolicy"),
        12: _i("healthCheckNodePort"),
        13: _b("publishNotReadyAddresses"),
        19: _s("ipFamilies", rep=True),
        17: _s("ipFamilyPolicy", keep=True),
        20: _b("allocateLoadBalancerNodePorts", keep=True),
        21: _s("loadBalancerClass", keep=True),
        22: _s("internalTrafficPolicy", keep=True),
        23: _s("trafficDistribution", keep=True),
    },
    "ServicePort": {
        1: _s("name"),
        2: _s("protocol"),
        6: _s("appProtocol", keep=True),
        3: _i("port", keep=True),
        4: _F("targetPort", "intorstr"),
        5: _i("nodePort"),
    },
    "ServiceStatus": {1: _m("loadBalancer", "LoadBalancerStatus"), 2: _m("conditions", "Condition", rep=True)},
    "LoadBalancerStatus": {1: _m("ingress", "LoadBalancerIngress", rep=True)},
    "LoadBalancerIngress": {1: _s("ip"), 2: _s("hostname"), 3: _s("ipMode", keep=True)},
    # Pod (kubectl 1.32/1.33 ``run`` sends JSON, but other protobuf clients send pods)
    "Pod": {1: _META, 2: _m("spec", "PodSpec"), 3: _m("status", "PodStatus")},
    "PodSpec": {
        20: _m("initContainers", "Container", rep=True),
        2: _m("containers", "Container", rep=True),
        3: _s("restartPolicy"),
        4: _i("terminationGracePeriodSeconds", keep=True),
        5: _i("activeDeadlineSeconds", keep=True),
        6: _s("dnsPolicy"),
        7: _F("nodeSelector", "map"),
        8: _s("serviceAccountName"),
        9: _s("serviceAccount"),
        21: _b("automountServiceAccountToken", keep=True),
        10: _s("nodeName"),
        11: _b("hostNetwork"),
        12: _b("hostPID"),
        13: _b("hostIPC"),
        27: _b("shareProcessNamespace", keep=True),
        15: _m("imagePullSecrets", "LocalObjectReference", rep=True),
        16: _s("hostname"),
        17: _s("subdomain"),
        19: _s("schedulerName"),
        22: _m("tolerations", "Toleration", rep=True),
        23: _m("hostAliases", "HostAlias", rep=True),
        24: _s("priorityClassName"),
        25: _i("priority", keep=True),
        28: _m("readinessGates", "PodReadinessGate", rep=True),
        29: _s("runtimeClassName", keep=True),
        30: _b("enableServiceLinks", keep=True),
        31: _s("preemptionPolicy", keep=True),
        32: _F("overhead", "map_q"),
        35: _b("setHostnameAsFQDN", keep=True),
        37: _b("hostUsers", keep=True),
        38: _m("schedulingGates", "PodSchedulingGate", rep=True),
        40: _m("resources", "ResourceRequirements"),
    },
    "Container": {
        1: _s("name", keep=True),
        2: _s("image"),
        3: _s("command", rep=True),
        4: _s("args", rep=True),
        5: _s("workingDir"),
        6: _m("ports", "ContainerPort", rep=True),
        19: _m("envFrom", "EnvFromSource", rep=True),
        7: _m("env", "EnvVar", rep=True),
        8: _m("resources", "ResourceRequirements"),
        24: _s("restartPolicy", keep=True),
        9: _m("volumeMounts", "VolumeMount", rep=True),
        13: _s("terminationMessagePath"),
        20: _s("terminationMessagePolicy"),
        14: _s("imagePullPolicy"),
        16: _b("stdin"),
        17: _b("stdinOnce"),
        18: _b("tty"),
    },
    "ContainerPort": {
        1: _s("name"),
        2: _i("hostPort"),
        3: _i("containerPort", keep=True),
        4: _s("protocol"),
        5: _s("hostIP"),
    },
    "EnvVar": {1: _s("name", keep=True), 2: _s("value"), 3: _m("valueFrom", "EnvVarSource")},
    "EnvVarSource": {
        1: _m("fieldRef", "ObjectFieldSelector"),
        2: _m("resourceFieldRef", "ResourceFieldSelector"),
        3: _m("configMapKeyRef", "KeySelector"),
        4: _m("secretKeyRef", "KeySelector"),
    },
    "ObjectFieldSelector": {1: _s("apiVersion"), 2: _s("fieldPath", keep=True)},
    "ResourceFieldSelector": {1: _s("containerName"), 2: _s("resource", keep=True), 3: _F("divisor", "quantity")},
    "KeySelector": {1: _LOCAL_REF, 2: _s("key", keep=True), 3: _b("optional", keep=True)},
    "EnvFromSource": {1: _s("prefix"), 2: _m("configMapRef", "RefSource"), 3: _m("secretRef", "RefSource")},
    "RefSource": {1: _LOCAL_REF, 2: _b("optional", keep=True)},
    "ResourceRequirements": {
        1: _F("limits", "map_q"),
        2: _F("requests", "map_q"),
        3: _m("claims", "ResourceClaim", rep=True),
    },
    "ResourceClaim": {1: _s("name", keep=True), 2: _s("request")},
    "VolumeMount": {
        1: _s("name", keep=True),
        2: _b("readOnly"),
        7: _s("recursiveReadOnly", keep=True),
        3: _s("mountPath", keep=True),
        4: _s("subPath"),
        5: _s("mountPropagation", keep=True),
        6: _s("subPathExpr"),
    },
    "Toleration": {
        1: _s("key"),
        2: _s("operator"),
        3: _s("value"),
        4: _s("effect"),
        5: _i("tolerationSeconds", keep=True),
    },
    "HostAlias": {1: _s("ip", keep=True), 2: _s("hostnames", rep=True)},
    "PodReadinessGate": {1: _s("conditionType", keep=True)},
    "PodSchedulingGate": {1: _s("name", keep=True)},
    "PodStatus": {
        1: _s("phase"),
        2: _m("conditions", "PodCondition", rep=True),
        3: _s("message"),
        4: _s("reason"),
        11: _s("nominatedNodeName"),
        5: _s("hostIP"),
        6: _s("podIP"),
        7: _F("startTime", "time"),
        9: _s("qosClass"),
    },
    # rbac.authorization.k8s.io/v1, scheduling.k8s.io/v1, ResourceQuota and apps/v1 Deployment (kubectl create)
    "Role": {1: _META, 2: _m("rules", "PolicyRule", rep=True)},
    "ClusterRole": {1: _META, 2: _m("rules", "PolicyRule", rep=True), 3: _m("aggregationRule", "AggregationRule")},
    "PolicyRule": {
        1: _s("verbs", rep=True, keep=True),
        2: _s("apiGroups", rep=True),
        3: _s("resources", rep=True),
        4: _s("resourceNames", rep=True),
        5: _s("nonResourceURLs", rep=True),
    },
    "AggregationRule": {1: _m("clusterRoleSelectors", "LabelSelector", rep=True)},
    "RoleBinding": {1: _META, 2: _m("subjects", "Subject", rep=True), 3: _m("roleRef", "RoleRef")},
    "ClusterRoleBinding": {1: _META, 2: _m("subjects", "Subject", rep=True), 3: _m("roleRef", "RoleRef")},
    "Subject": {1: _s("kind", keep=True), 2: _s("apiGroup"), 3: _s("name", keep=True), 4: _s("namespace")},
    "RoleRef": {1: _s("apiGroup", keep=True), 2: _s("kind", keep=True), 3: _s("name", keep=True)},
    "PriorityClass": {
        1: _META,
        2: _i("value", keep=True),
        3: _b("globalDefault"),
        4: _s("description"),
        5: _s("preemptionPolicy", keep=True),
    },
    "ResourceQuota": {1: _META, 2: _m("spec", "ResourceQuotaSpec"), 3: _m("status", "ResourceQuotaStatus")},
    "ResourceQuotaSpec": {
        1: _F("hard", "map_q"),
        2: _s("scopes", rep=True),
        3: _m("scopeSelector", "ScopeSelector"),
    },
    "ScopeSelector": {1: _m("matchExpressions", "ScopedResourceSelectorRequirement", rep=True)},
    "ScopedResourceSelectorRequirement": {
        1: _s("scopeName", keep=True),
        2: _s("operator", keep=True),
        3: _s("values", rep=True),
    },
    "ResourceQuotaStatus": {1: _F("hard", "map_q"), 2: _F("used", "map_q")},
    "LabelSelector": {1: _F("matchLabels", "map"), 2: _m("matchExpressions", "LabelSelectorRequirement", rep=True)},
    "LabelSelectorRequirement": {1: _s("key", keep=True), 2: _s("operator", keep=True), 3: _s("values", rep=True)},
    "Deployment": {1: _META, 2: _m("spec", "DeploymentSpec"), 3: _m("status", "DeploymentStatus")},
    "DeploymentSpec": {
        1: _i("replicas", keep=True),
        2: _m("selector", "LabelSelector"),
        3: _m("template", "PodTemplateSpec"),
        4: _m("strategy", "DeploymentStrategy"),
        5: _i("minReadySeconds"),
        6: _i("revisionHistoryLimit", keep=True),
        7: _b("paused"),
        9: _i("progressDeadlineSeconds", keep=True),
    },
    "PodTemplateSpec": {1: _META, 2: _m("spec", "PodSpec")},
    "DeploymentStrategy": {1: _s("type"), 2: _m("rollingUpdate", "RollingUpdateDeployment")},
    "RollingUpdateDeployment": {1: _F("maxUnavailable", "intorstr"), 2: _F("maxSurge", "intorstr")},
    "DeploymentStatus": {
        1: _i("observedGeneration"),
        2: _i("replicas"),
        3: _i("updatedReplicas"),
        7: _i("readyReplicas"),
        4: _i("availableReplicas"),
        5: _i("unavailableReplicas"),
        8: _i("collisionCount", keep=True),
    },
    "PodCondition": {
        1: _s("type", keep=True),
        2: _s("status", keep=True),
        3: _F("lastProbeTime", "time"),
        4: _F("lastTransitionTime", "time"),
        5: _s("reason"),
        6: _s("message"),
    },
}

# The (apiVersion, kind) pairs a body may carry: what ``kubectl create <generator>`` sends, plus Pod.
_TOP_LEVEL: Final = frozenset(
    {("v1", kind) for kind in ("Namespace", "ConfigMap", "Secret", "ServiceAccount", "Service", "Pod", "ResourceQuota")}
    | {("rbac.authorization.k8s.io/v1", kind) for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")}
    | {("scheduling.k8s.io/v1", "PriorityClass"), ("apps/v1", "Deployment")}
)


def supported_kinds() -> frozenset[tuple[str, str]]:
    """The ``(apiVersion, kind)`` pairs whose protobuf bodies can be decoded."""
    return _TOP_LEVEL


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


def _scalar(field: _F, raw: int | bytes) -> Any:
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
    table = _MESSAGES[name]
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
    if (api_version, kind) not in _TOP_LEVEL:
        raise ProtobufError(f"protobuf bodies of {api_version or '?'}/{kind or '?'} are not supported")
    return {"kind": kind, "apiVersion": api_version, **_message(raw, kind)}
