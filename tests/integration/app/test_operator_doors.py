"""One way in: every operator action, through each door it has, leaves exactly one audit row
naming who acted and the door (cli, api, console); a refused action leaves none.

Each door is driven through its public face on the same world: the CLI through its runner,
the JSON API and the console through the real app (TestClient, lifespan included), on both
databases.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from litestar.testing import TestClient
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from recon.cli.main import cli
from reconciliation import ReconcilePolicy, run_pass
from reconciliation.notifications.inbox import InboundDelivery, record_deliveries
from reconciliation.store.db import transaction
from reconciliation.store.models import Alert, AuditEvent, Match
from reconciliation.store.types import utcnow
from tests.integration.app.receiver_helpers import ADMIN
from tests.integration.app.test_console import csrf_of, open_alert, sign_in
from tests.integration.reconciliation.body_conflict_world import conflicting_bodies
from tests.integration.reconciliation.builders import Store, at

Client = TestClient[Any]


@dataclass(frozen=True, slots=True)
class World:
    """What the actions act on: an open alert, a posting and a notification no pass matched,
    two quarantined deliveries, and the second body of a delivery id sent twice."""

    alert: int
    posting: int
    notification: int
    quarantined: tuple[int, int]
    second_body: int


def _world(factory: sessionmaker[Session]) -> World:
    _, second_body = conflicting_bodies(factory)
    store = Store(factory)
    holding = store.holding()
    posting = store.posting(holding, 5_000)
    notification = store.notification("PAYMENT_RECEIVED", holding, 4_000)
    run_pass(factory, ReconcilePolicy(notification_grace_seconds=300), now=at(60), publish=False)
    with transaction(factory) as session:
        recorded = record_deliveries(
            session.connection(),
            [
                InboundDelivery(f"bad-{n}", b"{", {}, "standard", None, utcnow(), "unparseable")
                for n in range(2)
            ],
        )
    first, second = sorted(r.row_id for r in recorded if r.row_id is not None)
    return World(open_alert(factory), posting.id, notification.id, (first, second), second_body)


def _trail(factory: sessionmaker[Session]) -> list[tuple[str, str | None, str, str]]:
    with factory() as s:
        return [
            (e.actor, e.door, e.action, e.subject)
            for e in s.scalars(select(AuditEvent).order_by(AuditEvent.id))
        ]


def _rows(factory: sessionmaker[Session]) -> int:
    with factory() as s:
        return s.scalar(select(func.count()).select_from(AuditEvent)) or 0


def _match_of(factory: sessionmaker[Session], posting: int) -> int:
    with factory() as s:
        found = s.scalar(
            select(Match.id).where(Match.posting_id == posting, Match.unmatched_at.is_(None))
        )
        assert found is not None
        return found


def test_every_cli_action_leaves_one_row_from_the_cli(
    client: Client,
    factory: sessionmaker[Session],
    recon_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Invariant 11: every operator action from the CLI leaves one audit row naming who, the door
    and why."""
    w = _world(factory)
    for name, value in recon_env.items():
        monkeypatch.setenv(name, value)
    # Without --by, the actor is the user running the command, as the system names them.
    monkeypatch.setenv("LOGNAME", "oncall-shell")
    runner = CliRunner()

    def run(*args: str, ok: bool = True) -> str:
        result = runner.invoke(cli, list(args), catch_exceptions=False)
        assert (result.exit_code == 0) is ok, result.output
        return result.output

    run("alerts", "ack", str(w.alert), "--note", "looking")
    run("alerts", "resolve", str(w.alert), "--by", "ana", "--note", "known cause")
    before = _rows(factory)
    assert "already resolved" in run("alerts", "ack", str(w.alert), "--note", "x", ok=False)
    assert "no delivery with row id" in run("deliveries", "replay", "999999", ok=False)
    taken = tmp_path / "report.csv"
    assert "is not a date" in run("report", "--since", "soon", "--output", str(taken), ok=False)
    assert not taken.exists()
    assert "Reconciliation report" in run("report")  # read on the terminal: no file left recon
    assert _rows(factory) == before  # refused: nothing happened, nothing recorded
    match = f"--posting={w.posting}", f"--notification={w.notification}"
    run("match", *match, "--by", "ana", "--reason", "same payer")
    matched = _match_of(factory, w.posting)
    run("unmatch", str(matched), "--by", "ana", "--reason", "wrong payer")
    run("accept", f"--posting={w.posting}", "--by", "ana", "--reason", "a refund")
    accepted = _match_of(factory, w.posting)
    run("deliveries", "replay", str(w.quarantined[0]), "--by", "ana")
    run("deliveries", "replay", "--quarantined", "--by", "ana")
    run("deliveries", "replay", "--pending", "--by", "ana")
    run("deliveries", "choose", str(w.second_body), "--by", "ana", "--reason", "provider said")
    run("console", "sessions", "end-all", "--by", "ana")
    run("report", "--format", "csv", "--output", str(taken), "--by", "ana")
    assert taken.read_text(encoding="utf-8").startswith("kind,id,holding_account_number,")

    assert _trail(factory) == [
        ("oncall-shell", "cli", "acknowledged alert", f"alert {w.alert}"),
        ("ana", "cli", "resolved alert", f"alert {w.alert}"),
        ("ana", "cli", "matched by hand", f"match {matched}"),
        ("ana", "cli", "unmatched", f"match {matched}"),
        ("ana", "cli", "accepted without a counterpart", f"posting {w.posting} (match {accepted})"),
        ("ana", "cli", "replayed delivery", f"delivery {w.quarantined[0]}"),
        ("ana", "cli", "replayed quarantined deliveries", "1 quarantined deliveries"),
        ("ana", "cli", "replayed pending deliveries", "2 pending deliveries"),
        ("ana", "cli", "chose the true body", f"delivery {w.second_body}"),
        ("ana", "cli", "ended every console session", "console"),
        ("ana", "cli", "downloaded report", "report csv since the start until now"),
    ]
    with factory() as s:
        alert = s.get_one(Alert, w.alert)
        assert (alert.acknowledged_by, alert.resolved_by) == ("oncall-shell", "ana")
    # The console's audit page says which door each row came through.
    sign_in(client, name="Grace")
    page = client.get("/console/audit").text
    assert (page.count("<td>cli</td>"), page.count("<td>console</td>")) == (11, 1)


def test_every_api_action_leaves_one_row_from_the_api(
    client: Client, factory: sessionmaker[Session], enqueued: list[int]
) -> None:
    """Invariant 11: every operator action from the API leaves one audit row naming who, the door
    and why."""
    w = _world(factory)

    def post(path: str, body: dict[str, str] | None = None, status: int = 200) -> Any:
        answer = client.post(path, json=body, headers=ADMIN)
        assert answer.status_code == status, answer.text
        return answer.json()

    post(f"/alerts/{w.alert}/ack", {"by": "bo", "note": "looking"})
    post(f"/alerts/{w.alert}/resolve", {"by": "bo", "note": "known cause"})
    before = _rows(factory)
    post(f"/alerts/{w.alert}/ack", {"by": "bo", "note": "again"}, status=400)
    post("/alerts/999999/resolve", {"by": "bo", "note": "x"}, status=404)
    post(f"/alerts/{w.alert}/resolve", {"by": " ", "note": "x"}, status=400)
    refused = client.get("/reports/reconciliation", params={"since": "soon"}, headers=ADMIN)
    assert refused.status_code == 400, refused.text
    assert _rows(factory) == before
    post(f"/deliveries/{w.quarantined[0]}/replay", {"by": "bo"})
    # A replay sent with no body names no one: all the bearer token says is who may act.
    post(f"/deliveries/{w.quarantined[1]}/replay")
    post("/deliveries/replay?state=pending", {"by": "bo"})
    post(f"/deliveries/{w.second_body}/choose", {"by": "bo", "reason": "provider said"})
    for asked in ({"format": "csv", "by": "bo"}, {"until": "2030-01-01"}):
        taken = client.get("/reports/reconciliation", params=asked, headers=ADMIN)
        assert taken.status_code == 200, taken.text

    assert _trail(factory) == [
        ("bo", "api", "acknowledged alert", f"alert {w.alert}"),
        ("bo", "api", "resolved alert", f"alert {w.alert}"),
        ("bo", "api", "replayed delivery", f"delivery {w.quarantined[0]}"),
        ("admin token", "api", "replayed delivery", f"delivery {w.quarantined[1]}"),
        ("bo", "api", "replayed pending deliveries", "2 pending deliveries"),
        ("bo", "api", "chose the true body", f"delivery {w.second_body}"),
        ("bo", "api", "downloaded report", "report csv since the start until now"),
        ("admin token", "api", "downloaded report", "report json since the start until 2030-01-01"),
    ]
    assert sorted(enqueued) == sorted([*w.quarantined, *w.quarantined])


def test_every_console_action_leaves_one_row_from_the_console(
    client: Client, factory: sessionmaker[Session]
) -> None:
    """Invariant 11: every operator action from the console leaves one audit row naming who, the
    door and why."""
    w = _world(factory)
    sign_in(client, name="Grace")
    token = csrf_of(client)

    def post(path: str, status: int = 303, **form: str) -> Any:
        answer = client.post(path, data={"csrf_token": token, **form}, follow_redirects=False)
        assert answer.status_code == status, answer.text
        return answer

    post(f"/console/alerts/{w.alert}/acknowledge", comment="looking")
    post(f"/console/alerts/{w.alert}/resolve", comment="known cause")
    before = _rows(factory)
    post(f"/console/alerts/{w.alert}/acknowledge", 400, comment="too late")
    post("/console/exceptions/match", 400, posting=str(w.posting), reason="alone")
    assert _rows(factory) == before
    items = {"posting": str(w.posting), "notification": str(w.notification)}
    post("/console/exceptions/match", reason="same payer", **items)
    matched = _match_of(factory, w.posting)
    post("/console/exceptions/unmatch", match=str(matched), reason="wrong payer")
    post("/console/exceptions/accept", kind="posting", item=str(w.posting), reason="a refund")
    accepted = _match_of(factory, w.posting)
    post(f"/console/deliveries/{w.quarantined[0]}/replay")
    post("/console/deliveries/replay-quarantined")
    # A body conflict is settled from the delivery's page too: replay cannot settle it.
    conflict = client.get(f"/console/deliveries/{w.second_body}").text
    assert f'action="/console/deliveries/{w.second_body}/choose"' in conflict
    assert "/replay" not in conflict
    post(f"/console/deliveries/{w.second_body}/choose", 400, reason=" ")
    post(f"/console/deliveries/{w.second_body}/choose", reason="provider said")
    refused = client.get("/console/reports/download?format=csv&since=soon")
    assert refused.status_code == 400
    assert client.get("/console/reports/download?format=csv").status_code == 200
    post("/console/sign-out")

    assert _trail(factory) == [
        ("Grace", "console", "signed in", "console"),
        ("Grace", "console", "acknowledged alert", f"alert {w.alert}"),
        ("Grace", "console", "resolved alert", f"alert {w.alert}"),
        ("Grace", "console", "matched by hand", f"match {matched}"),
        ("Grace", "console", "unmatched", f"match {matched}"),
        (
            "Grace",
            "console",
            "accepted without a counterpart",
            f"posting {w.posting} (match {accepted})",
        ),
        ("Grace", "console", "replayed delivery", f"delivery {w.quarantined[0]}"),
        ("Grace", "console", "replayed quarantined deliveries", "1 quarantined deliveries"),
        ("Grace", "console", "chose the true body", f"delivery {w.second_body}"),
        ("Grace", "console", "downloaded report", "report csv since the start until now"),
        ("Grace", "console", "signed out", "console"),
    ]


def test_a_change_whose_audit_row_cannot_be_written_does_not_happen(
    client: Client, factory: sessionmaker[Session]
) -> None:
    """Invariant 11: The change and its row are one transaction: with the audit table gone, the acknowledgement
    is refused whole and the alert stays open."""
    w = _world(factory)
    with transaction(factory) as session:
        session.execute(text("ALTER TABLE audit_events RENAME TO audit_events_away"))
    answer = client.post(
        f"/alerts/{w.alert}/ack", json={"by": "bo", "note": "looking"}, headers=ADMIN
    )
    assert answer.status_code >= 500
    with transaction(factory) as session:
        session.execute(text("ALTER TABLE audit_events_away RENAME TO audit_events"))
        alert = session.get_one(Alert, w.alert)
        assert (alert.state, alert.acknowledged_by) == ("open", None)
