"""Make the placement test kit importable (pytest runs with --import-mode=importlib)."""

from __future__ import annotations

import sys
from pathlib import Path

_KIT = str(Path(__file__).resolve().parents[1] / "placement")
if _KIT not in sys.path:
    sys.path.insert(0, _KIT)
