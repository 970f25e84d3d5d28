"""The points where a write stops for admission webhooks, and how a write runs without them.

Each verb of ``Core`` is written once, as a generator of ``AdmissionPoint``s: it prepares the object (decoding,
defaulting, the namespace check) and yields ``MUTATING``; what it is sent back is the object as the mutating webhooks
left it (None: unchanged); then it validates (built-in rules, the CRD schema) and yields ``VALIDATING``; then it
stores. kube-apiserver runs admission at exactly these points. ``run`` drives a verb with no webhooks (the
in-process controllers, which act as the system components kube-apiserver's webhooks exempt); the HTTP layer drives
it through ``grove_sim.registry.webhooks.WebhookAdmission``, which awaits the webhook calls in between.

A verb that waited on webhooks checks, before storing, that the stored object is still the one it admitted; if not
it raises ``Stale`` and the driver starts the verb again from the current object, as kube-apiserver's
``GuaranteedUpdate`` retries (an update with a resourceVersion precondition then fails with 409 instead).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, TypeVar

from grove_sim.registry.resources import ResourceInfo

__all__ = [
    "CREATE",
    "DELETE",
    "MUTATING",
    "UPDATE",
    "VALIDATING",
    "AdmissionPoint",
    "Stale",
    "Steps",
    "ran",
    "run",
]

T = TypeVar("T")
P = ParamSpec("P")
Obj = dict[str, Any]
Phase = Literal["mutating", "validating"]
Operation = Literal["CREATE", "UPDATE", "DELETE"]

MUTATING: Phase = "mutating"
VALIDATING: Phase = "validating"
CREATE: Operation = "CREATE"
UPDATE: Operation = "UPDATE"
DELETE: Operation = "DELETE"


@dataclass(slots=True)
class AdmissionPoint:
    """One stop of a write: what admission sees (``admission.Attributes`` in kube-apiserver)."""

    phase: Phase
    operation: Operation
    info: ResourceInfo
    namespace: str
    name: str
    """The object's name; "" on a create with ``generateName`` (the name is generated after admission)."""
    subresource: str | None
    obj: Obj | None
    """The object being written (None on DELETE)."""
    old: Obj | None
    """The stored object (None on CREATE)."""
    dry_run: bool
    options: Obj | None = None
    """``DeleteOptions`` on DELETE."""


Steps = Generator[AdmissionPoint, Obj | None, T]


class Stale(Exception):
    """The stored object changed while the write waited for admission; the write must start again."""


def run(steps: Steps[T]) -> T:
    """Drive a verb to its end with no admission webhooks."""
    try:
        next(steps)
        while True:
            steps.send(None)
    except StopIteration as stop:
        result: T = stop.value
        return result


def ran(verb: Callable[P, Steps[T]]) -> Callable[P, T]:
    """The verb ``verb`` (a generator of admission points) as a plain call that runs it to its end."""

    @functools.wraps(verb)
    def run_verb(*args: P.args, **kwargs: P.kwargs) -> T:
        return run(verb(*args, **kwargs))

    return run_verb
