"""Credentials: which secret a subscriber connects with, and BLACKWIDOW_CREDENTIALS parsing.

Secrets must never reach an error message or a repr; names may.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from blackwidow.core.settings import Settings, SettingsError, from_env
from sources.credentials import CredentialBook, MissingCredential
from sources.model import SubscriberSpec
from sources.twitter.query import DEFAULT_API_BASE

NODE_DEFAULT = {"bearer_token": "node-default-secret", "api_base": DEFAULT_API_BASE, "tier": "pro"}
NODE_TEAM = {"bearer_token": "node-team-secret", "api_base": DEFAULT_API_BASE, "tier": "pro"}
PUSHED = {"bearer_token": "pushed-secret", "api_base": DEFAULT_API_BASE, "tier": "pro"}
PAID = {
    "endpoint": "https://stream.example/v1",
    "auth_header": "Authorization",
    "auth_value": "paid-secret",
    "query_param": "q",
}
SECRETS = ("node-default-secret", "node-team-secret", "pushed-secret", "paid-secret")


@pytest.fixture
def book() -> CredentialBook:
    return CredentialBook(
        {"twitter": {"default": NODE_DEFAULT, "team": NODE_TEAM}, "datasift": {"paid": PAID}}
    )


def spec(source: str = "twitter", pushed: dict | None = None, **query: Any) -> SubscriberSpec:
    """A subscriber spec; `pushed` is the secret the hub sends, `query` may name a credential."""
    return SubscriberSpec(
        crawler_id=1,
        user_id=3,
        source=source,
        query={"terms": ["python"], **query},
        credential=pushed,
    )


# --- CredentialBook -------------------------------------------------------------------------


def test_the_pushed_credential_wins_over_the_nodes_own(book):
    assert book.secret(spec(pushed=PUSHED, credential="team")) == PUSHED
    assert book.secret(spec(pushed=PUSHED)) == PUSHED


def test_the_pushed_credential_is_used_on_a_node_without_credentials():
    assert CredentialBook().secret(spec(pushed=PUSHED, credential="nowhere")) == PUSHED


def test_the_nodes_credential_of_the_queried_name_is_used(book):
    assert book.secret(spec(credential="team")) == NODE_TEAM


def test_a_query_naming_no_credential_uses_default(book):
    assert book.secret(spec()) == NODE_DEFAULT


def test_credentials_are_looked_up_per_source(book):
    assert book.secret(spec(source="datasift", credential="paid")) == PAID
    with pytest.raises(MissingCredential):
        book.secret(spec(source="twitter", credential="paid"))
    with pytest.raises(MissingCredential):
        book.secret(spec(source="datasift"))  # no datasift "default"


@pytest.mark.parametrize("name", ["nowhere", "Team", "default "])
def test_an_unknown_name_is_a_missing_credential_naming_it_and_no_secret(book, name):
    with pytest.raises(MissingCredential) as caught:
        book.secret(spec(credential=name))

    assert caught.value.field == "query.credential"
    assert repr(name) in str(caught.value)
    assert "twitter" in str(caught.value)
    assert not any(secret in str(caught.value) for secret in SECRETS)


def test_a_node_without_credentials_has_no_default():
    with pytest.raises(MissingCredential):
        CredentialBook().secret(spec())


def test_missing_credential_is_a_lookup_error():
    assert issubclass(MissingCredential, LookupError)


def test_names_lists_names_only(book):
    names = book.names()

    assert names == {"datasift": ["paid"], "twitter": ["default", "team"]}
    assert not any(secret in json.dumps(names) for secret in SECRETS)


def test_an_empty_book_has_no_names():
    assert CredentialBook().names() == {}
    assert CredentialBook(None).names() == {}


def test_the_book_keeps_its_own_copy():
    given = {"twitter": {"default": NODE_DEFAULT}}
    own = CredentialBook(given)
    given["twitter"]["late"] = NODE_TEAM

    assert own.names() == {"twitter": ["default"]}


# --- BLACKWIDOW_CREDENTIALS -----------------------------------------------------------------


def credentials_env(data: Any) -> dict[str, str]:
    return {"BLACKWIDOW_CREDENTIALS": data if isinstance(data, str) else json.dumps(data)}


def test_no_variable_means_no_credentials():
    assert from_env({}).credentials == {}


def test_valid_twitter_and_datasift_credentials_load_with_their_defaults():
    settings = from_env(
        credentials_env(
            {
                "twitter": {
                    "default": {"bearer_token": "tw-secret"},
                    "team.b": {
                        "bearer_token": "tw-secret-b",
                        "api_base": "http://127.0.0.1:9/",
                        "tier": "enterprise",
                        "max_rules": 10,
                    },
                },
                "datasift": {
                    "default": {"endpoint": "https://stream.example/v1", "auth_value": "ds-secret"}
                },
            }
        )
    )

    assert settings.credentials == {
        "twitter": {
            "default": {"bearer_token": "tw-secret", "api_base": DEFAULT_API_BASE, "tier": "pro"},
            "team.b": {
                "bearer_token": "tw-secret-b",
                "api_base": "http://127.0.0.1:9",
                "tier": "enterprise",
                "max_rules": 10,
            },
        },
        "datasift": {
            "default": {
                "endpoint": "https://stream.example/v1",
                "auth_header": "Authorization",
                "auth_value": "ds-secret",
                "query_param": "q",
            }
        },
    }
    assert CredentialBook(settings.credentials).names() == {
        "datasift": ["default"],
        "twitter": ["default", "team.b"],
    }


def test_an_empty_object_is_no_credentials():
    assert from_env(credentials_env({})).credentials == {}


@pytest.mark.parametrize(
    ("data", "place"),
    [
        pytest.param({"twitter": {"default": {}}}, "twitter.default.bearer_token", id="no-token"),
        pytest.param(
            {"twitter": {"default": {"bearer_token": ""}}},
            "twitter.default.bearer_token",
            id="empty-token",
        ),
        pytest.param(
            {"twitter": {"default": {"bearer_token": "SECRET-1", "tier": "gold"}}},
            "twitter.default.tier",
            id="bad-tier",
        ),
        pytest.param(
            {"twitter": {"x": {"bearer_token": "SECRET-1", "api_base": "https://u:SECRET-2@gw"}}},
            "twitter.x.api_base",
            id="credentials-in-api-base",
        ),
        pytest.param(
            {"twitter": {"x": {"bearer_token": "SECRET-1", "max_rules": "SECRET-2"}}},
            "twitter.x.max_rules",
            id="text-max-rules",
        ),
        pytest.param(
            {"twitter": {"x": {"bearer_token": "SECRET-1", "bearer": "SECRET-2"}}},
            "twitter.x.bearer",
            id="unknown-field",
        ),
        pytest.param(
            {"twitter": {"default": "SECRET-1"}},
            "twitter.default: expected an object",
            id="credential-not-an-object",
        ),
        pytest.param(
            {"datasift": {"default": {"endpoint": "https://stream.example"}}},
            "datasift.default.auth_value",
            id="no-auth-value",
        ),
        pytest.param(
            {"datasift": {"d": {"endpoint": "https://s.example", "auth_value": "SECRET-1\r\n"}}},
            "datasift.d.auth_value",
            id="control-characters-in-auth-value",
        ),
        pytest.param(
            {"datasift": {"d": {"endpoint": "not a url", "auth_value": "SECRET-1"}}},
            "datasift.d.endpoint",
            id="bad-endpoint",
        ),
        pytest.param({"gopher": {"default": {"token": "SECRET-1"}}}, "gopher", id="unknown-source"),
        pytest.param({"rss": {"default": {"token": "SECRET-1"}}}, "rss", id="rss-takes-none"),
        pytest.param({"twitter": ["SECRET-1"]}, "twitter", id="source-not-an-object"),
        pytest.param({"twitter": "SECRET-1"}, "twitter", id="source-is-text"),
        pytest.param(
            {"twitter": {"bad name": {"bearer_token": "SECRET-1"}}}, "twitter.bad name", id="space"
        ),
        pytest.param(
            {"twitter": {"-x": {"bearer_token": "SECRET-1"}}}, "twitter.-x", id="leading-dash"
        ),
        pytest.param({"twitter": {"": {"bearer_token": "SECRET-1"}}}, "twitter.", id="empty-name"),
        pytest.param(
            {"twitter": {"default\n": {"bearer_token": "SECRET-1"}}},
            "twitter.default",
            id="name-with-trailing-newline",
        ),
    ],
)
def test_bad_credentials_name_the_variable_and_place_but_no_secret(data, place):
    with pytest.raises(SettingsError) as caught:
        from_env(credentials_env(data))

    message = str(caught.value)
    assert caught.value.name == "BLACKWIDOW_CREDENTIALS"
    assert message.startswith(f"BLACKWIDOW_CREDENTIALS: {place}")
    assert "SECRET" not in message


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{"twitter": {"default": {"bearer_token": "SECRET-1"', id="truncated"),
        pytest.param("SECRET-1", id="not-json"),
        pytest.param('["SECRET-1"]', id="array"),
        pytest.param('"SECRET-1"', id="string"),
        pytest.param("null", id="null"),
        pytest.param("", id="empty"),
    ],
)
def test_credentials_that_are_not_a_json_object_are_refused_without_echoing_them(raw):
    with pytest.raises(SettingsError) as caught:
        from_env(credentials_env(raw))

    assert caught.value.name == "BLACKWIDOW_CREDENTIALS"
    assert "JSON object" in str(caught.value)
    assert "SECRET" not in str(caught.value)


def test_the_settings_repr_never_shows_a_credential_secret():
    settings = from_env(
        {
            **credentials_env(
                {
                    "twitter": {"default": {"bearer_token": "tw-do-not-log"}},
                    "datasift": {
                        "d": {"endpoint": "https://s.example", "auth_value": "ds-do-not-log"}
                    },
                }
            ),
            "BLACKWIDOW_DATABASE_URL": "sqlite:///visible.db",
        }
    )

    assert "do-not-log" not in repr(settings)
    assert "do-not-log" not in str(settings)
    assert "sqlite:///visible.db" in repr(settings)


# --- provider timing ------------------------------------------------------------------------


def test_provider_timing_defaults():
    assert (Settings().search_interval, Settings().rate_limit_wait) == (60.0, 60.0)


@pytest.mark.parametrize(
    ("name", "attribute"),
    [
        ("BLACKWIDOW_SEARCH_INTERVAL", "search_interval"),
        ("BLACKWIDOW_RATE_LIMIT_WAIT", "rate_limit_wait"),
    ],
)
@pytest.mark.parametrize(("raw", "seconds"), [("30", 30.0), ("0.5", 0.5), ("900", 900.0)])
def test_provider_timing_parses_as_seconds(name, attribute, raw, seconds):
    settings = from_env({name: raw})

    assert getattr(settings, attribute) == seconds
    assert settings.replace(**{attribute: getattr(Settings(), attribute)}) == Settings()


@pytest.mark.parametrize("name", ["BLACKWIDOW_SEARCH_INTERVAL", "BLACKWIDOW_RATE_LIMIT_WAIT"])
@pytest.mark.parametrize("raw", ["0", "-1", "nan", "inf", "1m", ""])
def test_provider_timing_must_be_more_than_zero_seconds(name, raw):
    with pytest.raises(SettingsError) as caught:
        from_env({name: raw})

    assert caught.value.name == name
    assert str(caught.value).startswith(f"{name}: ")
