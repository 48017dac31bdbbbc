"""The runbook's steps, run as written: docs/alerts.md's commands for settling an alert act on a
store where its alert is open, and the alert is settled.

tests/unit/test_doc_commands.py parses every quoted command; a command can parse and still be
refused when it acts (`recon match --posting <id>` alone was: one item is not a match). Here
the steps that settle an alert by hand are read from their section, their placeholders filled
with the alert's own items, and run through the CLI against the store.
"""

from __future__ import annotations

import re
import shlex
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.console.runbook_pages import RUNBOOK, runbook_sections
from recon.cli.main import cli
from reconciliation.store.models import Alert
from reconciliation.store.types import utcnow
from tests.integration.reconciliation.body_conflict_world import conflicting_bodies
from tests.integration.reconciliation.builders import Store

#: Items an hour old: well past the 1 s grace the runner sets.
AN_HOUR_AGO = utcnow() - timedelta(hours=1)


@pytest.fixture
def run(base_env: dict[str, str], db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name, value in {**base_env, "DATABASE_URL": db_url}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RECON_NOTIFICATION_GRACE_SECONDS", "1")
    return CliRunner()


def steps(kind: str, command: str | tuple[str, ...]) -> list[str]:
    """The commands starting with `command` (or any of them) that the runbook's section for
    `kind` quotes."""
    section = re.sub(r"\s*\n\s*", " ", runbook_sections(RUNBOOK.read_text("utf-8"))[kind])
    found = [c for c in re.findall(r"`(recon [^`]+)`", section) if c.startswith(command)]
    assert found, f"the {kind} section quotes no `{command}`"
    return found


def act(run: CliRunner, step: str, values: dict[str, str]) -> str:
    """Run one quoted step with its placeholders (`<...>`) filled in."""
    filled = re.sub(r"<([^>]+)>", lambda m: values[m.group(1)], step)
    result = run.invoke(cli, shlex.split(filled)[1:], catch_exceptions=False)
    assert result.exit_code == 0, f"`{filled}`: {result.output}"
    return result.output


def alert_state(sessions: sessionmaker[Session], kind: str) -> str:
    with sessions() as s:
        return s.scalars(select(Alert.state).where(Alert.kind == kind)).one()


def test_a_posting_the_provider_never_announced_is_settled_as_the_runbook_says(
    run: CliRunner, session_factory: sessionmaker[Session]
) -> None:
    kind = "posting_without_notification"
    store = Store(session_factory)
    posting = store.posting(store.holding(), 77_700, posted=AN_HOUR_AGO)
    act(run, "recon reconcile", {})
    assert alert_state(session_factory, kind) == "open"

    # Whichever decision the section names (a match by hand, or an acceptance), as written.
    for step in steps(kind, ("recon match", "recon accept")):
        act(
            run,
            step,
            {"id": str(posting.id), "you": "ana", "what the provider said": "never sent"},
        )
    act(run, "recon reconcile", {})
    assert alert_state(session_factory, kind) == "resolved"


def test_a_delivery_sent_with_two_bodies_is_settled_as_the_runbook_says(
    run: CliRunner, session_factory: sessionmaker[Session]
) -> None:
    kind = "delivery_body_conflict"
    _, second = conflicting_bodies(session_factory)
    assert alert_state(session_factory, kind) == "open"

    for step in steps(kind, "recon deliveries choose"):
        act(
            run,
            step,
            {
                "row of the true body": str(second),
                "you": "ana",
                "what the provider said": "the second is the correction",
            },
        )
    assert alert_state(session_factory, kind) == "resolved"
