"""One time format for people across the CLI: `2026-11-26 19:16:21 UTC`, whatever the source.

A time reaches a command as an aware datetime from the store, as a summary's ISO text, or in
another zone; each must print the same way, and `--json` must keep ISO 8601 for machines.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from recon.cli.main import cli
from recon.cli.terminal import shown_time, shown_time_and_age

#: The one shape of a time printed for a person.
FOR_PEOPLE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC")
#: ISO 8601 as a machine writes it (a `T` between date and time).
MACHINE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")

CLI_SOURCES = Path(__file__).resolve().parents[2] / "recon" / "cli"


def test_every_source_of_a_time_reads_the_same() -> None:
    lagos = timezone(timedelta(hours=1))
    aware = datetime(2026, 11, 26, 20, 16, 21, 987654, tzinfo=lagos)
    assert shown_time(aware) == "2026-11-26 19:16:21 UTC"
    assert shown_time("2026-11-26T19:16:21.987654+00:00") == "2026-11-26 19:16:21 UTC"
    assert shown_time("2026-11-26T19:16:21Z") == "2026-11-26 19:16:21 UTC"
    assert shown_time(datetime(2026, 11, 26, 19, 16, 21)) == "2026-11-26 19:16:21 UTC"
    assert shown_time(None) == "never" and shown_time(None, missing="-") == "-"
    now = datetime(2026, 11, 26, 19, 19, 30, tzinfo=UTC)
    assert shown_time_and_age(aware, now) == "2026-11-26 19:16:21 UTC (3 min ago)"


def test_no_command_formats_a_time_of_its_own() -> None:
    """Commands print times through recon.cli.terminal.shown_time only; a second formatter
    (strftime, isoformat, the report's `moment` imported directly) is how formats drift."""
    offenders = [
        f"{path.name}: {pattern}"
        for path in sorted(CLI_SOURCES.glob("*.py"))
        if path.name != "terminal.py"
        for pattern in ("strftime(", ".isoformat()", "import moment", " moment,")
        if pattern in path.read_text()
    ]
    assert offenders == []


@pytest.fixture
def runner(base_env: dict[str, str], db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name, text in {**base_env, "DATABASE_URL": db_url}.items():
        monkeypatch.setenv(name, text)
    return CliRunner()


def _timed_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if re.search(r"\d{2}:\d{2}:\d{2}", line)]


def test_prune_and_rebuild_print_times_for_people_and_iso_as_json(runner: CliRunner) -> None:
    printed = []
    for command in (["prune", "--dry-run"], ["rebuild", "--dry-run"]):
        result = runner.invoke(cli, command, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        lines = _timed_lines(result.stdout)
        assert lines, f"`recon {' '.join(command)}` printed no time:\n{result.stdout}"
        printed += lines
    assert all(FOR_PEOPLE.search(line) and not MACHINE_TIME.search(line) for line in printed), (
        printed
    )
    as_json = runner.invoke(cli, ["prune", "--dry-run", "--json"], catch_exceptions=False)
    cutoffs = json.loads(as_json.stdout)["cutoffs"]
    assert cutoffs and all(MACHINE_TIME.match(value) for value in cutoffs.values())
