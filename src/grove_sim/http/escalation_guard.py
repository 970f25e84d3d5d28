"""RBAC's escalation check placed in a write's admission steps, where the object is final (after mutation).

Only writes of Roles, ClusterRoles and their bindings under the RBAC authorizer are wrapped
(``grove_sim.auth.escalation`` decides); every other write keeps its steps untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, TypeVar

from grove_sim.auth.authentication import UserInfo
from grove_sim.auth.authorizer import Authorizer
from grove_sim.auth.escalation import ESCALATION_KINDS, check_escalation
from grove_sim.auth.rbac import RBAC_GROUP, RBACAuthorizer
from grove_sim.registry.resources import ResourceInfo
from grove_sim.registry.steps import VALIDATING, AdmissionPoint, Steps

__all__ = ["escalation_guarded"]

T = TypeVar("T")


def _checked(
    authorizer: RBACAuthorizer, user: UserInfo, steps: Steps[T]
) -> Generator[AdmissionPoint, dict[str, Any] | None, T]:
    """``steps``, with the escalation check on the object at its validating point."""
    point = next(steps)
    while True:
        if point.phase == VALIDATING and point.obj is not None:
            check_escalation(authorizer, user, point.info.plural, point.namespace, point.obj)
        sent = yield point
        try:
            point = steps.send(sent)
        except StopIteration as stop:
            result: T = stop.value
            return result


def escalation_guarded(
    authorizer: Authorizer | None, info: ResourceInfo, user: UserInfo, make_steps: Callable[[], Steps[T]]
) -> Callable[[], Steps[T]]:
    """``make_steps``, checked for escalation when RBAC is in force and the write is of a role or binding."""
    if not isinstance(authorizer, RBACAuthorizer) or info.group != RBAC_GROUP or info.plural not in ESCALATION_KINDS:
        return make_steps

    def checked() -> Steps[T]:
        return _checked(authorizer, user, make_steps())

    return checked
