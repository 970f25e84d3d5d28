"""grove_runtime: generic controller machinery shared by grove-operator and grove-scheduler.

Map (controller-runtime names, one noun per module): ``keys`` (ObjectKey, Result, TerminalError), ``errors``,
``resources`` (ResourceType), ``client`` (Client Protocol, KubeClient), ``store``, ``informer``, ``cache``,
``workqueue``, ``handlers``, ``predicates``, ``controller``, ``expectations``, ``events``, ``leaderelection``,
``manager``, ``health``, ``metrics``, ``logging``, ``clock``. It imports nothing else of ours.

The names below are loaded on first use (PEP 562), so a short-lived program such as ``grove-initc`` that needs
only the informer pays neither for kubernetes-asyncio's generated client nor for prometheus-client at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grove_runtime.cache import Cache
    from grove_runtime.client import Client, KubeClient, PatchType, RetryPolicy
    from grove_runtime.clock import Clock, FakeClock, LoopClock
    from grove_runtime.controller import Controller, Reconciler
    from grove_runtime.events import EventRecorder
    from grove_runtime.expectations import Expectations, ExpectationsObserver
    from grove_runtime.handlers import EventHandler, enqueue_mapped, enqueue_owner, enqueue_self
    from grove_runtime.informer import Informer, ResourceEventHandler
    from grove_runtime.keys import ObjectKey, Result, TerminalError
    from grove_runtime.leaderelection import LeaderElector, LeadershipLost
    from grove_runtime.manager import Manager, Runnable
    from grove_runtime.metrics import ControllerMetrics
    from grove_runtime.resources import ResourceType
    from grove_runtime.store import Store, index_by_field, index_by_label, index_by_owner_uid
    from grove_runtime.workqueue import QueueShutDown, RateLimiter, WorkQueue

_SUBMODULES = (
    "keys", "resources", "clock", "store", "workqueue", "informer", "client", "cache", "handlers", "controller",
    "expectations", "events", "leaderelection", "manager", "metrics",
)  # fmt: skip

__all__ = [
    "Cache",
    "Client",
    "Clock",
    "Controller",
    "ControllerMetrics",
    "EventHandler",
    "EventRecorder",
    "Expectations",
    "ExpectationsObserver",
    "FakeClock",
    "Informer",
    "KubeClient",
    "LeaderElector",
    "LeadershipLost",
    "LoopClock",
    "Manager",
    "ObjectKey",
    "PatchType",
    "QueueShutDown",
    "RateLimiter",
    "Reconciler",
    "ResourceEventHandler",
    "ResourceType",
    "Result",
    "RetryPolicy",
    "Runnable",
    "Store",
    "TerminalError",
    "WorkQueue",
    "enqueue_mapped",
    "enqueue_owner",
    "enqueue_self",
    "index_by_field",
    "index_by_label",
    "index_by_owner_uid",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        for submodule in _SUBMODULES:
            module = importlib.import_module(f"grove_runtime.{submodule}")
            if hasattr(module, name):
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module 'grove_runtime' has no attribute {name!r}")
