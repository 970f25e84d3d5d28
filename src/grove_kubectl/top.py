"""`kubectl grove top`: GPU allocation by topology domain across the cluster, as a text heat map.

One line per domain of the finest level above nodes (racks, by default grouped under their blocks): a cell per
node shaded by how many of its GPUs bound pods hold (` ` none, `░` up to a third, `▒` up to two thirds, `▓` more,
`█` all), then used/allocatable and the percentage. Every pod in every namespace counts, as the scheduler counts.
"""

from __future__ import annotations

from typing import Any

from grove_kubectl.cluster import Domains, levels_of, node_gpus
from grove_kubectl.kinds import CLUSTERTOPOLOGYBINDINGS
from grove_kubectl.output import DomainView, GpuCount, TopOutput
from grove_kubectl.session import Session
from grove_runtime.resources import NODES, PODS

__all__ = ["build_top", "cell", "lines"]

SHADES = " ░▒▓█"


def cell(used: int, allocatable: int) -> str:
    """The heat-map character of one node."""
    if allocatable <= 0:
        return "·"
    if used <= 0:
        return SHADES[0]
    if used >= allocatable:
        return SHADES[4]
    return SHADES[1 + min(2, 3 * used // allocatable)]


async def build_top(session: Session) -> TopOutput:
    """Every node under its domains, with the GPUs bound pods hold."""
    pods = await session.list(PODS, everywhere=True)
    nodes = node_gpus(await session.list(NODES), pods)
    levels = levels_of(await session.list(CLUSTERTOPOLOGYBINDINGS), nodes.values())
    domains = Domains(nodes, levels).tree(nodes)
    allocatable = sum(n.allocatable for n in nodes.values())
    used = sum(n.used for n in nodes.values())
    total = GpuCount(allocatable=allocatable, used=used, free=max(allocatable - used, 0))
    return TopOutput(levels=[name for name, _ in levels], gpus=total, domains=domains)


def _rows(domains: list[DomainView], colour: Any, path: list[str], out: list[list[str]]) -> None:
    for d in domains:
        if d.children and d.children[0].level != "node":
            _rows(d.children, colour, [*path, f"{d.level} {d.name}"], out)
            continue
        nodes = d.children if d.children else [d]
        cells = "".join(
            colour.heat(n.gpus.used / max(n.gpus.allocatable, 1), cell(n.gpus.used, n.gpus.allocatable)) for n in nodes
        )
        share = d.gpus.used / d.gpus.allocatable if d.gpus.allocatable else 0.0
        label = " / ".join([*path, f"{d.level} {d.name}"]) if d.level != "node" else d.name
        out.append([label, f"[{cells}]", f"{d.gpus.used}/{d.gpus.allocatable}", colour.heat(share, f"{share:.0%}")])


def lines(output: TopOutput, colour: Any) -> list[str]:
    """The heat map, then the cluster total."""
    rows: list[list[str]] = [["DOMAIN", "NODES", "GPUS USED", "USE"]]
    _rows(output.domains, colour, [], rows)
    widths = [max(len(_plain(r[i])) for r in rows) for i in range(4)]
    text = ["   ".join(c + " " * (w - len(_plain(c))) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    g = output.gpus
    share = g.used / g.allocatable if g.allocatable else 0.0
    text.append(f"cluster: {g.used}/{g.allocatable} GPUs used ({share:.0%}), {g.free} free")
    return text


def _plain(text: str) -> str:
    """Text without ANSI colour codes (for column widths)."""
    out, skip = [], False
    for ch in text:
        if ch == "\033":
            skip = True
        elif skip and ch == "m":
            skip = False
        elif not skip:
            out.append(ch)
    return "".join(out)
