"""The map from module to tests (tests/MODULES.md) is current, and finds what it should."""

from __future__ import annotations

from tests import module_map


def test_the_committed_map_is_current() -> None:
    assert module_map.INDEX.read_text() == module_map.index(), (
        f"tests/MODULES.md is stale: run `{module_map.WRITE_COMMAND}`"
    )


def test_a_module_is_tested_first_by_the_file_named_after_it() -> None:
    tests = module_map.tests_by_module()
    assert tests["blackwidow.monitor.routing"][0] == "unit/test_routing.py"
    assert tests["sources.fetch.fetcher"][0] == "component/test_fetcher.py"


def test_a_fixture_or_a_requested_path_reaches_a_module() -> None:
    tests = module_map.tests_by_module()
    assert "component/test_api.py" in tests["blackwidow.app"]  # the `client` fixture
    assert "component/test_crawler_batch.py" in tests["blackwidow.api.crawlers"]  # its paths


def test_every_module_with_code_is_reached_by_some_test() -> None:
    tests, importers = module_map.tests_by_module(), module_map.importers_by_module()
    unreached = [
        name
        for name, path in module_map.source_modules().items()
        if path.stat().st_size > 0
        and path.name not in ("__init__.py", "__main__.py", "wsgi.py", "gunicorn_conf.py")
        and not tests[name]
        and not module_map.via(name, tests, importers)
    ]
    assert unreached == []
