"""``authorization.k8s.io/v1`` reviews: ask the authorizer in force, store nothing.

``SelfSubjectAccessReview`` (``kubectl auth can-i``) asks for the caller, ``SubjectAccessReview`` and
``LocalSubjectAccessReview`` for the user the spec names, ``SelfSubjectRulesReview`` (``kubectl auth can-i --list``)
lists the caller's rules in a namespace. The answer comes from the same ``authorize``/``rules_for`` the request path
uses, so what can-i says is what the server enforces. The response echoes the request with ``status`` filled in.
"""

from __future__ import annotations

from typing import Any, Final

from aiohttp import web

from grove_sim.auth.attributes import Attributes
from grove_sim.auth.authentication import UserInfo
from grove_sim.auth.authorizer import AlwaysAllow, Authorizer
from grove_sim.http.context import ApiContext, Target, json_response
from grove_sim.http.requestinfo import read_body
from grove_sim.machinery import errors

__all__ = ["REVIEWS", "review"]

_GROUP: Final = "authorization.k8s.io"
REVIEWS: Final = frozenset(
    {
        (_GROUP, "selfsubjectaccessreviews"),
        (_GROUP, "subjectaccessreviews"),
        (_GROUP, "localsubjectaccessreviews"),
        (_GROUP, "selfsubjectrulesreviews"),
    }
)


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _attributes(kind: str, user: UserInfo, spec: dict[str, Any]) -> Attributes:
    """The attributes a review's spec asks about; 422 unless exactly one of its two attribute sets is given."""
    resource, nonresource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if isinstance(resource, dict) and isinstance(nonresource, dict):
        detail = "cannot be specified in combination with resourceAttributes"
        raise errors.invalid(kind, _GROUP, "", [("spec.nonResourceAttributes", "FieldValueInvalid", detail)])
    if isinstance(nonresource, dict):
        return Attributes(
            user, _text(nonresource.get("verb")), resource_request=False, path=_text(nonresource.get("path"))
        )
    if not isinstance(resource, dict):
        detail = "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        raise errors.invalid(kind, _GROUP, "", [("spec.resourceAttributes", "FieldValueInvalid", detail)])
    return Attributes(
        user,
        _text(resource.get("verb")),
        group=_text(resource.get("group")),
        resource=_text(resource.get("resource")),
        subresource=_text(resource.get("subresource")),
        namespace=_text(resource.get("namespace")),
        name=_text(resource.get("name")),
    )


def _subject(kind: str, spec: dict[str, Any]) -> UserInfo:
    """The user a (Local)SubjectAccessReview names."""
    username = _text(spec.get("user"))
    groups = tuple(g for g in spec.get("groups") or [] if isinstance(g, str))
    if not username and not groups:
        detail = "at least one of user or group must be specified"
        raise errors.invalid(kind, _GROUP, "", [("spec.user", "FieldValueInvalid", detail)])
    extra = {k: tuple(v) for k, v in _map(spec.get("extra")).items() if isinstance(v, list)}
    return UserInfo(username, uid=_text(spec.get("uid")), groups=groups, extra=extra)


def _access(authorizer: Authorizer, target: Target, body: dict[str, Any]) -> dict[str, Any]:
    kind = target.info.kind
    spec = _map(body.get("spec"))
    user = target.user if target.info.plural == "selfsubjectaccessreviews" else _subject(kind, spec)
    if target.info.plural == "localsubjectaccessreviews":
        resource = _map(spec.get("resourceAttributes"))
        if _text(resource.get("namespace")) not in ("", target.ns):
            raise errors.bad_request(f"spec.resourceAttributes.namespace must match namespace: {target.ns}")
        spec = {**spec, "resourceAttributes": {**resource, "namespace": target.ns}}
    decision = authorizer.authorize(_attributes(kind, user, spec))
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def _rules(authorizer: Authorizer, target: Target, body: dict[str, Any]) -> dict[str, Any]:
    namespace = _text(_map(body.get("spec")).get("namespace"))
    if not namespace:
        raise errors.bad_request("no namespace on request")
    rules, incomplete = authorizer.rules_for(target.user, namespace)
    resource_rules, nonresource_rules = [], []
    for rule in rules:
        if rule.get("nonResourceURLs"):
            nonresource_rules.append({"verbs": rule.get("verbs") or [], "nonResourceURLs": rule["nonResourceURLs"]})
            continue
        out = {key: rule[key] for key in ("verbs", "apiGroups", "resources", "resourceNames") if rule.get(key)}
        out.setdefault("verbs", [])
        resource_rules.append(out)
    return {"resourceRules": resource_rules, "nonResourceRules": nonresource_rules, "incomplete": incomplete}


async def review(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    """POST of one of the ``REVIEWS``: the request echoed with the authorizer's ``status``."""
    body = _map(await read_body(request))
    authorizer = ctx.authorizer if ctx.authorizer is not None else AlwaysAllow()
    if target.info.plural == "selfsubjectrulesreviews":
        status = _rules(authorizer, target, body)
    else:
        status = _access(authorizer, target, body)
    answer = {
        "kind": target.info.kind,
        "apiVersion": target.info.group_version,
        "metadata": {"creationTimestamp": None, **_map(body.get("metadata"))},
        "spec": _map(body.get("spec")),
        "status": status,
    }
    return json_response(answer, 201)
