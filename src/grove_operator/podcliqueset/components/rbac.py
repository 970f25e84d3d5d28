"""ServiceAccount, Role, RoleBinding and SA-token Secret of a PodCliqueSet (group 1).

`grove-initc` reads pods with this identity. Role and RoleBinding are create-if-absent (upstream), the
ServiceAccount is create-or-patch, and the token Secret additionally holds the rest of the sync back until the
token controller has filled `data.token`: pods mounting an empty token would fail their init container.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grove_api import PodCliqueSet
from grove_api import names as gnames
from grove_operator.desired import rbac
from grove_operator.podcliqueset.components._common import PcsContext
from grove_operator.reconcile.ownership import cached
from grove_operator.reconcile.writes import create_or_patch, delete_if_exists
from grove_runtime.keys import Result
from grove_runtime.resources import ROLEBINDINGS, ROLES, SECRETS, SERVICEACCOUNTS, ResourceType

__all__ = ["ROLE", "ROLE_BINDING", "SERVICE_ACCOUNT", "SingleObject", "TokenSecret"]

Builder = Callable[[PodCliqueSet], dict[str, Any]]


@dataclass(frozen=True)
class SingleObject:
    """A component owning exactly one object per PCS, built by `build`."""

    name: str
    rt: ResourceType
    build: Builder
    create_only: bool = False
    patch_fields: tuple[str, ...] = ()

    def _object_name(self, ctx: PcsContext) -> str:
        return str(self.build(ctx.owner)["metadata"]["name"])

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """The one name, if the object is cached."""
        name = self._object_name(ctx)
        return [name] if cached(ctx, self.rt, name) is not None else []

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Create (or patch) the object."""
        desired = self.build(ctx.owner)
        existing = cached(ctx, self.rt, str(desired["metadata"]["name"]))
        await create_or_patch(
            ctx,
            self.rt,
            desired,
            existing,
            component=self.name,
            patch_fields=self.patch_fields,
            create_only=self.create_only,
        )
        return None

    async def delete(self, ctx: PcsContext) -> None:
        """Delete the object."""
        await delete_if_exists(ctx.client, self.rt, self._object_name(ctx), ctx.namespace)


SERVICE_ACCOUNT = SingleObject("service-account", SERVICEACCOUNTS, rbac.build_service_account)
ROLE = SingleObject("role", ROLES, rbac.build_role, create_only=True)
ROLE_BINDING = SingleObject("role-binding", ROLEBINDINGS, rbac.build_role_binding, create_only=True)


@dataclass(frozen=True)
class TokenSecret:
    """The SA-token Secret; asks for a requeue until the token controller has populated it."""

    name: str = "sa-token-secret"

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """The Secret's name, if cached."""
        name = gnames.sa_token_secret_name(ctx.key.name)
        return [name] if cached(ctx, SECRETS, name) is not None else []

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Create the Secret if absent; requeue while `data.token` is empty."""
        desired = rbac.build_sa_token_secret(ctx.owner)
        existing = cached(ctx, SECRETS, str(desired["metadata"]["name"]))
        if existing is None:
            await create_or_patch(ctx, SECRETS, desired, None, component=self.name, create_only=True)
            return Result(requeue_after=ctx.config.retry_interval)
        if not (existing.get("data") or {}).get("token"):
            return Result(requeue_after=ctx.config.retry_interval)
        return None

    async def delete(self, ctx: PcsContext) -> None:
        """Delete the Secret."""
        await delete_if_exists(ctx.client, SECRETS, gnames.sa_token_secret_name(ctx.key.name), ctx.namespace)


TOKEN_SECRET = TokenSecret()
