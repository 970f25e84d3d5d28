"""The placement package's public surface: every stage is reachable from `grove_sched.placement`."""

from __future__ import annotations

import re
from pathlib import Path

import grove_sched.placement as placement

ROOT = Path(__file__).resolve().parents[3]
PRIVATE = re.compile(r"^\s*(?:from|import)\s+grove_sched\.placement\._", re.MULTILINE)


def test_all_is_sorted_and_importable() -> None:
    """`__all__` is sorted and every name in it exists on the package."""
    assert list(placement.__all__) == sorted(placement.__all__)
    assert all(hasattr(placement, name) for name in placement.__all__)


def test_only_the_package_imports_its_private_modules() -> None:
    """Tests, benchmarks and the rest of the scheduler use the package's entry points, never `placement._*`."""
    package = ROOT / "src" / "grove_sched" / "placement"
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("src", "tests", "benchmarks", "examples")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if package not in path.parents and PRIVATE.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
