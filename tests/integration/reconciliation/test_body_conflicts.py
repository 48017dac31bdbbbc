"""A delivery id re-sent with another body: the operator marks which body is true.

The story of the demo's fault: the provider sends a payment notice, then the same delivery id
with a different amount. The first body is processed (and, matched to its posting, disagrees
on the money); the second is quarantined with a `delivery_body_conflict` alert. Replaying the
second cannot settle it; `recon deliveries choose` (or `POST /deliveries/{row}/choose`) does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from foundation import load_settings
from recon.cli.main import cli
from reconciliation.store.models import Alert, AuditEvent, Delivery, Notification
from reconciliation.store.types import utcnow
from tests.integration.reconciliation.body_conflict_world import DELIVERY_ID, conflicting_bodies
from tests.integration.reconciliation.builders import Store

TOKEN = "body-conflict-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def run(base_env: dict[str, str], db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name, value in {**base_env, "DATABASE_URL": db_url}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RECON_NOTIFICATION_GRACE_SECONDS", "1")
    return CliRunner()


def _ok(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _active(sessions: sessionmaker[Session]) -> dict[str, str]:
    with sessions() as s:
        return {a.kind: a.state for a in s.scalars(select(Alert)) if a.state != "resolved"}


def test_choosing_the_later_body_settles_the_conflict_and_the_mismatch(
    run: CliRunner, session_factory: sessionmaker[Session]
) -> None:
    first, second = conflicting_bodies(session_factory)
    _ok(run, "reconcile")
    assert _active(session_factory) == {
        "delivery_body_conflict": "open",
        "amount_mismatch": "open",
    }

    # Replaying the other body only puts it back in quarantine, now saying what settles it.
    _ok(run, "deliveries", "replay", str(second), "--by", "bo")
    _ok(run, "reconcile")
    with session_factory() as s:
        # (the CLI has no broker here: process the pending row as a worker would)
        from reconciliation.notifications.processing import process_deliveries

        process_deliveries(s, [second], utcnow())
        s.commit()
        row = s.get(Delivery, second)
        assert row is not None and row.state == "quarantined"
        assert "recon deliveries choose" in (row.error or "")
        assert "fix the cause" not in (row.error or "")

    answer = _ok(
        run, "deliveries", "choose", str(second), "--by", "ana", "--reason", "provider: 612.50"
    )
    assert f"row {second} is the true body of delivery {DELIVERY_ID}" in answer
    assert f"kept as evidence: row {first}" in answer

    with session_factory() as s:
        old, new = s.get(Delivery, first), s.get(Delivery, second)
        assert old is not None and new is not None
        assert (old.state, old.original, new.state, new.original) == (
            "rejected",
            False,
            "processed",
            True,
        )
        assert b"612.51" in old.body  # the rejected body is kept byte for byte
        [note] = s.scalars(select(Notification)).all()
        assert (note.delivery_pk, note.amount_minor) == (second, 61_250)
        audit = s.scalars(select(AuditEvent)).all()
        assert [(e.actor, e.action, e.door) for e in audit] == [
            ("bo", "replayed delivery", "cli"),
            ("ana", "chose the true body", "cli"),
        ]

    # The conflict is resolved by the choice; the mismatch clears at the next pass.
    assert _active(session_factory) == {"amount_mismatch": "open"}
    _ok(run, "reconcile")
    assert _active(session_factory) == {}

    # Recomputed from the raw facts, the store agrees with the choice (the chosen row is the
    # delivery's original, the rejected one is evidence).
    rebuilt = _ok(run, "rebuild", "--dry-run")
    assert "the rebuilt state equals the live one" in rebuilt

    rejected = _ok(run, "deliveries", "list", "--state", "rejected")
    assert DELIVERY_ID in rejected
    refused = run.invoke(cli, ["deliveries", "replay", str(first)])
    assert refused.exit_code == 2
    assert f"recon deliveries choose {first}" in refused.output


def test_a_pass_over_the_whole_inbox_does_not_raise_a_settled_conflict_again(
    run: CliRunner, session_factory: sessionmaker[Session]
) -> None:
    first, _ = conflicting_bodies(session_factory)
    _ok(run, "deliveries", "choose", str(first), "--by", "bo", "--reason", "the first was right")
    # The first pass of a store reads every delivery, the settled conflict's rows included.
    _ok(run, "reconcile")
    with session_factory() as s:
        [alert] = s.scalars(select(Alert).where(Alert.kind == "delivery_body_conflict")).all()
        assert (alert.state, alert.resolved_by) == ("resolved", "bo")
    # The first body was already the notification: the mismatch it tells stays, for a person.
    assert _active(session_factory) == {"amount_mismatch": "open"}
    assert "the rebuilt state equals the live one" in _ok(run, "rebuild", "--dry-run")


@pytest.fixture
def client(base_env: dict[str, str], db_url: str) -> Iterator[TestClient[Litestar]]:
    settings = load_settings({**base_env, "DATABASE_URL": db_url, "RECON_ADMIN_TOKEN": TOKEN})
    app = create_app(settings, enqueue=lambda ids: None, self_register=False)
    with TestClient(app) as test_client:
        yield test_client


def test_the_api_marks_the_true_body(
    client: TestClient[Litestar], session_factory: sessionmaker[Session]
) -> None:
    first, second = conflicting_bodies(session_factory)
    path = f"/deliveries/{first}/choose"
    assert client.post(path, json={"by": "ana", "reason": "x"}).status_code == 401
    unsaid = client.post(path, json={"by": "ana", "reason": " "}, headers=AUTH)
    assert unsaid.status_code == 400 and "say why" in unsaid.text

    chosen = client.post(path, json={"by": "ana", "reason": "the first was right"}, headers=AUTH)
    assert chosen.status_code == 200, chosen.text
    answer = chosen.json()
    assert (answer["chosenRow"], answer["rejectedRows"]) == (first, [second])
    assert answer["notificationChanged"] is False
    assert isinstance(answer["resolvedAlert"], int)
    with session_factory() as s:
        assert s.get(Delivery, second).state == "rejected"  # type: ignore[union-attr]
        alert = s.get(Alert, answer["resolvedAlert"])
        assert alert is not None and (alert.kind, alert.state, alert.resolved_by) == (
            "delivery_body_conflict",
            "resolved",
            "ana",
        )

    assert (
        client.post(
            "/deliveries/999999/choose", json={"by": "a", "reason": "b"}, headers=AUTH
        ).status_code
        == 404
    )
    replay = client.post(f"/deliveries/{second}/replay", headers=AUTH)
    assert replay.status_code == 400 and "kept as evidence" in replay.text
    listed = client.get("/deliveries", params={"state": "rejected"}, headers=AUTH).json()
    assert [d["id"] for d in listed["items"]] == [second]


def test_a_delivery_with_one_body_has_nothing_to_choose(
    client: TestClient[Litestar], session_factory: sessionmaker[Session]
) -> None:
    row = Store(session_factory).delivery("evt-alone", b'{"id": "evt-alone"}')
    answer = client.post(
        f"/deliveries/{row.id}/choose", json={"by": "a", "reason": "b"}, headers=AUTH
    )
    assert answer.status_code == 400 and "one body only" in answer.text


def test_the_alerts_api_refuses_a_kind_it_never_raises(client: TestClient[Litestar]) -> None:
    answer = client.get("/alerts", params={"kind": "amount-mismatch"}, headers=AUTH)
    assert answer.status_code == 400 and "did you mean amount_mismatch?" in answer.text
    assert client.get("/alerts", params={"kind": "amount_mismatch"}, headers=AUTH).json() == []
