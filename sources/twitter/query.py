"""What a Twitter/X crawler asks for, the credentials it names, and what decides its data source.

A filtered stream allows one connection per app, so every streaming crawler of one
credential shares one data source (the key is the credential) and its terms become tagged
rules on that connection. A search is keyed by its canonical terms: equal searches share a poll.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate

from sources.credentials import credential_field
from sources.urls import fetchable

MAX_TERMS = 100
MAX_TERM_LENGTH = 128  # X's longest keyword or phrase in a rule
DEFAULT_API_BASE = "https://api.twitter.com"


@dataclass(frozen=True)
class RuleLimits:
    """How many rules an app may hold and how long a rule or a search query may be."""

    max_rules: int
    max_rule_length: int
    max_query_length: int


# The published limits of X API v2 access tiers, filtered stream and recent search.
TIERS = {
    "pro": RuleLimits(max_rules=1000, max_rule_length=1024, max_query_length=512),
    "enterprise": RuleLimits(max_rules=25000, max_rule_length=2048, max_query_length=4096),
}


def _plain_term(term: str) -> None:
    """Terms are matched as quoted phrases, so a quote or a backslash could end the quoting."""
    if any(c in term for c in '"\\') or any(ord(c) < 32 or ord(c) == 127 for c in term):
        raise ValidationError("must not contain quotes, backslashes or control characters")
    if not term.strip():
        raise ValidationError("must not be blank")


class TwitterQuery(Schema):
    terms = fields.List(
        fields.String(validate=[validate.Length(min=1, max=MAX_TERM_LENGTH), _plain_term]),
        required=True,
        validate=validate.Length(min=1, max=MAX_TERMS),
    )
    languages = fields.List(
        fields.String(validate=validate.Regexp(r"^[a-z]{2,3}\Z", error="an ISO 639 code")),
        load_default=list,
        validate=validate.Length(max=20),
    )
    mode = fields.String(load_default="stream", validate=validate.OneOf(["stream", "search"]))
    credential = credential_field()


def canonical_terms(terms: list[str]) -> list[str]:
    """Case and spacing do not change what X matches: `Python  3` and `python 3` are one term."""
    return sorted({" ".join(term.casefold().split()) for term in terms})


def canonical_languages(languages: list[str]) -> list[str]:
    return sorted(set(languages))


def twitter_fetch_target(query: dict[str, Any]) -> dict[str, Any]:
    if query["mode"] == "stream":  # one connection per app: the terms are rules on it
        return {"mode": "stream", "credential": query["credential"]}
    return {
        "mode": "search",
        "credential": query["credential"],
        "terms": canonical_terms(query["terms"]),
        "languages": canonical_languages(query["languages"]),
    }


class TwitterCredential(Schema):
    bearer_token = fields.String(required=True, validate=validate.Length(min=1, max=2000))
    api_base = fields.Url(
        load_default=DEFAULT_API_BASE,
        schemes={"http", "https"},
        require_tld=False,
        validate=fetchable,
        metadata={"description": "where the X API answers; another host only for a gateway"},
    )
    tier = fields.String(load_default="pro", validate=validate.OneOf(sorted(TIERS)))
    max_rules = fields.Integer(strict=True, validate=validate.Range(min=1, max=1_000_000))
    max_rule_length = fields.Integer(strict=True, validate=validate.Range(min=64, max=100_000))
    max_query_length = fields.Integer(strict=True, validate=validate.Range(min=64, max=100_000))

    @post_load
    def _no_trailing_slash(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        data["api_base"] = data["api_base"].rstrip("/")
        return data


def rule_limits(credential: dict[str, Any]) -> RuleLimits:
    """The tier's published limits, with any the credential sets itself."""
    tier = TIERS[credential.get("tier", "pro")]
    return RuleLimits(
        max_rules=credential.get("max_rules") or tier.max_rules,
        max_rule_length=credential.get("max_rule_length") or tier.max_rule_length,
        max_query_length=credential.get("max_query_length") or tier.max_query_length,
    )
