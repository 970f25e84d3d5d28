"""The ``pods/proxy`` and ``services/proxy`` subresources: HTTP forwarded to a pod's process, as kube-apiserver does.

``/api/v1/namespaces/NS/pods/[SCHEME:]NAME[:PORT]/proxy/PATH`` reaches ``podIP:PORT/PATH`` (port 80 when none is
named); ``.../services/[SCHEME:]NAME[:PORT]/proxy/PATH`` reaches one ready endpoint of the Service's port (named or
numbered; the only port when none is named) through the Service's Endpoints. With grove-sim's loopback pod IPs the
process behind is a local program run from an executable image. An unreachable target is a 503 ``Status``, as
kube-apiserver answers ``error trying to reach service``.
"""

from __future__ import annotations

import aiohttp
from aiohttp import web

from grove_sim.http.context import ApiContext, Target
from grove_sim.machinery import errors
from grove_sim.machinery.endpoints import ready_endpoint

__all__ = ["proxy", "resolve_pod", "resolve_service"]

_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding",
     "upgrade", "host", "authorization", "content-length"}
)  # fmt: skip


def unavailable(message: str) -> errors.ApiError:
    """503 ServiceUnavailable, as kube-apiserver refuses a proxy or port-forward it cannot reach."""
    return errors.ApiError(503, "ServiceUnavailable", message)


def _split(name: str) -> tuple[str, str, str]:
    """``[scheme:]name[:port]`` → (scheme, name, port)."""
    parts = name.split(":")
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    if len(parts) == 2:
        return "", parts[0], parts[1]
    return "", name, ""


def resolve_pod(ctx: ApiContext, namespace: str, name: str, port: str) -> tuple[str, int]:
    """The address of ``port`` (number or container port name; 80 when empty) of a running pod."""
    pod = ctx.core.store.get(("", "pods"), namespace, name)
    if pod is None:
        raise errors.not_found("", "pods", name)
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        raise errors.bad_request(f"address not allowed: pod {name} has no IP")
    if not port:
        return str(ip), 80
    if port.isdigit():
        return str(ip), int(port)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for declared in container.get("ports") or []:
            if declared.get("name") == port:
                return str(ip), int(declared.get("containerPort") or 0)
    raise errors.bad_request(f"no port named {port!r} in pod {name}")


def resolve_service(ctx: ApiContext, namespace: str, name: str, port: str) -> tuple[str, int, str]:
    """A ready endpoint (ip, port, pod name) behind ``port`` of Service ``name``."""
    service = ctx.core.store.get(("", "services"), namespace, name)
    if service is None:
        raise errors.not_found("", "services", name)
    found = ready_endpoint(service, ctx.core.store.get(("", "endpoints"), namespace, name), port)
    if found is None:
        raise unavailable(f'no endpoints available for service "{name}"')
    return found


async def proxy(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """Forward the request to the pod or service, streaming the answer back."""
    scheme, name, port = _split(target.name or "")
    if target.info.plural == "pods":
        host, number = resolve_pod(ctx, target.ns, name, port)
    else:
        host, number, _ = resolve_service(ctx, target.ns, name, port)
    marker = f"/{target.info.plural}/{target.name}/proxy"
    path = request.raw_path.split("?", 1)[0]
    suffix = path[path.find(marker) + len(marker) :] if marker in path else ""
    url = f"{scheme or 'http'}://{host}:{number}{suffix or '/'}"
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
    body = await request.read()
    try:
        async with (
            aiohttp.ClientSession(auto_decompress=False) as session,
            session.request(
                request.method, url, params=request.query, headers=headers, data=body or None, ssl=False,
                allow_redirects=False,
            ) as upstream,
        ):  # fmt: skip
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in _HOP_BY_HOP:
                    response.headers.add(key, value)
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
    except (aiohttp.ClientError, OSError) as exc:
        raise unavailable(f"error trying to reach service: {exc}") from None
