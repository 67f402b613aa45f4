"""Who is signed in to the dashboard: the session cookie, its settings, signing in, and the
check the API's gate (blackwidow.api.gate) runs before every dashboard view.

The cookie keeps the hash of the token signed in with, never the token: it is checked again
on every request (blackwidow.auth.identify_by_hash), so a changed admin token or a deleted
user ends the sessions made with the old one, and a stolen cookie holds no API token.
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta

from flask import Flask, current_app, g, request, session
from flask.sessions import SecureCookieSessionInterface
from flask_wtf.csrf import CSRFProtect
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.auth import Caller, identify, identify_by_hash
from blackwidow.core.settings import Settings, session_key
from blackwidow.core.tokens import hash_token

log = logging.getLogger(__name__)

SESSION_LIFETIME = timedelta(hours=12)
_TOKEN_HASH = "token_hash"


class SignInRequired(Exception):
    """A dashboard page asked for without a valid session: the answer is the sign-in page."""


class DashboardSessions(SecureCookieSessionInterface):
    """Flask's signed cookie, marked Secure whenever the request came over https (or always,
    with BLACKWIDOW_SESSION_COOKIE_SECURE, for a hub behind a TLS-ending proxy)."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return request.is_secure or bool(app.config["SESSION_COOKIE_SECURE"])


def configure(app: Flask, settings: Settings) -> CSRFProtect:
    """Session cookie and CSRF settings for the whole app. The API never reads the cookie (its
    gate takes bearer tokens only), so only the dashboard's forms need the CSRF check, which
    the gate runs for them once it knows the caller (`admit`)."""
    key = session_key(settings)
    if key is None:
        log.warning("no session secret: dashboard sessions last only as long as this process")
        key = secrets.token_bytes(32)
    app.secret_key = key
    app.session_interface = DashboardSessions()
    app.config.update(
        SESSION_COOKIE_NAME="blackwidow_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        SESSION_COOKIE_SECURE=settings.session_cookie_secure,
        PERMANENT_SESSION_LIFETIME=SESSION_LIFETIME,
        WTF_CSRF_CHECK_DEFAULT=False,  # the gate checks the dashboard's forms, nothing else
        WTF_CSRF_TIME_LIMIT=int(SESSION_LIFETIME.total_seconds()),
    )
    return CSRFProtect(app)


def sign_in(sessions: sessionmaker[Session], admin_token: str | None, token: str) -> Caller:
    """Check a token as the API would; start a fresh session (never one an attacker planted)
    holding its hash. Raises the API's 401 for a wrong token."""
    with sessions() as db:
        who = identify(db, f"Bearer {token}", admin_token)
    session.clear()
    session.permanent = True
    session[_TOKEN_HASH] = hash_token(token)
    return who


def sign_out() -> None:
    session.clear()


def admit(sessions: sessionmaker[Session], admin_token: str | None, open_page: bool) -> None:
    """Run by the API's gate for every dashboard view, before the view reads its form: settle
    the caller from the session (a stranger is sent to sign in), then check the CSRF token of
    any form posted, the sign-in form included."""
    if not open_page:
        g.caller = _signed_in(sessions, admin_token)
    if request.method not in ("GET", "HEAD"):
        current_app.extensions["csrf"].protect()


def _signed_in(sessions: sessionmaker[Session], admin_token: str | None) -> Caller:
    token_hash = session.get(_TOKEN_HASH)
    if not isinstance(token_hash, str):
        raise SignInRequired
    with sessions() as db:
        who = identify_by_hash(db, token_hash, admin_token)
    if who is None:
        session.clear()
        raise SignInRequired
    return who
