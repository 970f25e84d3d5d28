"""The package's `__all__` is complete and sorted (httpx style), and so are its public modules'."""

from __future__ import annotations

import types

import pytest

import grove_api
from grove_api import labels, names


def _isort_key(name: str) -> tuple[int, str]:
    """Ruff RUF022 order: CONSTANTS, then Classes, then functions/variables, each alphabetically."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_lists_every_public_name() -> None:
    """Every public, non-module attribute of `grove_api` is in `__all__` and vice versa (once loaded: the package
    loads its names on first use)."""
    for name in grove_api.__all__:
        getattr(grove_api, name)
    machinery = {"annotations", "TYPE_CHECKING", "Any"}
    public = {
        name
        for name, value in vars(grove_api).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType) and name not in machinery
    }
    assert set(grove_api.__all__) == public


@pytest.mark.parametrize("module", [grove_api, labels, names], ids=lambda m: m.__name__)
def test_all_is_sorted_and_unique(module: types.ModuleType) -> None:
    """`__all__` is sorted the way ruff enforces and lists each name once, each of which exists."""
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key)
    assert len(set(exported)) == len(exported)
    assert all(hasattr(module, name) for name in exported)


def test_kind_models_are_exported_with_their_api_identity() -> None:
    """The five kinds are importable from the package root and know their apiVersion and kind."""
    kinds = {
        cls.KIND: cls.API_VERSION
        for cls in (
            grove_api.PodCliqueSet,
            grove_api.PodClique,
            grove_api.PodCliqueScalingGroup,
            grove_api.ClusterTopologyBinding,
            grove_api.PodGang,
        )
    }
    assert kinds == {
        "PodCliqueSet": "grove.io/v1alpha1",
        "PodClique": "grove.io/v1alpha1",
        "PodCliqueScalingGroup": "grove.io/v1alpha1",
        "ClusterTopologyBinding": "grove.io/v1alpha1",
        "PodGang": "scheduler.grove.io/v1alpha1",
    }
