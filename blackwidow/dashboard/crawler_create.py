"""The new-crawler page: a form for an RSS crawler (name, feeds, keywords, item limit), created
as `POST /api/v1/crawlers` creates one: the same schema, the same checks, the same owner rule
(crawlers belong to users, so the admin, who may not create one, is not offered the form)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy.orm import Session

from blackwidow import crawler_names, crawlers
from blackwidow.api.context import caller, transaction
from blackwidow.core.domain_errors import Conflict, DomainError
from blackwidow.core.errors import as_api_error
from blackwidow.dashboard.blueprint import blp
from blackwidow.dashboard.forms import FormErrors, crawler_create, form_field

FIELDS = ("name", "feeds", "keywords", "item_limit")  # what the form sends back when refused


@blp.route("/crawlers/new", methods=["GET", "POST"], endpoint="new_crawler")
def new_crawler() -> ResponseReturnValue:
    """A refusal shows the form again with what was typed, every error under the field it
    names, and those fields marked; nothing is written."""
    user_id = crawlers.owner(caller())  # the admin's 403, as on the API
    if request.method == "GET":
        return render_template("dashboard/new_crawler.html", typed={}, errors={})
    try:
        with transaction() as session:
            made = crawlers.create(session, caller(), _checked(session, user_id, request.form))
    except FormErrors as refused:
        return _again(refused.by_field), refused.status
    except DomainError as error:  # a busy database is no refusal: the error page, Retry-After
        return _again({form_field(error.field): [error.message]}), as_api_error(error).status
    flash(f"Crawler {made.id} ({made.name}) created.", "done")
    return redirect(url_for("dashboard.crawler", crawler_id=made.id), 303)


def _again(errors: dict[str | None, list[str]]) -> str:
    """The form again, with what was typed and every error under its field."""
    typed = {name: request.form.get(name, "") for name in FIELDS}
    return render_template("dashboard/new_crawler.html", typed=typed, errors=errors)


def _checked(session: Session, user_id: int, form: Mapping[str, str]) -> dict[str, Any]:
    """The create body, or every refusal at once: the form's fields and a name the user's
    crawlers hold (alone, that is the API's 409)."""
    errors: dict[str | None, list[str]] = {}
    data: dict[str, Any] = {}
    try:
        data = crawler_create(form)
    except FormErrors as refused:
        errors = dict(refused.by_field)
    name = form.get("name", "").strip()
    if name and "name" not in errors:
        try:
            crawler_names.check(session, user_id, [name])
        except Conflict as clash:
            if not errors:
                raise
            errors["name"] = [clash.message]
    if errors:
        raise FormErrors(errors)
    return data
