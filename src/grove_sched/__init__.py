"""grove_sched: the grove-scheduler gang scheduler.

Package map (one concept per module):

* `model`, `placement`: the value types (`Status` and its codes among them) and the pure
  `place(snapshot, gang, options)` function with its public stages;
* `quantity`: Kubernetes quantities → bounded integers (odd amounts never overflow a cycle);
* `podspec`: pod and node dicts → requests, terms and `NodeInfo`/`BoundPod`;
* `gangs`: PodGang + pods → `GangRequest` (readiness, malformed gangs, pins for partially bound gangs);
* `source`: gang reads (PodGang, pods, priority) over the informer and scheduler caches;
* `cache`: capacity view with the assume / forget / confirm state machine, set-aside nodes, per-cycle snapshots;
* `queue`: the active / backoff / unschedulable rooms, chosen by a cycle's status code;
* `scheduler`: the serial scheduling cycle and the concurrent binding cycles; `solver`: where `place` runs;
* `postfilter`: the step after an Unschedulable placement (its protocol, and a no-op);
* `preemption`: the post-filter that preempts lower-priority whole gangs and holds the freed capacity;
* `binder`: bounded concurrent binds with all-or-rollback on the minimum;
* `recovery`: completes or rolls back gangs left partially bound by a killed scheduler;
* `podgang_status`, `pod_status`, `events`, `metrics`: what the scheduler publishes;
* `handlers`: informer events → cache updates and queue moves;
* `app`, `config`, `cli`: wiring, configuration and the `grove-scheduler` command.
"""
