"""Every `recon ...` command the README and docs/ quote parses against the CLI as it is.

A runbook that names a command or option recon does not have sends a person at 3 a.m. to an
error instead of a fix. Each quoted command (inline code spans and the lines of ```sh blocks)
is resolved through click's own parser, group by group (`make_context`, `resolve_command`), so
an unknown command, an unknown option, a value click refuses or an extra argument fails here.

Quoted commands are often written as a reference rather than a literal line; the reading says
how they are taken:

- `<...>`, `"..."`, `...` and an UPPER_CASE word are placeholders for a value the reader
  supplies; a placeholder is tried as a number, a date and a word, and one of them must parse;
- `a|b` (also `a\\|b` in a table, and `suspend/resume`) names alternatives: each must parse;
- `[...]` marks an optional part: it is parsed as if given;
- a command cut short (a required option or argument left out, an option named without its
  value, a group named without a subcommand) is a reference, not an error.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from recon.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
#: The files a person reads the commands from.
DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))

PLACEHOLDER = "\0placeholder\0"
#: What a placeholder is tried as, in turn: a row id, a date, a provider's ref, an account
#: number, a word. A choice (`--fee-bearer B`) takes any of its own values.
PLACEHOLDER_VALUES = (
    "1",
    "2026-11-29",
    "00000000-0000-4000-8000-000000000001",
    "0123456789",
    "word",
)

#: Options whose file must exist: the check makes the file named, in a directory of its own.
FILE_OPTIONS = frozenset({"--env-file", "--procfile"})

_INLINE = re.compile(r"`(recon [^`]+)`")
_BLOCK_LINE = re.compile(r"^(?:\.venv/bin/|\S+=\S+\s+)*(recon\s.*)$")
#: Where the shell takes over from recon's own arguments: a redirection, a pipe, a chain, a
#: background `&`, a comment.
_SHELL_TAIL = re.compile(r"\s(?:\d?>|\|(?=\s)|&&|&|;|#).*$")


@dataclass(frozen=True)
class Quoted:
    """One command as a document quotes it."""

    where: str
    text: str


def quoted_commands() -> list[Quoted]:
    found: list[Quoted] = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(REPO).as_posix()
        for match in _INLINE.finditer(text):
            at = text.count("\n", 0, match.start()) + 1
            found.append(Quoted(f"{name}:{at}", match.group(1).replace("\n", " ")))
        in_sh = False
        for number, line in enumerate(text.splitlines(), 1):
            fence = line.strip()
            if fence.startswith("```"):
                in_sh = not in_sh and fence == "```sh"
                continue
            command = _BLOCK_LINE.match(line.strip()) if in_sh else None
            if command:
                found.append(Quoted(f"{name}:{number}", command.group(1)))
    return found


def readings(text: str) -> list[list[str]]:
    """The argument lists a quoted command stands for (after `recon`): the command without its
    optional parts, then with each optional part on its own."""
    text = text.replace("\\|", "|")
    text = re.sub(r'"?\$\([^)]*\)"?', PLACEHOLDER, text)
    text = re.sub(r"<[^>]*>", PLACEHOLDER, text)
    text = re.sub(r"\[([^\]]*)\]", lambda m: "[" + re.sub(r"\s*\|\s*", "|", m[1]) + "]", text)
    text = _SHELL_TAIL.sub("", text)
    optional = re.findall(r"\[([^\]]*)\]", text)
    base = re.sub(r"\[[^\]]*\]", " ", text)
    found: list[list[str]] = []
    for variant in [base, *(f"{base} {part}" for part in optional)]:
        found.extend(_alternatives(shlex.split(variant)[1:]))
    return found


def _alternatives(tokens: list[str]) -> list[list[str]]:
    choices: list[list[str]] = []
    for index, token in enumerate(tokens):
        if token in ("...", "…"):
            if index and tokens[index - 1].startswith("-"):
                choices.append([PLACEHOLDER])  # `--faults ...`: some value
            continue
        if re.fullmatch(r"[A-Z][A-Z_]*", token) or token == PLACEHOLDER:
            choices.append([PLACEHOLDER])
        elif "|" in token:
            choices.append([t for t in token.split("|") if t])
        elif re.fullmatch(r"[a-z][a-z-]*/[a-z][a-z-]*", token):
            choices.append(token.split("/"))
        else:
            choices.append([token.replace(PLACEHOLDER, "word")])
    return [list(reading) for reading in itertools.product(*choices)]


class RefusedError(Exception):
    """click refused the reading for a reason a reference form does not explain."""


def parse(args: list[str], placeholder: str | None = None) -> None:
    """Resolve `args` through the CLI's groups and parse the command's options and arguments,
    the way `recon` would before running anything. `placeholder` is the value standing in for
    what the reader supplies."""
    try:
        ctx = cli.make_context("recon", list(args))
        command: click.Command = cli
        while isinstance(command, click.Group):
            rest = [*ctx._protected_args, *ctx.args]
            if not rest:
                return  # a group named without a subcommand
            if rest[0] in PLACEHOLDER_VALUES:
                return  # `recon --verbose <command>`: any command
            name, found, rest = command.resolve_command(ctx, rest)
            assert found is not None and name is not None
            command = found
            ctx = command.make_context(name, rest, parent=ctx)
    except (click.MissingParameter, click.exceptions.NoArgsIsHelpError):
        return
    except click.exceptions.Exit as exc:
        if exc.exit_code == 0:
            return  # `--help`
        raise RefusedError(f"exits {exc.exit_code}") from None
    except click.BadParameter as exc:
        chosen = exc.param is not None and isinstance(exc.param.type, click.Choice)
        if chosen and placeholder is not None and repr(placeholder) in exc.message:
            return
        raise RefusedError(exc.format_message()) from None
    except click.BadOptionUsage as exc:
        if "requires an argument" in exc.message:
            return
        raise RefusedError(exc.format_message()) from None
    except click.UsageError as exc:
        raise RefusedError(exc.format_message()) from None


def check(args: list[str]) -> None:
    """One reading parses with its placeholders taken as some value of each kind."""
    refusals = []
    used = PLACEHOLDER in args
    for value in PLACEHOLDER_VALUES:
        try:
            parse([value if a == PLACEHOLDER else a for a in args], value if used else None)
        except RefusedError as exc:
            refusals.append(str(exc))
        else:
            return
    raise RefusedError(refusals[0])


def test_the_docs_quote_commands() -> None:
    """The reading finds the runbook's commands (a broken pattern would pass every check)."""
    texts = {q.text for q in quoted_commands()}
    assert len(texts) > 60
    assert any(t.startswith("recon deliveries choose") for t in texts)
    assert any(t.startswith("recon report --since") for t in texts)


def test_a_wrong_command_is_caught() -> None:
    """The check can fail: an unknown command, option or choice, and an extra argument."""
    for text in (
        "recon alerts close 4",
        "recon report --colour red",
        "recon report --format pdf",
        "recon alerts ack 4 5 --note x",
        "recon match --posting <id> --by <you> --reason x",  # one item alone is `accept`
        "recon accept --posting 1 --notification 2 --reason x",
    ):
        with pytest.raises(RefusedError):
            for reading in readings(text):
                check(reading)


@pytest.mark.parametrize("quoted", quoted_commands(), ids=lambda q: f"{q.where} {q.text}")
def test_every_quoted_command_parses(
    quoted: Quoted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The files a quoted command reads exist where the reader runs it.
    monkeypatch.chdir(tmp_path)
    for reading in readings(quoted.text):
        for option in FILE_OPTIONS & set(reading[:-1]):
            named = reading[reading.index(option) + 1]
            for value in PLACEHOLDER_VALUES if named == PLACEHOLDER else (named,):
                (tmp_path / value).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / value).touch()
        try:
            check(reading)
        except RefusedError as exc:
            pytest.fail(f"{quoted.where}: `{quoted.text}` as {reading}: {exc}")
