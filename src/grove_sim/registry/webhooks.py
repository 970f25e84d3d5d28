"""Admission webhooks: grove-sim calls them on every write, as kube-apiserver's admission chain does.

``WebhookAdmission.run`` drives a verb of ``Core`` (``grove_sim.registry.steps``) and, at each admission point,
calls the webhooks of the stored Mutating/ValidatingWebhookConfigurations that match (``webhook_rules``):

* **mutating** webhooks one after another in order, each seeing the object as the previous left it; their JSON
  patches are applied (then the object is defaulted again, as after decoding); webhooks with
  ``reinvocationPolicy: IfNeeded`` are called once more when a later webhook changed the object;
* then the write's own validation (built-in rules, the CRD schema, CEL);
* then **validating** webhooks, concurrently; the first refusal in configuration order wins.

A refusal is the webhook's ``Status`` with kube-apiserver's prefix (``admission webhook "NAME" denied the request:
...``, code 400 unless the webhook chose another). A call that fails (nothing listening, TLS not verified against
``caBundle``, ``timeoutSeconds`` passed, a malformed response) refuses the write with a 500 naming the webhook when
``failurePolicy`` is ``Fail`` and skips the webhook when it is ``Ignore``. A dry-run write reaches only webhooks
declaring ``sideEffects: None`` or ``NoneOnDryRun`` (others refuse it with 400), with ``dryRun: true`` in the review.
Warnings from every webhook are returned to the caller, which sends them as ``Warning`` headers.

**Where a webhook is.** A ``url`` client config is called as written. A ``service`` reference is resolved as
kube-apiserver resolves it: the Service's port (``service.port``, default 443) is looked up in the Service's
Endpoints, and the call goes to a ready address on the matching target port (pods that run as local processes
have addresses of their own), while TLS verifies the certificate for ``NAME.NAMESPACE.svc``. A Service whose
webhook server is a process outside the cluster (the operator run from a shell) names it with the annotation
``sim.grove.io/local-address: HOST:PORT``, which takes precedence. A missing Service, or one with neither a ready
endpoint nor the annotation, fails like an unreachable service (``no endpoints available for service``).

Configurations themselves are never sent to webhooks (kube-apiserver exempts them so a broken webhook cannot lock
its own configuration), and the in-process controllers (garbage collector, kubelets, namespace and token
controllers) write without admission, as the system components a webhook would exempt.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from grove_sim.auth.authentication import UserInfo
from grove_sim.machinery import errors
from grove_sim.machinery.endpoints import ready_endpoint
from grove_sim.machinery.patch import PatchError, copy_json, json_patch
from grove_sim.registry import admission
from grove_sim.registry.steps import DELETE, MUTATING, AdmissionPoint, Stale, Steps, run
from grove_sim.registry.webhook_rules import (
    MUTATING_KEY,
    VALIDATING_KEY,
    Hook,
    MatchError,
    compile_hooks,
    namespace_labels,
)
from grove_sim.storage.store import Event, Store

__all__ = ["LOCAL_ADDRESS_ANNOTATION", "Endpoint", "WebhookAdmission", "WebhookCallError", "WebhookTransport"]

LOCAL_ADDRESS_ANNOTATION = "sim.grove.io/local-address"
RETRIES = 5
"""Times a write whose object changed while webhooks ran starts again before it gives up with a 409."""

T = TypeVar("T")
Obj = dict[str, Any]
_SERVICES = ("", "services")
_ENDPOINTS = ("", "endpoints")
_NAMESPACES = ("", "namespaces")
_EXEMPT_GROUP = "admissionregistration.k8s.io"
_DRY_RUN_SAFE = ("None", "NoneOnDryRun")
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class WebhookCallError(Exception):
    """The call did not produce an answer; the message is the reason in Go's words (``dial tcp ...``)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where to send a review: ``url`` as errors show it; ``host``:``port`` and ``path`` where it really goes, and
    the name (``server_name``) the certificate must be valid for, verified against ``ca_bundle`` (PEM; None: the
    system's trusted roots)."""

    url: str
    host: str
    port: int
    path: str
    server_name: str
    ca_bundle: bytes | None


class WebhookTransport(Protocol):
    """Posts an AdmissionReview over HTTPS (the HTTP layer provides it; the registry speaks no HTTP itself)."""

    async def post(self, endpoint: Endpoint, body: bytes) -> bytes:
        """The response body of a 200 answer; raises :class:`WebhookCallError` for anything else."""
        ...


def _split_host_port(text: str, default_port: int) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, default_port
    if not port.isdigit():
        raise WebhookCallError(f"invalid address {text!r}")
    return host.strip("[]"), int(port)


def _review(point: AdmissionPoint, obj: Obj | None, user: UserInfo, uid: str) -> Obj:
    info = point.info
    kind = {"group": info.group, "version": info.version, "kind": info.kind}
    resource = {"group": info.group, "version": info.version, "resource": info.plural}
    options: Obj = {"kind": _OPTIONS_KIND[point.operation], "apiVersion": "meta.k8s.io/v1"}
    if point.operation == DELETE:
        options.update(point.options or {})
    if point.dry_run:
        options["dryRun"] = ["All"]
    request: Obj = {
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": point.name,
        "operation": point.operation,
        "userInfo": user.to_dict(),
        "object": obj,
        "oldObject": point.old,
        "dryRun": point.dry_run,
        "options": options,
    }
    if point.subresource:
        request["subResource"] = request["requestSubResource"] = point.subresource
    if point.info.namespaced:
        request["namespace"] = point.namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _denied(hook: Hook, status: Any) -> errors.ApiError:
    """kube-apiserver's ``ToStatusErr``: the webhook's Status, prefixed with who refused."""
    status = status if isinstance(status, dict) else {}
    denied_by = f'admission webhook "{hook.name}" denied the request'
    code = status.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return errors.ApiError(code, str(status.get("reason") or ""), message, details)


class _CallFailed(Exception):
    """A webhook call failed; ``message`` is kube-apiserver's ``failed calling webhook ...`` text."""


class WebhookAdmission:
    """Calls the configured webhooks at the admission points of a write."""

    def __init__(self, store: Store, transport: WebhookTransport) -> None:
        self._store = store
        self._transport = transport
        self._hooks: tuple[list[Hook], list[Hook]] | None = None
        store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.key in (MUTATING_KEY, VALIDATING_KEY):
            self._hooks = None

    def hooks(self) -> tuple[list[Hook], list[Hook]]:
        """(mutating, validating) webhooks in call order, compiled once per change of the configurations."""
        if self._hooks is None:
            self._hooks = (
                compile_hooks(self._store.list(MUTATING_KEY), mutating=True),
                compile_hooks(self._store.list(VALIDATING_KEY), mutating=False),
            )
        return self._hooks

    async def run(self, make_steps: Callable[[], Steps[T]], user: UserInfo, warnings: list[str]) -> T:
        """Run a write, calling webhooks at its admission points; restart it when its object changed meanwhile."""
        mutating, validating = self.hooks()
        if not mutating and not validating:
            return run(make_steps())
        point: AdmissionPoint | None = None
        for _ in range(RETRIES):
            steps = make_steps()
            try:
                point = next(steps)
                while True:
                    point = steps.send(await self._admit(point, user, warnings))
            except StopIteration as stop:
                result: T = stop.value
                return result
            except Stale as stale:
                if point is None:
                    raise
                conflict = errors.conflict(point.info.group, point.info.plural, str(stale))
        raise conflict

    def _candidates(
        self, point: AdmissionPoint, hooks: list[Hook], request: Callable[[], Obj]
    ) -> list[Hook | _CallFailed]:
        """The webhooks the write goes to (a failed match stands in as its call error)."""
        namespace = self._store.get(_NAMESPACES, "", point.namespace) if point.namespace else None
        labels = namespace_labels(point, namespace)
        chosen: list[Hook | _CallFailed] = []
        for hook in hooks:
            try:
                matched = hook.matches(point, labels, request)
            except MatchError as exc:
                if hook.fails_closed:
                    chosen.append(_CallFailed(f'failed calling webhook "{hook.name}": {exc}'))
                continue
            if matched:
                if point.dry_run and hook.side_effects not in _DRY_RUN_SAFE:
                    raise errors.bad_request(f'admission webhook "{hook.name}" does not support dry run')
                chosen.append(hook)
        return chosen

    async def _admit(self, point: AdmissionPoint, user: UserInfo, warnings: list[str]) -> Obj | None:
        mutating, validating = self.hooks()
        hooks = mutating if point.phase == MUTATING else validating
        if not hooks or point.info.group == _EXEMPT_GROUP:
            return None
        built: list[Obj] = []

        def review() -> Obj:
            # Built only for a write that reaches a webhook or a match condition (most writes match nothing).
            if not built:
                built.append(_review(point, point.obj, user, str(uuid.uuid4())))
            return built[0]

        candidates = self._candidates(point, hooks, lambda: review()["request"])
        if not candidates:
            return None
        if point.phase == MUTATING:
            return await self._mutate(point, review(), candidates, warnings)
        await self._validate(review(), candidates, warnings)
        return None

    async def _mutate(
        self, point: AdmissionPoint, review: Obj, hooks: list[Hook | _CallFailed], warnings: list[str]
    ) -> Obj | None:
        obj, version = point.obj, 0
        seen: dict[tuple[str, str, int], int] = {}
        for attempt in (0, 1):
            for hook in hooks:
                if isinstance(hook, _CallFailed):
                    if attempt == 0:
                        raise errors.internal_error(str(hook))
                    continue
                if attempt == 1 and not (hook.reinvoke and seen.get(hook.key, version) < version):
                    continue
                review["request"]["object"] = obj
                patched = await self._call(hook, review, warnings, mutating=True)
                if patched is not None and obj is not None and patched != obj:
                    obj, version = patched, version + 1
                    admission.apply_defaults(point.info.key, obj, point.old)
                seen[hook.key] = version
        return obj if version else None

    async def _validate(self, review: Obj, hooks: list[Hook | _CallFailed], warnings: list[str]) -> None:
        if not hooks:
            return
        for hook in hooks:
            if isinstance(hook, _CallFailed):
                raise errors.internal_error(str(hook))
        results = await asyncio.gather(
            *(self._call(h, review, warnings, mutating=False) for h in hooks if isinstance(h, Hook)),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _call(self, hook: Hook, review: Obj, warnings: list[str], *, mutating: bool) -> Obj | None:
        """One webhook call; the patched object of a mutating webhook (None: no patch)."""
        try:
            endpoint = self._endpoint(hook)
            async with asyncio.timeout(hook.timeout):
                raw = await self._transport.post(endpoint, json.dumps(review).encode())
        except (WebhookCallError, TimeoutError) as exc:
            reason = str(exc) if isinstance(exc, WebhookCallError) else "context deadline exceeded"
            return self._failed(hook, f'failed to call webhook: Post "{self._url(hook)}": {reason}')
        try:
            response = self._response(review, raw)
        except ValueError as exc:
            return self._failed(hook, f"received invalid webhook response: {exc}")
        warnings.extend(str(w) for w in response.get("warnings") or () if w)
        if response.get("allowed") is not True:
            raise _denied(hook, response.get("status"))
        if not mutating or not response.get("patch"):
            return None
        obj = review["request"]["object"]
        if obj is None:
            return None
        try:
            ops = json.loads(base64.b64decode(str(response["patch"]), validate=True))
            return dict(json_patch(copy_json(obj), ops))
        except (binascii.Error, ValueError, PatchError, TypeError) as exc:
            raise errors.internal_error(f'failed calling webhook "{hook.name}": JSON patch: {exc}') from exc

    @staticmethod
    def _failed(hook: Hook, reason: str) -> None:
        message = f'failed calling webhook "{hook.name}": {reason}'
        if hook.fails_closed:
            raise errors.internal_error(message)
        return None

    @staticmethod
    def _response(review: Obj, raw: bytes) -> Obj:
        decoded = json.loads(raw)
        if not isinstance(decoded, dict) or decoded.get("kind") != "AdmissionReview":
            raise ValueError("expected an AdmissionReview")
        response = decoded.get("response")
        if not isinstance(response, dict):
            raise ValueError("response is missing")
        expected = review["request"]["uid"]
        if response.get("uid") != expected:
            raise ValueError(f"expected response.uid={expected!r}, got {response.get('uid')!r}")
        if response.get("patch") and response.get("patchType") != "JSONPatch":
            raise ValueError(f"unsupported patchType {response.get('patchType')!r}")
        return response

    @staticmethod
    def _path(hook: Hook, path: Any) -> str:
        """The request path with kube-apiserver's ``timeout`` query."""
        path = str(path or "") or "/"
        return f"{path}{'&' if '?' in path else '?'}timeout={int(hook.timeout)}s"

    def _url(self, hook: Hook) -> str:
        """The URL as kube-apiserver names it in errors (a service by its cluster DNS name)."""
        config = hook.client_config
        service = config.get("service")
        if isinstance(service, Mapping):
            host = f"{service.get('name')}.{service.get('namespace')}.svc:{service.get('port') or 443}"
            return f"https://{host}{self._path(hook, service.get('path'))}"
        scheme, sep, rest = str(config.get("url") or "").partition("://")
        authority, slash, path = rest.partition("/")
        return f"{scheme}{sep}{authority}{self._path(hook, slash + path)}"

    def _endpoint(self, hook: Hook) -> Endpoint:
        config = hook.client_config
        ca_bundle = self._ca_bundle(config.get("caBundle"))
        service = config.get("service")
        if isinstance(service, Mapping):
            namespace, name = str(service.get("namespace") or ""), str(service.get("name") or "")
            svc = self._store.get(_SERVICES, namespace, name)
            if svc is None:
                raise WebhookCallError(f'service "{name}" not found')
            address = (svc["metadata"].get("annotations") or {}).get(LOCAL_ADDRESS_ANNOTATION)
            if address:
                host, port = _split_host_port(str(address), 443)
            else:
                found = ready_endpoint(
                    svc, self._store.get(_ENDPOINTS, namespace, name), str(service.get("port") or 443)
                )
                if found is None:
                    raise WebhookCallError(f'no endpoints available for service "{name}"')
                host, port, _ = found
            path = self._path(hook, service.get("path"))
            return Endpoint(self._url(hook), host, port, path, f"{name}.{namespace}.svc", ca_bundle)
        raw_url = str(config.get("url") or "")
        scheme, _, rest = raw_url.partition("://")
        if scheme != "https" or not rest:
            raise WebhookCallError(f"unsupported webhook URL {raw_url!r}: 'https' is the only allowed URL scheme")
        authority, slash, path = rest.partition("/")
        host, port = _split_host_port(authority, 443)
        return Endpoint(self._url(hook), host, port, self._path(hook, slash + path), host, ca_bundle)

    @staticmethod
    def _ca_bundle(raw: Any) -> bytes | None:
        if not raw:
            return None
        try:
            return base64.b64decode(str(raw), validate=True)
        except binascii.Error as exc:
            raise WebhookCallError(f"invalid caBundle: {exc}") from exc
