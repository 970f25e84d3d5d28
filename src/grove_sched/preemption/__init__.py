"""Preemption: lower-priority whole gangs evicted so an unschedulable gang fits, with its topology.

* `victims`: the pure victim selection (priority threshold, then a CP-SAT model per candidate domain checked by
  placement, with a greedy reprieve fallback);
* `nominations`: capacity freed for a preemptor, held until it binds or goes away;
* `eviction`: how victim pods are removed (graceful DELETE or the Eviction API);
* `preemptor`: the post-filter step tying them together with Events, pod conditions and metrics;
* `defrag`: the pure defragmentation planner (which movable gangs, placed again elsewhere, let a gang fit that
  fails only because free capacity is scattered), and `defrag_report` the post-filter wrapper that reports its
  plans (`--defrag-report`) without acting on them.
"""

from grove_sched.preemption.defrag import DefragOptions, DefragPlan, Movable, plan_defragmentation
from grove_sched.preemption.defrag_report import DefragReport
from grove_sched.preemption.eviction import DeleteVictims, EvictVictims, VictimRemover
from grove_sched.preemption.nominations import Nomination, Nominations
from grove_sched.preemption.preemptor import Preemptor
from grove_sched.preemption.victims import Cost, PreemptionOptions, Selection, VictimGang, fits, select_victims

__all__ = [
    "Cost",
    "DefragOptions",
    "DefragPlan",
    "DefragReport",
    "DeleteVictims",
    "EvictVictims",
    "Movable",
    "Nomination",
    "Nominations",
    "PreemptionOptions",
    "Preemptor",
    "Selection",
    "VictimGang",
    "VictimRemover",
    "fits",
    "plan_defragmentation",
    "select_victims",
]
