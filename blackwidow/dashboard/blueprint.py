"""The dashboard's blueprint: its pages' shared answers to errors, security headers and what
every template may use. The pages themselves are in the modules beside this one."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, g, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_wtf.csrf import CSRFError

from blackwidow import accounts, wording
from blackwidow.api.context import hub
from blackwidow.core.domain_errors import DomainError
from blackwidow.core.errors import ApiError, as_api_error
from blackwidow.core.store import StoreUnavailable
from blackwidow.dashboard import display
from blackwidow.session_cookie import SignInRequired

blp = Blueprint(
    "dashboard",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/dashboard/static",
)

# Pages are the hub's own: no inline script or style, no framing, forms post only here.
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # same-origin: the CSRF check over https wants the Referer, and no other site gets it
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

blp.add_app_template_filter(display.alert_details, "alert_details")
blp.add_app_template_filter(display.ago, "ago")
blp.add_app_template_filter(display.moment, "moment")
blp.add_app_template_filter(display.per_minute, "per_minute")
blp.add_app_template_filter(wording.thousands, "thousands")
blp.add_app_template_filter(wording.window, "window")


@blp.after_request
def _secure(response: Response) -> Response:
    response.headers.update(_SECURITY_HEADERS)
    return response


@blp.context_processor
def _whoami() -> dict[str, Any]:
    """Who the header names as signed in; the sign-in page has nobody."""
    who = g.get("caller")
    if who is None:
        return {"who": None}
    if who.is_admin:
        return {"who": {"name": "admin", "admin": True}}
    with hub().sessions() as session:
        user = accounts.get_user(session, who, who.user_id)
        return {"who": {"name": user.name, "admin": False, "id": user.id}}


@blp.errorhandler(SignInRequired)
def _sign_in_first(_error: SignInRequired) -> ResponseReturnValue:
    wanted = request.full_path if request.method == "GET" else None
    return redirect(url_for("dashboard.signin", next=safe_next(wanted)), 303)


@blp.errorhandler(CSRFError)
def _forged(error: CSRFError) -> ResponseReturnValue:
    message = f"This form was refused ({error.description}) Reload the page and try again."
    return render_template("dashboard/error.html", status=400, message=message), 400


@blp.errorhandler(ApiError)
@blp.errorhandler(DomainError)
def _refused(error: ApiError | DomainError) -> ResponseReturnValue:
    """The API's refusals (another user's crawler is a 404, a busy database a 503) as a page,
    with the status the API answers them with."""
    refusal = as_api_error(error)
    page = render_template("dashboard/error.html", status=refusal.status, message=refusal.message)
    headers = {} if refusal.retry_after is None else {"Retry-After": str(refusal.retry_after)}
    return page, refusal.status, headers


@blp.errorhandler(StoreUnavailable)
def _store_down(error: StoreUnavailable) -> ResponseReturnValue:
    message = f"The item store does not answer: {error}"
    return render_template("dashboard/error.html", status=503, message=message), 503


def safe_next(path: str | None) -> str | None:
    """A path on this hub to go back to after signing in or posting a form; anything else
    (another site, a scheme-relative `//host`) is dropped."""
    if not path:
        return None
    path = path.rstrip("?")
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or not path.startswith("/") or path.startswith(("//", "/\\")):
        return None
    return path
