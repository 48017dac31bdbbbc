"""docs/alerts.md has a full section for every alert kind recon raises, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

from app.console.runbook_pages import RUNBOOK, runbook_sections
from reconciliation.operator.alert_kinds import ALL_ALERT_KINDS

REPO = Path(__file__).resolve().parents[2]

#: What every section says, in this order.
PARTS = ("**Means**", "**Fires when**", "**Severity**", "**Clears by itself**", "**What to do**")

#: The severities a section may name (reconciliation.alerts.lifecycle.SEVERITIES, and the
#: fee check's warning).
SEVERITY_WORDS = ("critical", "high", "medium", "low", "warning")


def test_the_console_reads_the_runbook_in_the_repository() -> None:
    assert RUNBOOK == REPO / "docs" / "alerts.md"


def test_every_kind_has_a_section_saying_all_a_person_needs() -> None:
    sections = runbook_sections(RUNBOOK.read_text(encoding="utf-8"))
    kinds = {name for name in sections if re.fullmatch(r"[a-z_]+", name)}
    assert kinds == set(ALL_ALERT_KINDS), kinds ^ set(ALL_ALERT_KINDS)
    for kind in ALL_ALERT_KINDS:
        text = sections[kind]
        where = [text.find(part) for part in PARTS]
        assert -1 not in where and where == sorted(where), (kind, where)
        severity = text[text.find("**Severity**") :].split("\n\n")[0]
        assert any(word in severity for word in SEVERITY_WORDS), kind
        clears = text[text.find("**Clears by itself**") :].split("\n\n")[0]
        assert re.search(r"\*\*: (yes|no)\b", clears), kind
        todo = text[text.find("**What to do**") :]
        assert "recon " in todo or "/console" in todo, f"{kind}: no command or page to use"


def test_the_readme_names_the_same_kinds() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for kind in ALL_ALERT_KINDS:
        assert f"`{kind}`" in readme, kind


def test_alerts_list_help_points_at_the_runbook() -> None:
    from click.testing import CliRunner

    from recon.cli.main import cli

    shown = CliRunner().invoke(cli, ["alerts", "list", "--help"])
    assert shown.exit_code == 0
    text = " ".join(shown.stdout.split())
    assert "docs/alerts.md" in text and "/console/runbook/KIND" in text
