"""The fixture loader fails loudly: an empty or missing fixture set is an error, never a silent skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fixtures import samples


def test_every_fixture_is_one_podcliqueset() -> None:
    """Each fixture file holds exactly one PodCliqueSet, with a name."""
    files = samples.sample_files()
    assert len(files) == 11
    for rel in files:
        assert samples.load_sample(rel)["metadata"]["name"]


def test_empty_fixture_set_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no fixtures on disk the loader raises, so a parametrize over them errors instead of skipping."""
    monkeypatch.setattr(samples, "PCS_DIR", tmp_path)
    with pytest.raises(RuntimeError, match="no PodCliqueSet fixtures"):
        samples.sample_files()
    with pytest.raises(FileNotFoundError):
        samples.load_sample("simple/simple1.yaml")
