"""The escalation check's coverage test is sound: when it finds nothing missing, every request the granted rules
allow is allowed by the rules the writer holds (so nobody grants more than they have)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_sim.auth.attributes import Attributes, rule_allows
from grove_sim.auth.authentication import UserInfo
from grove_sim.auth.escalation import covers

GROUPS = ("", "apps", "*")
RESOURCES = ("pods", "pods/status", "pods/log", "deployments", "*", "*/status")
VERBS = ("get", "list", "create", "*")
URLS = ("/healthz", "/api/*", "*", "/metrics")

resource_rules = st.fixed_dictionaries(
    {
        "apiGroups": st.lists(st.sampled_from(GROUPS), min_size=1, max_size=2, unique=True),
        "resources": st.lists(st.sampled_from(RESOURCES), min_size=1, max_size=3, unique=True),
        "verbs": st.lists(st.sampled_from(VERBS), min_size=1, max_size=3, unique=True),
    },
    optional={"resourceNames": st.lists(st.sampled_from(("a", "b")), min_size=1, max_size=2, unique=True)},
)
url_rules = st.fixed_dictionaries(
    {
        "nonResourceURLs": st.lists(st.sampled_from(URLS), min_size=1, max_size=2, unique=True),
        "verbs": st.lists(st.sampled_from(VERBS), min_size=1, max_size=2, unique=True),
    }
)
rule_lists = st.lists(st.one_of(resource_rules, url_rules), max_size=4)
USER = UserInfo("someone")
requests = st.one_of(
    st.builds(
        lambda verb, group, resource, name: Attributes(
            USER, verb, group=group, resource=resource.split("/")[0], subresource=resource.partition("/")[2], name=name
        ),
        st.sampled_from(("get", "list", "create", "delete")),
        st.sampled_from(("", "apps", "batch")),
        st.sampled_from(("pods", "pods/status", "pods/log", "deployments", "secrets")),
        st.sampled_from(("", "a", "b", "c")),
    ),
    st.builds(
        lambda verb, path: Attributes(USER, verb, resource_request=False, path=path),
        st.sampled_from(("get", "post")),
        st.sampled_from(("/healthz", "/api/v1", "/metrics", "/version")),
    ),
)


@given(owned=rule_lists, granted=rule_lists, asked=st.lists(requests, min_size=1, max_size=8))
def test_covered_rules_allow_nothing_more(
    owned: list[dict[str, Any]], granted: list[dict[str, Any]], asked: list[Attributes]
) -> None:
    if covers(owned, granted):
        return
    for attributes in asked:
        if any(rule_allows(attributes, rule) for rule in granted):
            assert any(rule_allows(attributes, rule) for rule in owned)


@given(rules=rule_lists)
def test_rules_cover_themselves(rules: list[dict[str, Any]]) -> None:
    assert covers(rules, rules) == []
