"""`python -m grove_sched` runs grove-scheduler (same as the console script)."""

from __future__ import annotations

from grove_sched.cli import main

main()
