"""Text for people, JSON or YAML for programs, colour only where a person is looking.

Colour follows kubectl and most CLI tools: only when standard output is a terminal and `NO_COLOR` is not set, so
output piped to a file or another program (and every test) has no escape codes.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

import yaml
from pydantic import BaseModel

from grove_kubectl.output import TreeNode

__all__ = ["Palette", "dump", "palette", "table", "tree_lines"]

GOOD = ("Running", "Ready", "Available", "Scheduled", "Succeeded", "met")
BAD = ("Failed", "Breached", "Unschedulable", "NotScheduled", "violated", "Error")


class Palette:
    """ANSI colours, or none."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled and text else text

    def bold(self, text: str) -> str:
        """Bold."""
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        """Dimmed."""
        return self._wrap("2", text)

    def status(self, text: str) -> str:
        """Green for good states, red for bad ones, yellow for the rest."""
        if text.startswith(GOOD):
            return self._wrap("32", text)
        if text.startswith(BAD):
            return self._wrap("31", text)
        return self._wrap("33", text)

    def alert(self, text: str) -> str:
        """Red."""
        return self._wrap("31", text)

    def heat(self, fraction: float, text: str) -> str:
        """Green to red by how full a domain is."""
        code = "32" if fraction < 0.5 else "33" if fraction < 0.9 else "31"
        return self._wrap(code, text)


def palette(stream: TextIO | None = None) -> Palette:
    """Colour on a terminal unless NO_COLOR is set."""
    out = stream or sys.stdout
    return Palette(out.isatty() and not os.environ.get("NO_COLOR"))


def dump(model: BaseModel, fmt: str) -> str:
    """The model as `-o json` or `-o yaml` prints it."""
    data = model.model_dump(by_alias=True, mode="json")
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120)


def tree_lines(node: TreeNode, colour: Palette, prefix: str = "", last: bool = True, root: bool = True) -> list[str]:
    """The hierarchy drawn with box characters, one object per line."""
    counts = f" {node.ready}/{node.total}" if node.total is not None else ""
    detail = f"  {colour.dim(node.detail)}" if node.detail else ""
    head = f"{node.kind}/{node.name}  {colour.status(node.status)}{counts}{detail}"
    branch = "" if root else ("└─ " if last else "├─ ")
    lines = [prefix + branch + head]
    inner = prefix if root else prefix + ("   " if last else "│  ")
    for note in node.attention:
        text = f"{note.type}={note.status} {note.reason}: {note.message}".rstrip(": ")
        lines.append(inner + ("│  " if node.children else "   ") + colour.alert("! " + text))
    for i, child in enumerate(node.children):
        lines += tree_lines(child, colour, inner, i == len(node.children) - 1, root=False)
    return lines


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns separated by three spaces, as kubectl prints tables."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
