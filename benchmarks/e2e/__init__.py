"""End-to-end benchmark: grove-sim, grove-operator and grove-scheduler as separate processes, PodCliqueSets at a rate.

`python -m benchmarks e2e quick|full|<scenario> [overrides]` (see `benchmarks.e2e.cli`). Unlike the placement-only
suites this measures the whole pipeline a user sees: PCS created → operator creates gated pods and the PodGang →
operator lifts the gates → scheduler solves and binds. It reports pods bound per second during the burst (the
scheduler_perf way), gang latency from gate removal to the last required bind, creation→bound latency, the
scheduler's solve share and the processes' memory, and it fails (non-zero) if any placement is wrong.
"""
