"""The chaos suite: Grove's programs under API faults, kills and frozen leaders, judged by an independent observer.

`python -m benchmarks.chaos` (`make chaos`) runs the whole suite and writes `benchmarks/results/chaos.{json,md}`;
`tests/benchmarks/test_chaos.py` runs a seeded short version. Modules: `workload` (PodCliqueSet shapes and the
driver's actions), `observer` (its own watches, as a fault-exempt service account, and the invariants), `disrupt`
(the fault schedule, SIGKILL and SIGSTOP of the programs), `fuzz` (generated PodCliqueSets through the API),
`runner` (one run, start to figures) and `report` (the results file).
"""
