"""grove_sched: the grove-scheduler gang scheduler.

Package map (one concept per module):

* `model`, `placement`: the value types and the pure `place(snapshot, gang, options)` function;
* `podspec`: pod and node dicts → requests, terms and `NodeInfo`/`BoundPod`;
* `gangs`: PodGang + pods → `GangRequest` (readiness, malformed gangs, pins for partially bound gangs);
* `cache`: capacity view with the assume / forget / confirm state machine, and per-cycle snapshots;
* `queue`: the active / backoff / unschedulable rooms;
* `scheduler`: the serial scheduling cycle and the concurrent binding cycles;
* `binder`: bounded concurrent binds with all-or-rollback on the minimum;
* `recovery`: completes or rolls back gangs left partially bound by a killed scheduler;
* `podgang_status`, `events`, `metrics`: what the scheduler publishes;
* `handlers`: informer events → cache updates and queue moves;
* `app`, `config`, `cli`: wiring, configuration and the `grove-scheduler` command.
"""
