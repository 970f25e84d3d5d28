"""The string formats of ``k8s.io/apimachinery/pkg/util/validation``, with upstream's messages.

Each format is a ``StringFormat``: ``errors(value)`` is the list of upstream messages (empty when valid). Valid
strings are remembered in a bounded set, ``valid``, because the same label keys, values, container and env names come
back on every pod of a workload and the create path must stay cheap: hot callers test ``value in fmt.valid`` first
and call ``errors`` only on a miss. Invalid strings are explained afresh each time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

__all__ = [
    "CONFIG_MAP_KEY",
    "DNS1035_LABEL",
    "DNS1123_LABEL",
    "DNS1123_SUBDOMAIN",
    "ENV_VAR_NAME",
    "LABEL_VALUE",
    "PORT_NAME",
    "PROTOCOLS",
    "QUALIFIED_NAME",
    "StringFormat",
    "inclusive_range",
    "max_len",
    "port_number_errors",
]

_CACHE_LIMIT: Final = 65_536


class StringFormat:
    """One named string format: the strings known to be valid, and upstream's explanation of a failure."""

    __slots__ = ("_explain", "valid")

    def __init__(self, explain: Callable[[str], list[str]]) -> None:
        self._explain = explain
        self.valid: set[str] = set()

    def errors(self, value: str) -> list[str]:
        """Upstream's messages for ``value`` ([] when it is valid)."""
        if value in self.valid:
            return []
        messages = self._explain(value)
        if not messages:
            if len(self.valid) >= _CACHE_LIMIT:
                self.valid.clear()
            self.valid.add(value)
        return messages


def _size(value: str) -> int:
    """Go's ``len``: bytes, not characters."""
    return len(value) if value.isascii() else len(value.encode())


def max_len(limit: int) -> str:
    """``validation.MaxLenError``."""
    return f"must be no more than {limit} characters"


def inclusive_range(low: int, high: int) -> str:
    """``validation.InclusiveRangeError``."""
    return f"must be between {low} and {high}, inclusive"


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """``validation.RegexError``: the message, examples and the regular expression."""
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _matcher(pattern: str) -> Callable[[str], object]:
    return re.compile(pattern).fullmatch


_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT: Final = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_DNS1035_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QNAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT: Final = "(" + _QNAME_FMT + ")?"
_ENV_FMT: Final = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_CONFIG_KEY_FMT: Final = "[-._a-zA-Z0-9]+"

_is_label = _matcher(_LABEL_FMT)
_is_subdomain = _matcher(_SUBDOMAIN_FMT)
_is_dns1035 = _matcher(_DNS1035_FMT)
_is_qname = _matcher(_QNAME_FMT)
_is_label_value = _matcher(_LABEL_VALUE_FMT)
_is_env = _matcher(_ENV_FMT)
_is_config_key = _matcher(_CONFIG_KEY_FMT)
_is_port_name = _matcher("[-a-z0-9]+")
_has_letter = re.compile("[a-z]").search

_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character"
)
_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character"
)
_DNS1035_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
    "and end with an alphanumeric character"
)
_QNAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character"
)
_ENV_MSG: Final = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not "
    "start with a digit"
)
_CONFIG_KEY_MSG: Final = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


def _dns1123_label(value: str) -> list[str]:
    errors = [max_len(63)] if _size(value) > 63 else []
    if not _is_label(value):
        errors.append(_regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errors


def _dns1123_subdomain(value: str) -> list[str]:
    errors = [max_len(253)] if _size(value) > 253 else []
    if not _is_subdomain(value):
        errors.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errors


def _dns1035_label(value: str) -> list[str]:
    errors = [max_len(63)] if _size(value) > 63 else []
    if not _is_dns1035(value):
        errors.append(_regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return errors


def _qualified_name(value: str) -> list[str]:
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        shown = _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        return [f"a qualified name {shown} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += [f"prefix part {m}" for m in DNS1123_SUBDOMAIN.errors(prefix)]
    if not name:
        errors.append("name part must be non-empty")
    elif _size(name) > 63:
        errors.append(f"name part {max_len(63)}")
    if not _is_qname(name):
        errors.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errors


def _label_value(value: str) -> list[str]:
    errors = [max_len(63)] if _size(value) > 63 else []
    if not _is_label_value(value):
        errors.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def _dot_prefix(value: str) -> list[str]:
    """``hasChDirPrefix``: names that would walk out of a directory."""
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def _env_var_name(value: str) -> list[str]:
    errors = [] if _is_env(value) else [_regex_error(_ENV_MSG, _ENV_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1")]
    return errors + _dot_prefix(value)


def _config_map_key(value: str) -> list[str]:
    errors = [max_len(253)] if _size(value) > 253 else []
    if not _is_config_key(value):
        errors.append(_regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errors + _dot_prefix(value)


def _port_name(value: str) -> list[str]:
    errors = [max_len(15)] if _size(value) > 15 else []
    if not _is_port_name(value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _has_letter(value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def port_number_errors(port: int) -> list[str]:
    """``validation.IsValidPortNum``: 1 to 65535."""
    return [] if 1 <= port <= 65535 else [inclusive_range(1, 65535)]


PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
"""Port protocols, in ``sets.List`` order as upstream lists them."""


DNS1123_LABEL: Final = StringFormat(_dns1123_label)
DNS1123_SUBDOMAIN: Final = StringFormat(_dns1123_subdomain)
DNS1035_LABEL: Final = StringFormat(_dns1035_label)
QUALIFIED_NAME: Final = StringFormat(_qualified_name)
LABEL_VALUE: Final = StringFormat(_label_value)
ENV_VAR_NAME: Final = StringFormat(_env_var_name)
CONFIG_MAP_KEY: Final = StringFormat(_config_map_key)
PORT_NAME: Final = StringFormat(_port_name)
