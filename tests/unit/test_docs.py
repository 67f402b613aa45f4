"""The docs keep working: every shell block in README.md, docs/*.md and bench/README.md parses,
names real `blackwidow` commands and options, real `make` targets and real benchmark options;
every link between pages, and every path to a file of the repository, resolves; and
docs/configuration.md lists exactly the variables the code reads."""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from blackwidow.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
SHELL = {"sh", "bash", "console", "shell"}
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```$", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"(?:blackwidow|spawn|sources|tests|bench|docs|migrations)/[\w./-]*")
VARIABLE = re.compile(r"BLACKWIDOW_[A-Z0-9_]*[A-Z0-9]")
OPERATORS = {"|", "||", "&&", ";", "&", "(", ")"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    text: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def script(self) -> str:
        """The block as bash would read it: a console block's `$ ` lines, else every line."""
        if self.language != "console":
            return self.text
        return "".join(line[2:] + "\n" for line in self.text.splitlines() if line.startswith("$ "))


def blocks(language: set[str] | None = None) -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            if language is None or match.group(1) in language:
                line = text.count("\n", 0, match.start()) + 1
                found.append(Block(page, line, match.group(1), match.group(2)))
    return found


def prose(page: Path) -> str:
    """The page without its fenced blocks, where links and headings are."""
    return FENCE.sub("", page.read_text())


def commands(script: str) -> list[list[str]]:
    """Each simple command of a script, as words: continuations joined, comments dropped, split
    at pipes and lists, leading `NAME=value` assignments and `export` left out. A line is read
    on its own, so a quote must close on its line."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = [*lexer, ";"]
        except ValueError:  # an open quote: test_each_shell_block_parses names the block
            continue
        words: list[str] = []
        for token in tokens:
            if token not in OPERATORS:
                words.append(token)
                continue
            while words and re.fullmatch(r"\w+=.*", words[0]):
                words.pop(0)
            if words and words[0] != "export":
                found.append(words)
            words = []
    return found


def invocations(program: str) -> list[tuple[Block, list[str]]]:
    """The program's invocations in shell blocks, and in code spans of the prose that start
    with its name (`blackwidow db upgrade`)."""
    spans = [
        Block(page, page.read_text()[: page.read_text().find(span)].count("\n") + 1, "", span)
        for page in PAGES
        for span in CODE_SPAN.findall(prose(page))
        if span.startswith(program + " ")
    ]
    return [
        (block, words[1:])
        for block in blocks(SHELL) + spans
        for words in commands(block.script())
        if Path(words[0]).name == program
    ]


def block_id(block_and_words: tuple[Block, list[str]]) -> str:
    block, words = block_and_words
    return f"{block} {' '.join(words)[:40]}"


@pytest.mark.parametrize("block", blocks(SHELL), ids=str)
def test_each_shell_block_parses(block):
    result = subprocess.run(["bash", "-n"], input=block.script(), capture_output=True, text=True)
    assert result.returncode == 0, f"{block}: {result.stderr}"


def option_of(command: click.Command, word: str) -> click.Parameter | None:
    name = word.split("=", 1)[0]
    if name == "--help":
        return command.get_help_option(click.Context(command))
    for param in command.params:
        if name in (*param.opts, *param.secondary_opts):
            return param
    return None


def check_cli(words: list[str]) -> None:
    """Walk the words through the CLI's click groups: every subcommand and option must exist."""
    command: click.Command = cli
    path = "blackwidow"
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        if word.startswith("-") and word != "-":
            param = option_of(command, word)
            assert param is not None, f"`{path}` has no option {word}"
            takes_value = isinstance(param, click.Option) and not param.is_flag
            if takes_value and "=" not in word and not param.count:
                at += 1
        elif isinstance(command, click.Group):
            assert word in command.commands, f"`{path}` has no subcommand {word!r}"
            command = command.commands[word]
            path += f" {word}"


@pytest.mark.parametrize("invocation", invocations("blackwidow"), ids=block_id)
def test_each_blackwidow_command_names_real_commands_and_options(invocation):
    block, words = invocation
    try:
        check_cli(words)
    except AssertionError as error:
        raise AssertionError(f"{block}: {error}") from None


@pytest.mark.parametrize("invocation", invocations("make"), ids=block_id)
def test_each_make_target_exists(invocation):
    block, words = invocation
    targets = [word for word in words if not word.startswith("-") and "=" not in word]
    for target in targets:
        dry_run = subprocess.run(
            ["make", "--dry-run", "--no-print-directory", "-C", str(ROOT), target],
            capture_output=True,
            text=True,
        )
        assert dry_run.returncode == 0, f"{block}: make {target}: {dry_run.stderr}"


@pytest.mark.parametrize("invocation", invocations("python"), ids=block_id)
def test_each_benchmark_command_names_a_real_script_and_options(invocation):
    block, words = invocation
    assert words[:1] == ["-m"], f"{block}: expected `python -m bench.NAME`"
    script = ROOT / (words[1].replace(".", "/") + ".py")
    assert script.is_file(), f"{block}: no {script.relative_to(ROOT)}"
    source = script.read_text()
    for word in words[2:]:
        if word.startswith("--"):
            assert f'"{word.split("=")[0]}"' in source, f"{block}: {script.name} has no {word}"


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+ (.+)$", prose(page), re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_each_link_resolves(page):
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{page.name}: link to {target}: no {path}"
        assert resolved.is_relative_to(ROOT), f"{page.name}: {target} leaves the repository"
        if anchor:
            assert anchor in anchors(resolved), f"{page.name}: {target}: no such heading"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_each_path_named_in_code_exists(page):
    paths = [span for span in CODE_SPAN.findall(prose(page)) if REPO_PATH.fullmatch(span)]
    missing = [path for path in paths if not (ROOT / path).exists()]
    assert missing == [], f"{page.name} names paths that do not exist"


def test_the_configuration_page_lists_exactly_the_variables_the_code_reads():
    page = (ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `(BLACKWIDOW_\w+)`", page, re.M))
    read = {
        name
        for folder in ("blackwidow", "spawn", "sources")
        for module in (ROOT / folder).rglob("*.py")
        for name in VARIABLE.findall(module.read_text())
    }
    assert sorted(read - documented) == [], "read by the code, missing from configuration.md"
    assert sorted(documented - read) == [], "in configuration.md, read by no code"


def test_the_readme_opens_with_the_two_commands_and_stays_short():
    readme = (ROOT / "README.md").read_text()
    first = blocks()[0]
    assert first.page.name == "README.md"
    assert [words[:2] for words in commands(first.text)] == [["make", "demo"], ["make", "test"]]
    assert readme.count("\n") <= 150
