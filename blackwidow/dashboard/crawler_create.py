"""The new-crawler page: a form for an RSS crawler (name, feeds, keywords, item limit), created
as `POST /api/v1/crawlers` creates one: the same schema, the same checks, the same owner rule
(crawlers belong to users, so the admin, who may not create one, is not offered the form)."""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from blackwidow import crawlers
from blackwidow.api.context import caller, transaction
from blackwidow.core.domain_errors import DomainError
from blackwidow.core.errors import as_api_error
from blackwidow.dashboard.blueprint import blp
from blackwidow.dashboard.forms import crawler_create, form_field

FIELDS = ("name", "feeds", "keywords", "item_limit")  # what the form sends back when refused


@blp.route("/crawlers/new", methods=["GET", "POST"], endpoint="new_crawler")
def new_crawler() -> ResponseReturnValue:
    """A refusal shows the form again with what was typed, the API's message naming the
    field, and that field marked; nothing is written."""
    crawlers.owner(caller())  # the admin's 403, as on the API
    if request.method == "GET":
        return render_template("dashboard/new_crawler.html", typed={}, error=None)
    try:
        data = crawler_create(request.form)
        with transaction() as session:
            made = crawlers.create(session, caller(), data)
    except DomainError as error:  # a busy database is no refusal: the error page, Retry-After
        typed = {name: request.form.get(name, "") for name in FIELDS}
        page = render_template(
            "dashboard/new_crawler.html",
            typed=typed,
            error={"message": error.message, "field": form_field(error.field)},
        )
        return page, as_api_error(error).status
    flash(f"Crawler {made.id} ({made.name}) created.", "done")
    return redirect(url_for("dashboard.crawler", crawler_id=made.id), 303)
