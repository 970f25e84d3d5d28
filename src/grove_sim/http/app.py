"""The aiohttp application: one catch-all route that dispatches like the apiserver's handler chain.

Every request is first authenticated (``grove_sim.auth.authentication``: a bad bearer token is a 401 before anything
else, as in kube-apiserver's handler chain) and the user kept on the request for admission. Non-resource paths
(``/version``, health, discovery, OpenAPI) are answered by ``grove_sim.http.nonresource``;
resource paths are parsed into a ``RequestInfo`` and dispatched by ``grove_sim.http.dispatch``. Every failure,
including unexpected exceptions, leaves as a ``metav1.Status`` so clients never see a non-Status error body
(apiserver-notes §2.8). Warnings that admission collected for the request leave as ``Warning: 299 - "..."`` headers,
on a success and on a refusal alike, which kubectl prints as ``Warning: ...`` lines. With an authorizer
(``--authorization-mode RBAC``) every request is authorized before routing (``grove_sim.http.authorize``); with
faults in force every request passes the fault injector first (``grove_sim.http.faults``), but those of the users
the configuration exempts.
"""

from __future__ import annotations

import logging

from aiohttp import web

from grove_sim.auth.attributes import Attributes, forbidden
from grove_sim.auth.authentication import ANONYMOUS, Unauthorized, UserInfo
from grove_sim.auth.rbac import MASTERS
from grove_sim.http.authorize import authorize_request
from grove_sim.http.context import ApiContext, json_response, warning_headers
from grove_sim.http.dispatch import handle_resource
from grove_sim.http.faults import FaultInjector
from grove_sim.http.nonresource import serve_nonresource
from grove_sim.http.requestinfo import parse_path
from grove_sim.machinery import errors

__all__ = ["make_app"]

_log = logging.getLogger(__name__)


_SIM_PATHS = frozenset({"/sim/faults", "/metrics"})


async def _serve_sim(ctx: ApiContext, faults: FaultInjector, request: web.Request, user: UserInfo) -> web.Response:
    """The sim's own paths: its metrics (GET, as kube-apiserver's ``/metrics``) and the fault endpoint, which only
    ``system:masters`` may use unless RBAC, which has already allowed the request, is in force."""
    if request.path == "/metrics":
        if request.method != "GET":
            raise errors.method_not_allowed(request.method, request.path)
        return faults.metrics()
    if ctx.authorizer is None and MASTERS not in user.groups:
        raise forbidden(Attributes(user, request.method.lower(), resource_request=False, path=request.path))
    return await faults.endpoint(request)


def _exempt(ctx: ApiContext, faults: FaultInjector, request: web.Request) -> bool:
    """Whether the request's user is one the fault configuration exempts (authenticated only when some are)."""
    exempt = faults.config.exempt_users
    if not exempt:
        return False
    try:
        return ctx.authenticate(request).username in exempt
    except (Unauthorized, errors.ApiError):
        return False


def make_app(ctx: ApiContext) -> web.Application:
    """The application serving the Kubernetes API for ``ctx``."""

    async def dispatch(request: web.Request) -> web.StreamResponse:
        warnings: list[str] = []
        faults = ctx.faults
        if faults is not None and faults.active and not _exempt(ctx, faults, request):
            response = await faults.around(request, lambda: serve(request, warnings))
        else:
            response = await serve(request, warnings)
        if warnings and not response.prepared:
            response.headers.extend(warning_headers(warnings))
        return response

    async def serve(request: web.Request, warnings: list[str]) -> web.StreamResponse:
        try:
            user = ctx.authenticate(request)
            if ctx.audit is not None:
                ctx.audit.record(request, user.username)
            ri = parse_path(request.path)
            if ctx.authorizer is not None:
                authorize_request(ctx.authorizer, request, ri, user)
            if ctx.faults is not None and request.path in _SIM_PATHS:
                return await _serve_sim(ctx, ctx.faults, request, user)
            if request.method == "GET":
                answered = serve_nonresource(ctx.core.registry, request)
                if answered is not None:
                    return answered
            if ri is None or not ri.plural:
                raise errors.route_not_found()
            info = ctx.core.registry.get(ri.group, ri.version, ri.plural)
            if info is None:
                raise errors.route_not_found()
            return await handle_resource(ctx, request, ri, info, user, warnings)
        except Unauthorized:
            if ctx.audit is not None:
                ctx.audit.record(request, ANONYMOUS.username)
            exc = errors.unauthorized()
            return json_response(exc.status(), exc.code)
        except errors.ApiError as exc:
            return json_response(exc.status(), exc.code)
        except web.HTTPException:
            raise
        except ConnectionResetError:
            # The client went away mid-request (a killed program): no one to answer, and nothing went wrong here.
            _log.debug("client gone during %s %s", request.method, request.path_qs)
            return web.Response(status=499)
        except Exception as exc:
            _log.exception("internal error serving %s %s", request.method, request.path_qs)
            return json_response(errors.status_body(500, "InternalError", f"Internal error occurred: {exc}"), 500)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", dispatch)
    return app
