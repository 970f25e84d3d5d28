"""The placement package's public surface."""

from __future__ import annotations

import grove_sched.placement as placement


def test_all_is_sorted_and_importable() -> None:
    """`__all__` is sorted and every name in it exists on the package."""
    assert list(placement.__all__) == sorted(placement.__all__)
    assert all(hasattr(placement, name) for name in placement.__all__)
