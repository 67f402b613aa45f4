"""Fake X (Twitter) API v2 on 127.0.0.1, port 0: the filtered stream, its rules and recent
search, for tests.

X is a paid service tests must never call, so this stands in for api.twitter.com. It speaks X's
wire format and keeps the limits a client has to live with (one stream connection per app,
rule caps, rate limits, keep-alives, dropped connections, connections still counted after
their client left), so a client that works here has met them. Point the real tweepy client
at it with `route_to(client.session, fake.url)`. Use it as a context manager (it runs in a
thread) or run it as a module, which prints its URL as the first line.
"""

from __future__ import annotations

import contextlib
import hashlib
import http
import json
import re
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import requests

from sources import api_session
from sources.fetch.fetcher import GuardedFetcher
from tests.servers.streaming import OpenStream, Reply, StreamHandler, StreamingFake

X_HOST = "https://api.twitter.com"
LOOPBACK_FETCHER = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}))

RULES_PATH = "/2/tweets/search/stream/rules"
STREAM_PATH = "/2/tweets/search/stream"
SEARCH_PATH = "/2/tweets/search/recent"
PROBLEMS = "https://api.twitter.com/2/problems/"
FIRST_RULE_ID = 1_700_000_000_000_000_001
TWITTER_EPOCH_MS = 1_288_834_974_657  # snowflake ids count milliseconds from here
SEARCH_RATE_LIMIT = 450
HOLD_MAX = 10.0  # seconds: a held rules request is answered after this even if never released

UNAUTHORIZED = {
    "title": "Unauthorized",
    "type": "about:blank",
    "status": 401,
    "detail": "Unauthorized",
}
TOO_MANY_CONNECTIONS = {
    "title": "ConnectionException",
    "detail": "This stream is currently at the maximum allowed connection limit.",
    "connection_issue": "TooManyConnections",
    "type": PROBLEMS + "streaming-connection",
}


# --- Routing tweepy here -------------------------------------------------------------------


def route_to(session: requests.Session, base_url: str) -> None:
    """Make `session` (a tweepy client's) send what it means for api.twitter.com to `base_url`,
    the way a node does for a credential's `api_base`."""
    api_session.route(session, LOOPBACK_FETCHER, X_HOST, base_url, max_line=1024 * 1024)


# --- The rule and query language -----------------------------------------------------------


class RuleError(ValueError):
    """A rule or query X would refuse to parse."""


@dataclass(frozen=True)
class PublishedTweet:
    id: str
    text: str
    author: str
    author_id: str
    lang: str
    created_at: str
    conversation_id: str
    in_reply_to: str | None = None
    in_reply_to_user_id: str | None = None

    def render(self, fields: set[str]) -> dict[str, Any]:
        """The tweet object with the tweet.fields asked for (id, text and the edit history, X's
        defaults, always)."""
        data: dict[str, Any] = {"id": self.id, "text": self.text}
        data["edit_history_tweet_ids"] = [self.id]
        for name in ("author_id", "created_at", "conversation_id", "lang"):
            if name in fields:
                data[name] = getattr(self, name)
        if self.in_reply_to is not None:
            if "in_reply_to_user_id" in fields and self.in_reply_to_user_id is not None:
                data["in_reply_to_user_id"] = self.in_reply_to_user_id
            if "referenced_tweets" in fields:
                data["referenced_tweets"] = [{"type": "replied_to", "id": self.in_reply_to}]
        return data


@dataclass(frozen=True)
class Term:
    """A keyword or a quoted phrase: case-insensitive, at word boundaries."""

    text: str
    standalone = True

    def matches(self, tweet: PublishedTweet) -> bool:
        words = (re.escape(word) for word in self.text.split())
        pattern = r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)"
        return re.search(pattern, tweet.text, re.IGNORECASE) is not None


@dataclass(frozen=True)
class Operator:
    """lang:xx, from:user, is:reply or is:retweet."""

    name: str
    value: str

    def matches(self, tweet: PublishedTweet) -> bool:
        if self.name == "lang":
            return tweet.lang.lower() == self.value.lower()
        if self.name == "from":
            return tweet.author.lower() == self.value.lower().removeprefix("@")
        return self.value == "reply" and tweet.in_reply_to is not None  # no retweets here

    @property
    def standalone(self) -> bool:
        return self.name == "from"


@dataclass(frozen=True)
class Not:
    operand: Node
    standalone = False

    def matches(self, tweet: PublishedTweet) -> bool:
        return not self.operand.matches(tweet)


@dataclass(frozen=True)
class AllOf:
    operands: tuple[Node, ...]

    def matches(self, tweet: PublishedTweet) -> bool:
        return all(operand.matches(tweet) for operand in self.operands)

    @property
    def standalone(self) -> bool:
        return any(operand.standalone for operand in self.operands)


@dataclass(frozen=True)
class AnyOf:
    operands: tuple[Node, ...]

    def matches(self, tweet: PublishedTweet) -> bool:
        return any(operand.matches(tweet) for operand in self.operands)

    @property
    def standalone(self) -> bool:
        return all(operand.standalone for operand in self.operands)


Node = Term | Operator | Not | AllOf | AnyOf
_TOKEN = re.compile(
    r'\s+|(?P<open>\()|(?P<close>\))|(?P<phrase>"(?:[^"\\]|\\.)*")|(?P<neg>-)(?=[^\s)])'
    r'|(?P<word>[^\s()"]+)'
)
_OPERATOR = re.compile(r"([a-z_]+):(.*)")
_OPERATORS = {"lang": r"[A-Za-z]{2,3}(-[A-Za-z]+)?", "from": r"@?\w{1,15}", "is": "reply|retweet"}


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise RuleError(f"unterminated quote at character {position}")
        if match.lastgroup is not None:
            tokens.append((match.lastgroup, match.group()))
        position = match.end()
    return tokens


class _Parser:
    """Recursive descent: or := and ("OR" and)*; and := unary+; unary := "-"? atom;
    atom := "(" or ")" | phrase | operator | keyword. AND binds tighter than OR, as on X."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.position = 0

    def parse(self) -> Node:
        node = self._or()
        if self.position < len(self.tokens):
            raise RuleError(f"unexpected {self.tokens[self.position][1]!r}")
        if not node.standalone:
            raise RuleError("a rule needs at least one positive, standalone term")
        return node

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _next(self) -> tuple[str, str]:
        token = self._peek()
        if token is None:
            raise RuleError("unexpected end of rule")
        self.position += 1
        return token

    def _or(self) -> Node:
        operands = [self._and()]
        while self._peek() == ("word", "OR"):
            self.position += 1
            operands.append(self._and())
        return operands[0] if len(operands) == 1 else AnyOf(tuple(operands))

    def _and(self) -> Node:
        operands: list[Node] = []
        while (token := self._peek()) is not None and token[0] != "close" and token[1] != "OR":
            operands.append(self._unary())
        if not operands:
            raise RuleError("expected a term")
        return operands[0] if len(operands) == 1 else AllOf(tuple(operands))

    def _unary(self) -> Node:
        token = self._next()
        return Not(self._atom(self._next())) if token[0] == "neg" else self._atom(token)

    def _atom(self, token: tuple[str, str]) -> Node:
        kind, text = token
        if kind == "open":
            node = self._or()
            if self._next()[0] != "close":
                raise RuleError("unbalanced parentheses")
            return node
        if kind == "phrase":
            phrase = re.sub(r"\\(.)", r"\1", text[1:-1]).strip()
            if not phrase:
                raise RuleError("empty phrase")
            return Term(phrase)
        if kind == "word" and text != "OR":
            operator = _OPERATOR.fullmatch(text)
            if operator is None:
                return Term(text)
            name, value = operator.groups()
            if name not in _OPERATORS or not re.fullmatch(_OPERATORS[name], value):
                raise RuleError(f"invalid operator {text!r}")
            return Operator(name, value)
        raise RuleError(f"unexpected {text!r}")


def parse_rule(text: str) -> Node:
    """Parse a rule (or search query) in X's language; RuleError when X would refuse it."""
    return _Parser(text).parse()


# --- The fake -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    id: str
    value: str
    tag: str | None
    node: Node

    def wire(self) -> dict[str, str]:
        return {"id": self.id, "value": self.value, **({"tag": self.tag} if self.tag else {})}


class Search(NamedTuple):
    query: str | None
    since_id: str | None
    next_token: str | None


def user_id(username: str) -> str:
    """The stable numeric id the fake gives `username`."""
    digest = hashlib.sha256(username.lower().encode()).digest()
    return str(10**17 + int.from_bytes(digest[:8], "big") % (9 * 10**17))


def _user(username: str) -> dict[str, str]:
    return {"id": user_id(username), "name": username.title(), "username": username}


def _now_iso(milliseconds: bool = True) -> str:
    now = datetime.now(UTC)
    return f"{now:%Y-%m-%dT%H:%M:%S}.{now.microsecond // 1000 if milliseconds else 0:03d}Z"


def _problem(status: int) -> dict[str, Any]:
    title = http.HTTPStatus(status).phrase
    return {"title": title, "detail": title, "type": "about:blank", "status": status}


def _invalid_request(detail: str, **extra: Any) -> Reply:
    body = {"title": "Invalid Request", "detail": detail, "type": PROBLEMS + "invalid-request"}
    return Reply(400, {**extra, **body})


def _invalid_parameter(name: str, value: str, message: str) -> Reply:
    errors = [{"parameters": {name: [value]}, "message": message}]
    return _invalid_request("One or more parameters to your request was invalid.", errors=errors)


def _rate_limit_headers(remaining: int, reset_in: int) -> dict[str, str]:
    return {
        "x-rate-limit-limit": str(SEARCH_RATE_LIMIT),
        "x-rate-limit-remaining": str(remaining),
        "x-rate-limit-reset": str(int(time.time()) + reset_in),
    }


def _fields(params: dict[str, str], name: str) -> set[str]:
    return {value.strip() for value in params.get(name, "").split(",") if value.strip()}


class _XHandler(StreamHandler):
    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        # A client hanging up is what some tests are about, not a server error.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
            fake: FakeX = self.server.fake  # type: ignore[assignment]
            path, params, body = urlsplit(self.path).path, self.params(), self.read_body()
            authorization = self.headers.get("Authorization", "")
            token = authorization.removeprefix("Bearer ") if authorization else None
            if path == RULES_PATH:
                fake._seen_rule_request(method, body)
                fake._rules_answer.wait(HOLD_MAX)
            if token not in fake.tokens:
                if (method, path) == ("GET", STREAM_PATH):
                    fake._refuse(401)
                self.reply(Reply(401, UNAUTHORIZED))
            elif (method, path) == ("GET", STREAM_PATH):
                outcome = fake._connect(token, params, self.connection)
                if isinstance(outcome, Reply):
                    self.reply(outcome)
                else:
                    self.serve_stream(outcome, "application/json", b"\r\n")
            elif (method, path) == ("GET", RULES_PATH):
                self.reply(fake._get_rules(token, params))
            elif (method, path) == ("POST", RULES_PATH):
                self.reply(fake._post_rules(token, params, body))
            elif (method, path) == ("GET", SEARCH_PATH):
                self.reply(fake._search(params))
            else:
                self.reply(Reply(404, _problem(404)))


class FakeX(StreamingFake):
    """The fake X API: `with FakeX() as x: route_to(client.session, x.url)`.

    Each bearer token in `tokens` is an app with its own stream rules and its one allowed stream
    connection. Tests publish tweets; open streams whose rules match them receive them. X goes
    on counting a connection whose client vanished until its keep-alives fail (about 20 s); a
    `linger` of seconds does so here, answering TooManyConnections meanwhile.
    """

    handler = _XHandler

    def __init__(
        self,
        tokens: Iterable[str] = ("test-token",),
        max_rules: int = 1000,
        max_rule_length: int = 1024,
        keepalive: float = 0.2,
        linger: float = 0.0,
    ) -> None:
        self.tokens = frozenset(tokens)
        self.max_rules = max_rules
        self.max_rule_length = max_rule_length
        self._rules: dict[str, dict[str, _Rule]] = {}
        self._next_rule_id = FIRST_RULE_ID
        self._tweets: dict[str, PublishedTweet] = {}
        self._last_tweet_id = 0
        self._rule_requests: list[tuple[str, Any]] = []
        self._rules_answer = threading.Event()
        self._rules_answer.set()
        self._searches: list[Search] = []
        self._searches_limited = 0
        self.tweets_streamed = 0
        super().__init__(keepalive, linger)

    # Control API for tests.

    def open_streams(self, token: str | None = None) -> int:
        """Open stream connections of `token`'s app, or of every app."""
        return super().open_streams(token)

    def publish(
        self,
        text: str,
        author: str = "alice",
        lang: str = "en",
        in_reply_to: str | None = None,
        conversation_id: str | None = None,
    ) -> str:
        """Post a tweet now; open streams with a matching rule get it. Returns its id."""
        return self.publish_many([text], author, lang, in_reply_to, conversation_id)[0]

    def publish_many(
        self,
        texts: Iterable[str],
        author: str = "alice",
        lang: str = "en",
        in_reply_to: str | None = None,
        conversation_id: str | None = None,
    ) -> list[str]:
        """Post a burst of tweets at once, in order; returns their ids."""
        with self._lock:
            tweets = [
                self._new_tweet(text, author, lang, in_reply_to, conversation_id) for text in texts
            ]
            for stream in self._open():
                for tweet in tweets:
                    line = self._stream_line(stream, tweet)
                    if line is not None:
                        stream.send(line)
            return [tweet.id for tweet in tweets]

    def rules(self, token: str = "test-token") -> list[dict[str, str]]:
        """The token's stream rules as X lists them: id, value and tag if any."""
        with self._lock:
            return [rule.wire() for rule in self._rules.get(token, {}).values()]

    @property
    def rule_requests(self) -> list[tuple[str, Any]]:
        """(method, JSON body or None) of every request seen on the rules endpoint."""
        with self._lock:
            return list(self._rule_requests)

    @contextlib.contextmanager
    def holding_rules(self) -> Iterator[None]:
        """Leave every rules request unanswered until the block ends, as an X that does not
        answer would (each is still seen in `rule_requests` as it arrives)."""
        self._rules_answer.clear()
        try:
            yield
        finally:
            self._rules_answer.set()

    @property
    def searches(self) -> list[Search]:
        """Every recent-search request that passed authentication, rate-limited ones too."""
        with self._lock:
            return list(self._searches)

    def rate_limit_searches(self, n: int) -> None:
        """Answer the next `n` recent searches with 429 Too Many Requests."""
        with self._lock:
            self._searches_limited += n

    def tweet(self, tweet_id: str) -> PublishedTweet:
        with self._lock:
            return self._tweets[tweet_id]

    # The API, called from handler threads.

    def _new_tweet(
        self,
        text: str,
        author: str,
        lang: str,
        in_reply_to: str | None,
        conversation_id: str | None,
    ) -> PublishedTweet:
        snowflake = (int(time.time() * 1000) - TWITTER_EPOCH_MS) << 22
        self._last_tweet_id = max(self._last_tweet_id + 1, snowflake)
        tweet_id = str(self._last_tweet_id)
        replied = self._tweets.get(in_reply_to) if in_reply_to else None
        if conversation_id is None:
            conversation_id = replied.conversation_id if replied else in_reply_to or tweet_id
        tweet = PublishedTweet(
            id=tweet_id,
            text=text,
            author=author,
            author_id=user_id(author),
            lang=lang,
            created_at=_now_iso(milliseconds=False),
            conversation_id=conversation_id,
            in_reply_to=in_reply_to,
            in_reply_to_user_id=replied.author_id if replied else None,
        )
        self._tweets[tweet_id] = tweet
        return tweet

    def _expanded(self, tweets: list[PublishedTweet], options: dict[str, Any]) -> dict[str, Any]:
        """The includes object for these tweets under the stream's or search's expansions."""
        includes: dict[str, Any] = {}
        if "author_id" in options["expansions"]:
            authors = dict.fromkeys(tweet.author for tweet in tweets)
            includes["users"] = [_user(author) for author in authors]
        if "referenced_tweets.id" in options["expansions"]:
            replied = [self._tweets[t.in_reply_to] for t in tweets if t.in_reply_to in self._tweets]
            if replied:
                includes["tweets"] = [tweet.render(options["tweet_fields"]) for tweet in replied]
        return includes

    def _stream_line(self, stream: OpenStream, tweet: PublishedTweet) -> bytes | None:
        matching = [
            {"id": rule.id, "tag": rule.tag or ""}
            for rule in self._rules.get(stream.key, {}).values()
            if rule.node.matches(tweet)
        ]
        if not matching:
            return None
        message: dict[str, Any] = {"data": tweet.render(stream.options["tweet_fields"])}
        includes = self._expanded([tweet], stream.options)
        if includes:
            message["includes"] = includes
        message["matching_rules"] = matching
        return json.dumps(message).encode() + b"\r\n"

    def _written(self, stream: OpenStream, count: int) -> None:
        with self._lock:
            super()._written(stream, count)
            self.tweets_streamed += count

    def _seen_rule_request(self, method: str, body: bytes) -> None:
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode(errors="replace")
        with self._lock:
            self._rule_requests.append((method, parsed))

    def _connect(
        self, token: str, params: dict[str, str], sock: socket.socket
    ) -> OpenStream | Reply:
        options = {
            "tweet_fields": _fields(params, "tweet.fields"),
            "expansions": _fields(params, "expansions"),
        }
        outcome = self._admit(token, sock, options)
        if isinstance(outcome, OpenStream):
            return outcome
        if outcome.too_many:
            return Reply(429, TOO_MANY_CONNECTIONS)
        if outcome.status == 429:
            headers = _rate_limit_headers(remaining=0, reset_in=1)
            return Reply(429, _problem(429), headers)
        body = UNAUTHORIZED if outcome.status == 401 else _problem(outcome.status)
        return Reply(outcome.status, body)

    def _get_rules(self, token: str, params: dict[str, str]) -> Reply:
        wanted = _fields(params, "ids")
        with self._lock:
            rules = [rule.wire() for rule in self._rules.get(token, {}).values()]
        rules = [rule for rule in rules if not wanted or rule["id"] in wanted]
        body: dict[str, Any] = {"meta": {"sent": _now_iso(), "result_count": len(rules)}}
        return Reply(200, {"data": rules, **body} if rules else body)

    def _post_rules(self, token: str, params: dict[str, str], raw: bytes) -> Reply:
        dry_run = params.get("dry_run", "").lower() == "true"
        try:
            body = json.loads(raw)
        except ValueError:
            return _invalid_request("The request body is not valid JSON.")
        if isinstance(body, dict) and isinstance(body.get("add"), list):
            return self._add_rules(token, body["add"], dry_run)
        if isinstance(body, dict) and isinstance((body.get("delete") or {}).get("ids"), list):
            return self._delete_rules(token, [str(i) for i in body["delete"]["ids"]], dry_run)
        return _invalid_request("The request body needs an add or a delete.")

    def _add_rules(self, token: str, entries: list[Any], dry_run: bool) -> Reply:
        with self._lock:
            existing = self._rules.get(token, {})
            ids_by_value = {rule.value: rule.id for rule in existing.values()}
            next_id, created, errors = self._next_rule_id, [], []
            for entry in entries:
                value = entry.get("value") if isinstance(entry, dict) else None
                tag = entry.get("tag") if isinstance(entry, dict) else None
                error = self._rule_error(value, ids_by_value)
                if error is not None:
                    errors.append(error)
                    continue
                rule = _Rule(str(next_id), value, tag, parse_rule(value))
                next_id += 1
                created.append(rule)
                ids_by_value[value] = rule.id
            if len(existing) + len(created) > self.max_rules:
                return _invalid_request(
                    f"RulesCapExceeded: adding {len(created)} rules to {len(existing)} would "
                    f"exceed the limit of {self.max_rules} rules"
                )
            if not dry_run:
                self._rules.setdefault(token, {}).update((rule.id, rule) for rule in created)
                self._next_rule_id = next_id
        summary = {"created": len(created), "not_created": len(errors)}
        summary.update(valid=len(created), invalid=len(errors))
        body: dict[str, Any] = {"meta": {"sent": _now_iso(), "summary": summary}}
        if created:
            body["data"] = [rule.wire() for rule in created]
        if errors:
            body["errors"] = errors
        return Reply(201, body)

    def _rule_error(self, value: Any, ids_by_value: dict[str, str]) -> dict[str, Any] | None:
        invalid = {"value": value, "type": PROBLEMS + "invalid-rules"}
        if not isinstance(value, str) or not value.strip():
            return {**invalid, "title": "InvalidRule", "details": ["A rule must not be empty."]}
        if len(value) > self.max_rule_length:
            return {**invalid, "title": "RuleTooLong"}
        if value in ids_by_value:
            duplicate = {"value": value, "id": ids_by_value[value], "title": "DuplicateRule"}
            return {**duplicate, "type": PROBLEMS + "duplicate-rules"}
        try:
            parse_rule(value)
        except RuleError as error:
            return {**invalid, "title": "InvalidRule", "details": [str(error)]}
        return None

    def _delete_rules(self, token: str, ids: list[str], dry_run: bool) -> Reply:
        with self._lock:
            existing = self._rules.get(token, {})
            found = [rule_id for rule_id in ids if rule_id in existing]
            missing = [rule_id for rule_id in ids if rule_id not in existing]
            if not dry_run:
                for rule_id in found:
                    del existing[rule_id]
        summary = {"deleted": len(found), "not_deleted": len(missing)}
        body: dict[str, Any] = {"meta": {"sent": _now_iso(), "summary": summary}}
        if missing:
            body["errors"] = [
                {
                    "parameters": {"ids": [rule_id]},
                    "title": "Invalid Request",
                    "detail": "Rule id not found",
                    "type": PROBLEMS + "invalid-request",
                }
                for rule_id in missing
            ]
        return Reply(200, body)

    def _search(self, params: dict[str, str]) -> Reply:
        query, since_id, next_token = (params.get(n) for n in ("query", "since_id", "next_token"))
        with self._lock:
            self._searches.append(Search(query, since_id, next_token))
            limited = self._searches_limited > 0
            if limited:
                self._searches_limited -= 1
        if limited:
            return Reply(429, _problem(429), _rate_limit_headers(remaining=0, reset_in=1))
        if not query:
            return _invalid_parameter("query", "", "The `query` query parameter can not be empty")
        try:
            node = parse_rule(query)
        except RuleError as error:
            return _invalid_parameter(
                "query", query, f"There were errors processing your request: {error}"
            )
        max_results = params.get("max_results", "10")
        if not max_results.isdigit() or not 10 <= int(max_results) <= 100:
            message = (
                f"The `max_results` query parameter value [{max_results}] is not between 10 and 100"
            )
            return _invalid_parameter("max_results", max_results, message)
        if since_id is not None and not since_id.isdigit():
            return _invalid_parameter("since_id", since_id, "The `since_id` is not a tweet id")
        if next_token is not None and not re.fullmatch(r"p[0-9a-f]+", next_token):
            return _invalid_parameter("next_token", next_token, "The `next_token` is not valid")
        after = int(since_id or 0)
        before = int(next_token[1:], 16) if next_token else None
        options = {
            "tweet_fields": _fields(params, "tweet.fields"),
            "expansions": _fields(params, "expansions"),
        }
        with self._lock:
            found = [
                tweet
                for tweet in reversed(self._tweets.values())
                if after < int(tweet.id)
                and (before is None or int(tweet.id) < before)
                and node.matches(tweet)
            ]
            page = found[: int(max_results)]
            includes = self._expanded(page, options)
        headers = _rate_limit_headers(remaining=SEARCH_RATE_LIMIT - 1, reset_in=900)
        if not page:
            return Reply(200, {"meta": {"result_count": 0}}, headers)
        meta: dict[str, Any] = {"newest_id": page[0].id, "oldest_id": page[-1].id}
        meta["result_count"] = len(page)
        if len(found) > len(page):
            meta["next_token"] = f"p{int(page[-1].id):x}"
        body: dict[str, Any] = {"data": [t.render(options["tweet_fields"]) for t in page]}
        if includes:
            body["includes"] = includes
        return Reply(200, {**body, "meta": meta}, headers)


def main() -> None:
    """Serve until interrupted; the first line printed is the URL (the integration convention)."""
    with FakeX() as fake:
        print(fake.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
