"""Every benchmark command line answers `--help` (argparse %-formats help text, so a literal "130%" broke it)."""

from __future__ import annotations

import pytest
from benchmarks.__main__ import main


def test_benchmarks_help_lists_every_suite(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for suite in ("quick", "full", "tas", "disagg", "openb", "knavigator", "e2e"):
        assert suite in out
    assert "130%" in out


def test_e2e_help_exits_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["e2e", "--help"])
    assert exit_info.value.code == 0
    assert "usage" in capsys.readouterr().out.lower()
