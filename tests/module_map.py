"""Which tests exercise each module, read from the tests' imports: writes and checks
tests/MODULES.md, and answers `python -m tests.module_map PATH` with every test of one module.

A module's tests are the test files that import it, directly or through a helper module of
`tests/` (a model, a stand-in server), or through the conftest fixtures its tests ask for,
each for the names it takes; a blueprint's tests are also those that request a path it routes.
A module that no test reaches is listed with the modules that import it ("via"), the way its
code is reached: integration tests start `blackwidow` as a process and import little.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("blackwidow", "spawn", "sources")
INDEX = ROOT / "tests" / "MODULES.md"
TIERS = ("unit", "component", "integration", "cluster")  # the fastest tests come first
SHOWN = 8  # test files listed per module; `python -m tests.module_map PATH` lists them all
WRITE_COMMAND = "python -m tests.module_map --write"


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A file's syntax tree, parsed once per process: every map reads each file several times."""
    return ast.parse(path.read_text(), str(path))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules() -> dict[str, Path]:
    """Every module of the hub, the node and the sources, by dotted name."""
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def bindings(tree: ast.Module, known: set[str]) -> dict[str, str]:
    """Names a module's imports (a function's own too) bind to known modules: `from a.b import c`
    binds c to a.b.c when that is a module, else to a.b; `import a.b` binds a.b."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((alias.asname or alias.name, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                bound[alias.asname or alias.name] = full if full in known else node.module
    return {name: module for name, module in bound.items() if module in known}


def imported(path: Path, known: Iterable[str]) -> dict[str, set[str]]:
    """The known modules a file imports, and for each the names it takes from it."""
    known = set(known)
    taken: dict[str, set[str]] = defaultdict(set)
    for name, module in bindings(parsed(path), known).items():
        taken[module].add(name)
    return taken


def reach_by_name(path: Path, known: set[str]) -> dict[str, set[str]]:
    """For each top-level name of a helper module, the known modules its definition uses,
    through the helper's other definitions too: a test that takes `ADMIN` from a conftest
    reaches none of what its `make_reconciler` does."""
    tree = parsed(path)
    bound = bindings(tree, known)
    defined: dict[str, set[str]] = {}
    for node in tree.body:
        targets = (
            [node.name]
            if hasattr(node, "name")
            else [
                target.id for target in getattr(node, "targets", []) if isinstance(target, ast.Name)
            ]
        )
        used = {name.id for name in ast.walk(node) if isinstance(name, ast.Name)}
        for target in targets:
            defined[target] = used
    reach = {name: {bound[n] for n in used if n in bound} for name, used in defined.items()}
    changed = True
    while changed:  # a definition reaches what the helper's definitions it uses reach
        changed = False
        for name, used in defined.items():
            more = set().union(*(reach[n] for n in used if n in reach and n != name))
            if not more <= reach[name]:
                reach[name] |= more
                changed = True
    return reach


def test_files() -> list[Path]:
    return sorted(path for path in (ROOT / "tests").rglob("test_*.py"))


def strings(tree: ast.AST) -> list[str]:
    """A file's string literals, an f-string's fields read as `X`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append(
                "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
    return found


def requested_paths(tree: ast.AST) -> set[str]:
    """The URL paths a test file asks for: `/api/v1/crawlers/X/items`, whatever host is before."""
    paths = set()
    for text in strings(tree):
        path = re.sub(r"^(?:https?://[^/\s]+|X)(?=/)", "", text).split("?")[0]
        if path.startswith("/") and " " not in path:
            paths.add(path)
    return paths


def route_patterns(modules: dict[str, Path]) -> dict[str, re.Pattern[str]]:
    """Module -> one pattern of every path its blueprint routes (`url_prefix` + `route`)."""
    trees = {name: parsed(path) for name, path in modules.items()}
    prefixes: dict[str, str] = {}
    for name, tree in trees.items():
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Blueprint":
                prefix = [k.value for k in call.keywords if k.arg == "url_prefix"]
                prefixes[name] = prefix[0].value if prefix else ""
    patterns = {}
    for name, tree in trees.items():
        blp = bindings(tree, set(modules)).get("blp")
        prefix = prefixes.get(name, prefixes.get(blp, ""))
        routes = [
            prefix + call.args[0].value
            for call in ast.walk(tree)
            if isinstance(call, ast.Call)
            and getattr(call.func, "attr", None) == "route"
            and call.args
            and isinstance(call.args[0], ast.Constant)
        ]
        if routes:
            regex = "|".join(
                re.sub(r"<[^>]+>", "[^/]+", re.escape(r).replace(r"\<", "<").replace(r"\>", ">"))
                for r in routes
            )
            patterns[name] = re.compile(f"(?:{regex})/?")
    return patterns


def conftests(path: Path) -> list[str]:
    """The conftest modules pytest loads for a test file: its folder's and each parent's."""
    return [
        module_name(folder / "conftest.py")
        for folder in path.parents
        if folder.is_relative_to(ROOT / "tests") and (folder / "conftest.py").exists()
    ]


def asked_for(path: Path) -> set[str]:
    """The names a file's functions take as parameters: the fixtures its tests ask for."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    tree = parsed(path)
    return {
        arg.arg for node in ast.walk(tree) if isinstance(node, functions) for arg in node.args.args
    }


@functools.cache
def tests_by_module() -> dict[str, list[str]]:
    """Module -> the test files that reach it, the most focused first: a file named after the
    module, then by tier, then files that reach fewer of the project's modules."""
    modules = source_modules()
    helpers = {
        module_name(path): path
        for path in (ROOT / "tests").rglob("*.py")
        if not path.name.startswith("test_")
    }
    reach = {name: reach_by_name(path, set(modules)) for name, path in helpers.items()}
    routes = route_patterns(modules)
    found: dict[str, set[str]] = defaultdict(set)
    breadth: dict[str, int] = {}
    for path in test_files():
        seen: set[str] = set()
        for module, names in imported(path, [*modules, *helpers]).items():
            if module in helpers:
                seen.update(*(reach[module].get(name, set()) for name in names))
            else:
                seen.add(module)
        requested = requested_paths(parsed(path))
        seen.update(
            name for name, pattern in routes.items() if any(map(pattern.fullmatch, requested))
        )
        for conftest in conftests(path):
            seen.update(*(reach[conftest].get(name, set()) for name in asked_for(path)))
        test = str(path.relative_to(ROOT / "tests"))
        breadth[test] = len(seen)
        for name in seen:
            found[name].add(test)

    def focus(module: str, test: str) -> tuple[bool, int, int, str]:
        named = Path(test).stem == f"test_{module.rsplit('.', 1)[-1]}"
        tier = test.split("/")[0]
        return (not named, TIERS.index(tier) if tier in TIERS else len(TIERS), breadth[test], test)

    return {name: sorted(found[name], key=lambda test: focus(name, test)) for name in modules}


def importers_by_module() -> dict[str, set[str]]:
    modules = source_modules()
    importers: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for target in imported(path, modules):
            if target != name:
                importers[target].add(name)
    return importers


def via(module: str, tests: dict[str, list[str]], importers: dict[str, set[str]]) -> list[str]:
    """The nearest importers of a module that tests do import, breadth first."""
    frontier, seen, reached = sorted(importers.get(module, ())), {module}, []
    while frontier and not reached:
        seen.update(frontier)
        reached = [name for name in frontier if tests[name]]
        frontier = sorted({up for name in frontier for up in importers.get(name, ())} - seen)
    return reached


def listed(tests: list[str]) -> str:
    shown = ", ".join(tests[:SHOWN])
    return shown + (f" and {len(tests) - SHOWN} more" if len(tests) > SHOWN else "")


def index() -> str:
    modules, tests, importers = source_modules(), tests_by_module(), importers_by_module()
    lines = [
        "# Which tests exercise each module",
        "",
        f"Generated by `{WRITE_COMMAND}` from what the tests import, the",
        "fixtures they ask for and the paths they request; `tests/unit/test_module_map.py`",
        "fails while it is stale. The most focused tests come first: the file named after the",
        "module, then unit, component, integration and cluster tests.",
        "`python -m tests.module_map PATH` lists every test of one module. A module no test",
        "reaches is reached *via* the modules named.",
        "",
        "| module | tests (under `tests/`) |",
        "| --- | --- |",
    ]
    for name, path in modules.items():
        if tests[name]:
            cell = listed(tests[name])
        else:
            reached = via(name, tests, importers)
            cell = "via " + ", ".join(f"`{up}`" for up in reached) if reached else "none"
        lines.append(f"| `{path.relative_to(ROOT)}` | {cell} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        INDEX.write_text(index())
        return 0
    if len(argv) == 1 and not argv[0].startswith("-"):
        wanted = module_name((ROOT / argv[0]).resolve())
        for test in tests_by_module().get(wanted, []):
            print(f"tests/{test}")
        return 0
    print(f"usage: {WRITE_COMMAND} | python -m tests.module_map PATH", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
