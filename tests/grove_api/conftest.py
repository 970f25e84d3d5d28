"""Fixtures shared by the grove_api tests."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (where `crds/` lives)."""
    return REPO_ROOT
