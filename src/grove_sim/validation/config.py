"""ConfigMaps and Secrets: key names, the 1 MiB size limit, the typed-Secret keys, and ``immutable``.

Keys are config keys (alphanumerics, '-', '_', '.'; not '.' or '..'). A ConfigMap's ``data`` and ``binaryData``
share the key space and 1 MiB; a Secret's decoded ``data`` may hold 1 MiB. A typed Secret needs the keys its type
names (a ``service-account-token`` needs the ``kubernetes.io/service-account.name`` annotation). Once
``immutable: true`` is set, the data and the flag are frozen; a Secret's ``type`` never changes.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Final

from grove_sim.validation.field import Cause, DecodeError, forbidden, get_map, get_str, invalid, required, too_long
from grove_sim.validation.names import CONFIG_MAP_KEY

__all__ = [
    "validate_config_map",
    "validate_config_map_update",
    "validate_secret",
    "validate_secret_update",
]

MAX_SIZE: Final = 1024 * 1024
_IMMUTABLE: Final = "field is immutable when `immutable` is set"
_SA_NAME: Final = "kubernetes.io/service-account.name"
_REQUIRED_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}
_JSON_KEYS: Final = frozenset({".dockercfg", ".dockerconfigjson"})


def _decoded(value: Any, path: str) -> bytes:
    """A ``[]byte`` field's value: base64 in JSON."""
    if value is None:
        return b""
    if not isinstance(value, str):
        raise DecodeError(f"json: cannot unmarshal {type(value).__name__} into Go struct field {path} of type []uint8")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DecodeError(f"illegal base64 data at input byte 0 ({path}): {exc}") from None


def _keys(data: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for key in data:
        causes += [invalid(f"{path}[{key}]", key, m) for m in CONFIG_MAP_KEY.errors(key)]
    return causes


def validate_config_map(config_map: dict[str, Any]) -> list[Cause]:
    """``ValidateConfigMap`` beyond metadata."""
    data = get_map(config_map, "data", "")
    binary = get_map(config_map, "binaryData", "")
    causes = _keys(data, "data")
    causes += [invalid(f"data[{k}]", k, "duplicate of key present in binaryData") for k in data if k in binary]
    causes += _keys(binary, "binaryData")
    size = sum(len(str(v or "").encode()) for v in data.values())
    size += sum(len(_decoded(v, f"binaryData[{k}]")) for k, v in binary.items())
    if size > MAX_SIZE:
        causes.append(too_long("", MAX_SIZE))
    return causes


def _immutable(new: dict[str, Any], old: dict[str, Any], keys: tuple[str, ...]) -> list[Cause]:
    if old.get("immutable") is not True:
        return []
    causes = [] if new.get("immutable") is True else [forbidden("immutable", _IMMUTABLE)]
    return causes + [forbidden(key, _IMMUTABLE) for key in keys if (new.get(key) or {}) != (old.get(key) or {})]


def validate_config_map_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidateConfigMapUpdate``: the ``immutable`` freeze (the new object is validated as on create besides)."""
    return _immutable(new, old, ("data", "binaryData"))


def validate_secret(secret: dict[str, Any]) -> list[Cause]:
    """``ValidateSecret`` beyond metadata."""
    data = get_map(secret, "data", "")
    causes = _keys(data, "data")
    decoded = {key: _decoded(value, f"data[{key}]") for key, value in data.items()}
    if sum(len(v) for v in decoded.values()) > MAX_SIZE:
        causes.append(too_long("data", MAX_SIZE))
    kind = get_str(secret, "type", "")
    if kind == "kubernetes.io/service-account-token":
        annotations = (secret.get("metadata") or {}).get("annotations") or {}
        if not annotations.get(_SA_NAME):
            causes.append(required(f"metadata.annotations[{_SA_NAME}]"))
    elif kind == "kubernetes.io/basic-auth" and "username" not in decoded and "password" not in decoded:
        causes += [required("data[username]"), required("data[password]")]
    for key in _REQUIRED_KEYS.get(kind, ()):
        if key not in decoded or (kind == "kubernetes.io/ssh-auth" and not decoded[key]):
            causes.append(required(f"data[{key}]"))
        elif key in _JSON_KEYS:
            try:
                json.loads(decoded[key])
            except ValueError as exc:
                causes.append(invalid(f"data[{key}]", "<secret contents redacted>", str(exc)))
    return causes


def validate_secret_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidateSecretUpdate``: ``type`` never changes, and the ``immutable`` freeze."""
    causes: list[Cause] = []
    if (new.get("type") or "") != (old.get("type") or ""):
        causes.append(invalid("type", new.get("type") or "", "field is immutable"))
    return causes + _immutable(new, old, ("data",))
