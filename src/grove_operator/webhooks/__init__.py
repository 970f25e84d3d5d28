"""grove-operator's admission webhooks (grove-reference §3.12), served with ``grove_runtime.webhook``.

* ``podcliqueset``: the defaulting webhook (``/webhooks/default-podcliqueset``) and the validating webhook
  (``/webhooks/validate-podcliqueset``), both over ``grove_operator.defaults`` and ``grove_operator.validation``,
  the same pure functions the reconcilers apply;
* ``clustertopology``: ``/webhooks/validate-clustertopology``;
* ``authorizer``: ``/webhooks/authorizer-webhook``, protecting the objects the operator manages;
* ``setup``: the paths, rules and configurations, and the runnable the wiring adds to the manager.
"""
