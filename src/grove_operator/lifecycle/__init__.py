"""Gang termination and rolling updates: the decisions, as pure functions of what the cache shows.

The components that act on them live with their reconcilers (`podcliqueset/components/replica.py`,
`scalinggroup/lifecycle.py`, `podclique/rollout.py`); everything they decide is computed here from objects and
pods, so the rules can be property-tested and an operator restarted at any moment decides the same again.

Modules::

    facts         CliqueFacts, clique_facts          one PodClique's pods: live, Ready, scheduled, old, terminating
    lane          Unit, GroupReplica, replica_lane   a PCS replica's PodCliques and scaling groups in update order
    rollout       plan_rollout, ReplicaState         the PodCliqueSet's update: start, next replica, end
    replacement   plan_replacement, Member           the one rule: unready old members at once, serving ones singly
    podrollout    plan_pods                          ... for the pods of a PodClique
    grouprollout  plan_group                         ... for the replicas of a scaling group
    progress      podclique_progress, group_progress a unit's updateProgress after a step
    termination   plan_replica_termination, ...      which broken gangs outlived terminationDelay
    sources       cache_sources                      the cache as the lookups `lane` reads (the one I/O module)
"""
