"""The preemption benchmark runs, and its two methods differ the way the docs say: whole gangs never leave a victim
gang partially running."""

from __future__ import annotations

import pytest
from benchmarks.preemption import main, run


def test_gang_preemption_admits_every_arrival_and_leaves_no_partial_gang(capsys: pytest.CaptureFixture[str]) -> None:
    tallies = run(3, 0)
    ours = tallies["gang preemption"]
    assert ours.admitted == 3
    assert ours.evicted_gpus > 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| gang preemption")]
    assert "| 0 (0 GPUs) |" in rows[0]


def test_help_exits_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "--gangs" in capsys.readouterr().out
