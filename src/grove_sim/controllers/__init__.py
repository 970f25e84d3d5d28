"""In-process controllers: simulated kubelets, garbage collector, namespace lifecycle and the token controller.

They react to store events through de-duplicating work queues and change objects only through the registry's
``Core``, exactly as an HTTP client would, so every change they make obeys the same rules and emits the same events.
"""
