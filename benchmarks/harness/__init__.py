"""Placement-quality benchmark harness: cluster shapes, workloads, greedy baselines, metrics, runner and report.

The placement-only mode runs every strategy (our CP-SAT `place` and the greedy baselines implemented here) in
one process against the same clusters and gang sequences, so their numbers are directly comparable. The CLI in
`benchmarks/__main__.py` selects suites; an end-to-end mode (grove-sim + operator + scheduler processes) plugs in
there as another suite kind later.
"""

from __future__ import annotations
