"""The dashboard's search: the items that hold every word asked, across the caller's crawlers,
as `GET /api/v1/items?q=` finds them, a page at a time."""

from __future__ import annotations

from typing import Any

from flask import flash, render_template, request
from flask.typing import ResponseReturnValue
from marshmallow import ValidationError

from blackwidow.api.paging import CURSOR_FIELD
from blackwidow.api.search import SearchArgs, search_page
from blackwidow.dashboard.blueprint import blp

SHOWN_ITEMS = 50  # a page, as the API's default
_ASKED = ("q", "since", "until", CURSOR_FIELD)


@blp.route("/search", endpoint="search")
def search() -> ResponseReturnValue:
    """The form, and a page of what it finds with a link to the next page."""
    asked: dict[str, Any] = {name: request.args[name] for name in _ASKED if request.args.get(name)}
    crawler_ids = [value for value in request.args.getlist("crawler") if value]
    if crawler_ids:
        asked["crawler"] = crawler_ids
    form = {"q": "", "since": "", "until": ""} | asked | {"crawler": " ".join(crawler_ids)}
    if "q" not in asked:
        return render_template("dashboard/search.html", form=form, found=None)
    try:  # the endpoint's own checks, said as it says them
        args = SearchArgs().load(asked | {"limit": SHOWN_ITEMS})
    except ValidationError as error:
        flash(f"{', '.join(sorted(error.messages))}: not a value to search by", "error")
        return render_template("dashboard/search.html", form=form, found=None), 422
    body, _ = search_page(args)
    return render_template(
        "dashboard/search.html", form=form, found=body["items"], next_page=body["next"]
    )
