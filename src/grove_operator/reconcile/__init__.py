"""What every grove-operator controller is made of: one reconcile skeleton, the sync context, components.

A reconciler subclasses `skeleton.OwnerReconciler`, naming its kind, finalizer and step components in its class
statement, and supplies only `parse`, `prepare` and `compute_status`; the steps are components
(`context.Component`), most of them `childset.ChildSet`s, which do their I/O through `writes` under the rules of
`compare` and `ownership`. Failures are `failures.ComponentError`s, whose kind decides the Event, the
`status.lastErrors` entry and whether the controller retries.

Where the next features go:

* admission webhooks call `grove_operator.admission` (and `validation`, `defaults`), the same checks `prepare`
  applies today, so an object the webhook admits is one the reconcilers accept;
* gang termination and rolling updates are components: the PodCliqueSet's and scaling group's go into their
  reconciler's component list (`podcliqueset/components/__init__.py` fixes the PodCliqueSet's order), the
  per-pod part of a rolling update next to `podclique/pods.py`; their conditions come from `status/`;
* startup ordering is data in the pods (`desired/startup.py`, `desired/pod.py`) that `grove-initc` reads.

Modules::

    context     Deps, SyncContext, Step, Component          what a reconcile carries and what a component is
    skeleton    OwnerReconciler, run_steps                  get → deletion → parse → steps → status
    childset    ChildSet, CREATE_WINDOW                     desired set → create / patch / delete stale
    failures    ComponentError, SpecError, ParentNotFound   what went wrong and what the controller does about it
    writes      create_or_patch, delete_if_exists, ...      the write rules every component follows
    compare     is_subset, merge_patch_for, in_sync         "does this child need a write?"
    ownership   controller_owner, controlled_children, ...  which cached objects are ours
    concurrency bounded                                     many writes, a few at a time
"""
