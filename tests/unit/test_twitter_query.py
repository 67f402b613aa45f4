"""Twitter/X and paid-stream queries and credentials: what is refused, defaults, and source keys."""

from __future__ import annotations

from typing import Any

import pytest
from marshmallow import Schema, ValidationError

from blackwidow.core.domain_errors import first_invalid_field
from sources.datasift.query import DatasiftCredential, DatasiftQuery, datasift_fetch_target
from sources.keys import source_key
from sources.twitter.query import (
    DEFAULT_API_BASE,
    MAX_TERMS,
    TIERS,
    RuleLimits,
    TwitterCredential,
    TwitterQuery,
    rule_limits,
    twitter_fetch_target,
)


def refused_field(schema: type[Schema], data: dict[str, Any]) -> str | None:
    """The dotted field the API would name for `data`; fails the test when it loads."""
    with pytest.raises(ValidationError) as caught:
        schema().load(data)
    return first_invalid_field(caught.value.messages)[0]


# --- TwitterQuery ---------------------------------------------------------------------------


def test_twitter_query_defaults():
    assert TwitterQuery().load({"terms": ["python"]}) == {
        "terms": ["python"],
        "languages": [],
        "mode": "stream",
        "credential": "default",
    }


def test_twitter_query_keeps_what_it_is_given():
    query = {"terms": ["Python", "rust"], "languages": ["en"], "mode": "search", "credential": "b"}
    assert TwitterQuery().load(query) == query


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        pytest.param({"terms": ['say "hi"']}, "terms.0", id="quote"),
        pytest.param({"terms": ["ok", "back\\slash"]}, "terms.1", id="backslash"),
        pytest.param({"terms": ["new\nline"]}, "terms.0", id="newline"),
        pytest.param({"terms": ["tab\there"]}, "terms.0", id="tab"),
        pytest.param({"terms": ["nul\x00"]}, "terms.0", id="nul"),
        pytest.param({"terms": ["   "]}, "terms.0", id="blank"),
        pytest.param({"terms": [""]}, "terms.0", id="empty"),
        pytest.param({"terms": ["x" * 129]}, "terms.0", id="term-too-long"),
        pytest.param({"terms": []}, "terms", id="no-terms"),
        pytest.param({"terms": [f"t{i}" for i in range(MAX_TERMS + 1)]}, "terms", id="too-many"),
        pytest.param({"terms": "python"}, "terms", id="terms-not-a-list"),
        pytest.param({"languages": ["EN"]}, "languages.0", id="upper-case-language"),
        pytest.param({"languages": ["en", "english"]}, "languages.1", id="long-language"),
        pytest.param({"languages": ["e"]}, "languages.0", id="short-language"),
        pytest.param({"languages": ["en-GB"]}, "languages.0", id="language-with-region"),
        pytest.param({"languages": ["en\n"]}, "languages.0", id="language-trailing-newline"),
        pytest.param({"languages": ["en"] * 21}, "languages", id="too-many-languages"),
        pytest.param({"mode": "firehose"}, "mode", id="bad-mode"),
        pytest.param({"mode": "Stream"}, "mode", id="mode-case"),
        pytest.param({"credential": ""}, "credential", id="empty-credential"),
        pytest.param({"credential": "-team"}, "credential", id="credential-leading-dash"),
        pytest.param({"credential": "my team"}, "credential", id="credential-with-space"),
        pytest.param({"credential": "x" * 65}, "credential", id="credential-too-long"),
        pytest.param({"credential": "default\n"}, "credential", id="credential-trailing-newline"),
    ],
)
def test_twitter_query_refusals_name_the_field(changes, field):
    assert refused_field(TwitterQuery, {"terms": ["python"], **changes}) == field


def test_twitter_query_requires_terms():
    assert refused_field(TwitterQuery, {"mode": "search"}) == "terms"


def test_twitter_query_takes_the_longest_term_and_most_terms_allowed():
    query = TwitterQuery().load({"terms": [f"{i:03}" + "x" * 125 for i in range(MAX_TERMS)]})
    assert len(query["terms"]) == MAX_TERMS


def test_twitter_query_refuses_unknown_fields():
    assert refused_field(TwitterQuery, {"terms": ["python"], "rules": ["x"]}) == "rules"


# --- source keys ----------------------------------------------------------------------------


def twitter_key(credential_owner: int | None = None, **query: Any) -> str:
    loaded = TwitterQuery().load({"terms": ["python"], **query})
    return source_key("twitter", loaded, credential_owner)


def test_every_stream_of_one_credential_has_one_key_whatever_its_terms():
    reference = twitter_key(terms=["python"])
    assert twitter_key(terms=["rust", "go"]) == reference
    assert twitter_key(terms=["python"], languages=["fr"]) == reference
    assert twitter_key(terms=["python"], credential="default") == reference


def test_streams_of_different_credentials_have_different_keys():
    assert twitter_key(credential="team-b") != twitter_key(credential="team-a")


def test_stream_fetch_target_is_the_credential_only():
    query = TwitterQuery().load({"terms": ["python"], "languages": ["en"], "credential": "b"})
    assert twitter_fetch_target(query) == {"mode": "stream", "credential": "b"}


@pytest.mark.parametrize(
    "query",
    [
        {"terms": ["rust", "Python  3"], "languages": ["fr", "en"]},
        {"terms": ["python 3", "RUST", "rust"], "languages": ["en", "fr", "en"]},
        {"terms": ["  python   3 ", "Rust"], "languages": ["en", "fr"]},
    ],
)
def test_searches_for_equal_canonical_terms_and_languages_share_a_key(query):
    reference = twitter_key(mode="search", terms=["python 3", "rust"], languages=["en", "fr"])
    assert twitter_key(mode="search", **query) == reference


@pytest.mark.parametrize(
    "changes",
    [
        {"terms": ["python 3"]},
        {"terms": ["python 3", "rust", "go"]},
        {"terms": ["python3", "rust"]},
        {"languages": ["en"]},
        {"languages": []},
        {"credential": "other"},
    ],
)
def test_searches_differing_in_terms_languages_or_credential_have_different_keys(changes):
    base = {"mode": "search", "terms": ["python 3", "rust"], "languages": ["en", "fr"]}
    assert twitter_key(**{**base, **changes}) != twitter_key(**base)


def test_a_stream_and_a_search_of_the_same_terms_have_different_keys():
    assert twitter_key(mode="stream") != twitter_key(mode="search")


@pytest.mark.parametrize("mode", ["stream", "search"])
def test_the_credential_owner_is_part_of_the_key(mode):
    """Two users' credentials named alike are two accounts: they must not share a source."""
    node_own = twitter_key(mode=mode)
    user_1 = twitter_key(credential_owner=1, mode=mode)
    user_2 = twitter_key(credential_owner=2, mode=mode)
    assert len({node_own, user_1, user_2}) == 3
    assert twitter_key(credential_owner=1, mode=mode) == user_1


def test_twitter_keys_differ_from_a_paid_stream_key_of_the_same_credential():
    paid = source_key("datasift", {"query": "python", "credential": "default"})
    assert paid not in {twitter_key(mode="stream"), twitter_key(mode="search")}


# --- TwitterCredential ----------------------------------------------------------------------


def test_twitter_credential_defaults():
    credential = TwitterCredential().load({"bearer_token": "AAAA-token"})
    assert credential == {
        "bearer_token": "AAAA-token",
        "api_base": DEFAULT_API_BASE,
        "tier": "pro",
    }
    assert rule_limits(credential) == TIERS["pro"]


@pytest.mark.parametrize(
    ("tier", "limits"),
    [
        ("pro", RuleLimits(max_rules=1000, max_rule_length=1024, max_query_length=512)),
        ("enterprise", RuleLimits(max_rules=25000, max_rule_length=2048, max_query_length=4096)),
    ],
)
def test_rule_limits_follow_the_tier(tier, limits):
    credential = TwitterCredential().load({"bearer_token": "t", "tier": tier})
    assert rule_limits(credential) == limits


def test_rule_limits_the_credential_sets_override_its_tier():
    credential = TwitterCredential().load(
        {"bearer_token": "t", "tier": "enterprise", "max_rules": 5, "max_query_length": 100}
    )
    assert rule_limits(credential) == RuleLimits(
        max_rules=5, max_rule_length=2048, max_query_length=100
    )


@pytest.mark.parametrize(
    ("api_base", "expected"),
    [
        ("http://127.0.0.1:9/", "http://127.0.0.1:9"),
        ("https://gateway.example/x/", "https://gateway.example/x"),
        ("https://gateway.example/x", "https://gateway.example/x"),
        ("http://localhost:8080", "http://localhost:8080"),
    ],
)
def test_api_base_loses_its_trailing_slash(api_base, expected):
    credential = TwitterCredential().load({"bearer_token": "t", "api_base": api_base})
    assert credential["api_base"] == expected


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        pytest.param({"bearer_token": None}, "bearer_token", id="no-token"),
        pytest.param({"bearer_token": ""}, "bearer_token", id="empty-token"),
        pytest.param({"api_base": "https://user:pw@gateway.example"}, "api_base", id="url-creds"),
        pytest.param({"api_base": "https://token@gateway.example"}, "api_base", id="url-user"),
        pytest.param({"api_base": "ftp://gateway.example"}, "api_base", id="not-http"),
        pytest.param({"api_base": "http://127.0.0.1:99999"}, "api_base", id="bad-port"),
        pytest.param({"tier": "basic"}, "tier", id="unknown-tier"),
        pytest.param({"max_rules": 0}, "max_rules", id="no-rules"),
        pytest.param({"max_rules": "5"}, "max_rules", id="rules-as-text"),
        pytest.param({"max_rule_length": 63}, "max_rule_length", id="short-rules"),
        pytest.param({"max_query_length": 10}, "max_query_length", id="short-queries"),
    ],
)
def test_twitter_credential_refusals_name_the_field(changes, field):
    data = {"bearer_token": "t", **changes}
    assert refused_field(TwitterCredential, {k: v for k, v in data.items() if v is not None}) == (
        field
    )


def test_a_refused_api_base_does_not_echo_the_password_in_it():
    with pytest.raises(ValidationError) as caught:
        TwitterCredential().load(
            {"bearer_token": "t", "api_base": "https://user:hunter2-secret@gateway.example"}
        )
    assert "hunter2-secret" not in str(caught.value.messages)


# --- the paid stream ------------------------------------------------------------------------


def test_datasift_query_defaults_to_the_default_credential():
    assert DatasiftQuery().load({"query": 'interaction.content contains "python"'}) == {
        "query": 'interaction.content contains "python"',
        "credential": "default",
    }


@pytest.mark.parametrize(
    ("data", "field"),
    [
        pytest.param({}, "query", id="missing"),
        pytest.param({"query": ""}, "query", id="empty"),
        pytest.param({"query": "a\nb"}, "query", id="control-character"),
        pytest.param({"query": "x" * 4097}, "query", id="too-long"),
        pytest.param({"query": "x", "credential": "no way"}, "credential", id="bad-credential"),
    ],
)
def test_datasift_query_refusals_name_the_field(data, field):
    assert refused_field(DatasiftQuery, data) == field


def datasift_key(query: str, credential: str = "default", owner: int | None = None) -> str:
    loaded = DatasiftQuery().load({"query": query, "credential": credential})
    return source_key("datasift", loaded, owner)


def test_equal_paid_queries_of_one_credential_share_a_key():
    assert datasift_key("python") == datasift_key("python")
    assert datasift_fetch_target({"query": "q", "credential": "c"}) == {
        "query": "q",
        "credential": "c",
    }


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(("rust", "default", None), id="other-query"),
        pytest.param(("Python", "default", None), id="query-case"),  # the provider's language
        pytest.param(("python", "team-b", None), id="other-credential"),
        pytest.param(("python", "default", 1), id="a-user-credential"),
    ],
)
def test_paid_queries_differing_in_query_credential_or_owner_have_different_keys(other):
    assert datasift_key(*other) != datasift_key("python")


def test_datasift_credential_defaults():
    credential = DatasiftCredential().load(
        {"endpoint": "https://stream.example/v1", "auth_value": "key-123"}
    )
    assert credential == {
        "endpoint": "https://stream.example/v1",
        "auth_header": "Authorization",
        "auth_value": "key-123",
        "query_param": "q",
    }


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        pytest.param({"endpoint": None}, "endpoint", id="no-endpoint"),
        pytest.param({"endpoint": "wss://stream.example"}, "endpoint", id="not-http"),
        pytest.param({"endpoint": "https://u:p@stream.example"}, "endpoint", id="url-creds"),
        pytest.param({"auth_value": None}, "auth_value", id="no-secret"),
        pytest.param({"auth_value": "key\r\nX-Injected: 1"}, "auth_value", id="crlf-secret"),
        pytest.param({"auth_header": "X Key"}, "auth_header", id="header-with-space"),
        pytest.param({"auth_header": "X-Key:"}, "auth_header", id="header-with-colon"),
        pytest.param({"auth_header": "X-Key\n"}, "auth_header", id="header-trailing-newline"),
        pytest.param({"query_param": "q&x=1"}, "query_param", id="param-with-ampersand"),
    ],
)
def test_datasift_credential_refusals_name_the_field(changes, field):
    data = {"endpoint": "https://stream.example/v1", "auth_value": "key-123", **changes}
    assert refused_field(DatasiftCredential, {k: v for k, v in data.items() if v is not None}) == (
        field
    )
