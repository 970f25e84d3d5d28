"""Server-side ``meta.k8s.io/v1`` Table output, the format ``kubectl get`` asks for and prints verbatim.

Without Tables kubectl shows only NAME/AGE; with them the server must pre-format every cell, including human ages
(apiserver-notes §2.4). :func:`build_table` picks the printer for a resource (built-in printers in
:mod:`grove_sim.http.printers`, a CRD's ``additionalPrinterColumns``, or the generic Name/Age) and wraps rows in the
Table envelope with the requested ``includeObject`` form. The server adds ``metadata.resourceVersion``/``continue``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from grove_sim.http.printers import GENERIC, NAME_COLUMN, PRINTERS, Column, parse_time
from grove_sim.http.workload_printers import WORKLOAD_PRINTERS
from grove_sim.machinery.gofmt import go_scalar
from grove_sim.machinery.jsonpath import JsonPath, compile_jsonpath

__all__ = ["PrinterColumns", "build_table", "human_duration", "printer_columns_for"]

_INCLUDE_OBJECT: Final = frozenset({"Metadata", "Object", "None"})
_COMPLETED_CONDITIONS: Final = {
    "Succeeded": [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ],
    "Failed": [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}],
}
_DEFAULT_CR_COLUMNS: Final = [
    {
        "name": "Age",
        "type": "date",
        "jsonPath": ".metadata.creationTimestamp",
        "description": "CreationTimestamp is a timestamp representing the server time when this object was created.",
    }
]


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``: short, coarser as the duration grows."""
    whole = int(seconds)  # Go's int(d.Seconds()) truncates toward zero
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 60 * 2:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _ager(now: datetime) -> Callable[[Any], str]:
    reference = now if now.tzinfo is not None else now.replace(tzinfo=UTC)

    def age(timestamp: Any) -> str:
        moment = parse_time(timestamp)
        if moment is None:
            return "<unknown>"
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return human_duration((reference - moment).total_seconds())

    return age


def _go_text(value: Any) -> str:
    """kubectl JSONPath's text rendering of one value (used for ``string`` printer columns)."""
    if isinstance(value, str):
        return value
    scalar = go_scalar(value)
    if scalar is not None:
        return scalar
    if value is None:
        return "<nil>"
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _cr_cell(kind: str, value: Any, age: Callable[[Any], str]) -> Any:
    """``cellForJSONValue`` of the CRD table convertor: a typed cell, or None when the type does not fit."""
    if value is None:
        return None
    if kind == "string":
        return _go_text(value)
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        return age(value) if parse_time(value) is not None else "<invalid>"
    return None


class PrinterColumns:
    """A CRD version's printer columns, with their JSONPaths compiled once."""

    def __init__(self, columns: Sequence[Mapping[str, Any]]) -> None:
        chosen = list(columns) or _DEFAULT_CR_COLUMNS
        self.paths: list[tuple[str, JsonPath]] = []
        self.columns: list[Column] = [NAME_COLUMN]
        for column in chosen:
            path = str(column.get("jsonPath", ""))
            self.paths.append((str(column.get("type", "string")), compile_jsonpath(path)))
            self.columns.append(
                {
                    "name": column.get("name", ""),
                    "type": column.get("type", "string"),
                    "format": column.get("format", ""),
                    "description": column.get("description")
                    or f"Custom resource definition column (in JSONPath format): {path}",
                    "priority": int(column.get("priority", 0)),
                }
            )

    def row(self, obj: Mapping[str, Any], age: Callable[[Any], str]) -> list[Any]:
        name = (obj.get("metadata") or {}).get("name", "")
        return [name, *(_cr_cell(kind, path.first(obj), age) for kind, path in self.paths)]


_CUSTOM_CACHE: dict[tuple[tuple[str, str, str, str, int], ...], PrinterColumns] = {}


def printer_columns_for(columns: Sequence[Mapping[str, Any]]) -> PrinterColumns:
    """Compiled printer columns, cached by their definition (a CRD's columns rarely change).

    Raises :class:`grove_sim.machinery.jsonpath.JsonPathError` for an unparsable ``jsonPath``: call it when
    registering a CRD to reject such a CRD up front, as the real apiserver does.
    """
    key = tuple(
        (
            str(c.get("name", "")),
            str(c.get("type", "")),
            str(c.get("jsonPath", "")),
            str(c.get("description", "")),
            int(c.get("priority", 0)),
        )
        for c in columns
    )
    compiled = _CUSTOM_CACHE.get(key)
    if compiled is None:
        if len(_CUSTOM_CACHE) > 256:
            _CUSTOM_CACHE.clear()
        compiled = _CUSTOM_CACHE[key] = PrinterColumns(columns)
    return compiled


def _row_object(obj: Mapping[str, Any], include_object: str) -> dict[str, Any] | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return dict(obj)
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def build_table(
    resource: str,
    group: str,
    objects: Sequence[Mapping[str, Any]],
    *,
    printer_columns: Sequence[Mapping[str, Any]] | None,
    include_object: str,
    now: datetime,
    header: bool = True,
) -> dict[str, Any]:
    """A Table for ``objects`` of ``group``/``resource``.

    ``printer_columns`` is the served CRD version's ``additionalPrinterColumns`` (``None`` for built-ins; an empty
    list for a CRD without columns, which gets Name/Age like the real server). ``include_object`` is the request's
    ``includeObject`` (``Metadata`` by default, ``Object`` or ``None``). ``header=False`` omits the column
    definitions, as the real server does after the first event of a Table watch.
    """
    if include_object not in _INCLUDE_OBJECT:
        include_object = "Metadata"
    age = _ager(now)
    columns: list[Column]
    row_fn: Callable[[Mapping[str, Any], Callable[[Any], str]], list[Any]]
    if printer_columns is not None:
        custom = printer_columns_for(printer_columns)
        columns, row_fn = custom.columns, custom.row
    else:
        columns, row_fn = PRINTERS.get((group, resource)) or WORKLOAD_PRINTERS.get((group, resource), GENERIC)
    is_pod = group == "" and resource == "pods" and printer_columns is None
    rows: list[dict[str, Any]] = []
    for obj in objects:
        row: dict[str, Any] = {"cells": row_fn(obj, age)}
        if is_pod:
            conditions = _COMPLETED_CONDITIONS.get(str((obj.get("status") or {}).get("phase")))
            if conditions is not None:
                row["conditions"] = [dict(c) for c in conditions]
        row_object = _row_object(obj, include_object)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [dict(c) for c in columns] if header else [],
        "rows": rows,
    }
