"""grove_sched."""
