"""`recon reconcile|match|unmatch|alerts|report` against a real store."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from recon.cli.main import cli
from reconciliation.store.models import Alert, AuditEvent, Match, Transfer
from reconciliation.store.types import utcnow
from tests.integration.reconciliation.builders import Store

#: CLI commands read the real clock: items are an hour old, well past the 1 s grace set below.
AN_HOUR_AGO = utcnow() - timedelta(hours=1)


@pytest.fixture
def run(base_env: dict[str, str], db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name, value in {**base_env, "DATABASE_URL": db_url}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RECON_NOTIFICATION_GRACE_SECONDS", "1")
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_reconcile_dry_run_then_for_real(
    run: CliRunner, session_factory: sessionmaker[Session]
) -> None:
    store = Store(session_factory)
    holding = store.holding()
    posting = store.posting(holding, 5_000)
    store.notification("PAYMENT_RECEIVED", holding, 5_000, receipt=posting.receipt_ref)

    dry = invoke(run, "reconcile", "--dry-run")
    assert "would match: receipt_ref 1" in dry and "nothing was written" in dry
    # Routine output is for a person: no internal pairs, no per-rule timings, no empty lines
    # of things that did not happen; --verbose has them.
    assert re.fullmatch(
        r"would match: receipt_ref 1\ntook \d+\.\d\ds; nothing was written \(dry run\)\n", dry
    ), dry
    loud = invoke(run, "--verbose", "reconcile", "--dry-run")
    assert f"posting {posting.id} " in loud and "took matching " in loud and "drift." in loud
    with session_factory() as s:
        assert s.scalars(select(Match)).all() == []

    real = json.loads(invoke(run, "reconcile", "--json"))
    assert real["matchedByRule"] == {"receipt_ref": 1}
    with session_factory() as s:
        [row] = s.scalars(select(Match)).all()

    out = invoke(run, "unmatch", str(row.id), "--by", "ana", "--reason", "wrong customer")
    assert f"unmatched: match {row.id}" in out
    # Both items are unexplained now, and say so at once: an open alert each.
    with session_factory() as s:
        raised = s.scalars(select(Alert).where(Alert.state == "open")).all()
        assert sorted(a.evidence["itemKind"] for a in raised) == ["notification", "posting"]
        assert {a.kind for a in raised} == {"unmatched_by_hand"}
        # Each named by the number people see and type, its provider refs in the evidence.
        subjects = sorted(a.subject.split(" has ")[0] for a in raised)
        ids = {a.evidence["itemKind"]: a.evidence["itemId"] for a in raised}
        assert subjects == [f"notification {ids['notification']}", f"posting {ids['posting']}"]
        posting_alert = next(a for a in raised if a.evidence["itemKind"] == "posting")
        assert posting_alert.evidence["posting"]["journalRef"]
    assert out.count("alert ") == 2 and "took match" in out and "wrong customer" in out

    # One item alone is not a match: the CLI says which decision that is instead.
    alone = run.invoke(
        cli, ["match", "--posting", str(posting.id), "--by", "ana", "--reason", "refund"]
    )
    assert alone.exit_code == 2 and "accept it without a counterpart" in alone.output
    out = invoke(
        run, "accept", "--posting", str(posting.id), "--by", "ana", "--reason", "refund, no notice"
    )
    assert f"accepted without a counterpart: posting {posting.id}" in out
    with session_factory() as s:
        accepted = s.scalars(select(Match).where(Match.rule == "accepted")).one()
        assert (accepted.posting_id, accepted.matched_by, accepted.reason) == (
            posting.id,
            "ana",
            "refund, no notice",
        )
        trail = s.scalars(select(AuditEvent).order_by(AuditEvent.id)).all()
        assert [(e.actor, e.action, e.reason) for e in trail] == [
            ("ana", "unmatched", "wrong customer"),
            ("ana", "accepted without a counterpart", "refund, no notice"),
        ]
    # The pass clears the accepted item's alert; the notification's stays open.
    invoke(run, "reconcile")
    with session_factory() as s:
        still = s.scalars(select(Alert).where(Alert.state == "open")).all()
        assert [a.evidence["itemKind"] for a in still] == ["notification"]
    report = json.loads(invoke(run, "report", "--format", "json", "--since", "2020-01-01"))
    assert report["summary"]["accepted"] == 1
    assert "accepted without a counterpart" in invoke(run, "report", "--since", "2020-01-01")

    refused = run.invoke(
        cli, ["accept", "--posting", str(posting.id), "--by", "ana", "--reason", "again"]
    )
    assert refused.exit_code == 2
    assert "already matched" in refused.output


def test_alerts_list_ack_resolve(run: CliRunner, session_factory: sessionmaker[Session]) -> None:
    store = Store(session_factory)
    store.posting(store.holding(), 1_234, posted=AN_HOUR_AGO)  # never notified
    invoke(run, "reconcile")

    listed = json.loads(invoke(run, "alerts", "list", "--json"))
    assert [a["kind"] for a in listed] == ["posting_without_notification"]
    alert_id = str(listed[0]["id"])
    assert "posting_without_notification" in invoke(run, "alerts", "list")
    assert "acknowledged" in invoke(run, "alerts", "ack", alert_id, "--by", "bo", "--note", "mine")
    assert "resolved" in invoke(run, "alerts", "resolve", alert_id, "--by", "bo", "--note", "ok")
    with session_factory() as s:
        alert = s.scalars(select(Alert)).one()
        assert (alert.acknowledged_by, alert.resolved_by, alert.note) == ("bo", "bo", "ok")
    missing = run.invoke(cli, ["alerts", "ack", "999", "--by", "bo", "--note", "mine"])
    assert missing.exit_code == 2 and "no alert has id 999" in missing.output
    # A change says why, in every door: a blank note is refused and changes nothing.
    blank = run.invoke(cli, ["alerts", "ack", alert_id, "--by", "bo", "--note", " "])
    assert blank.exit_code == 2 and "say why you acknowledge it" in blank.output


def test_report_to_a_file_in_every_format(
    run: CliRunner, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    store = Store(session_factory)
    store.posting(store.holding(), 1_234, posted=AN_HOUR_AGO)
    invoke(run, "reconcile")
    for fmt in ("text", "json", "csv", "html"):
        target = tmp_path / f"report.{fmt}"
        out = invoke(
            run, "report", "--format", fmt, "--output", str(target), "--since", "2020-01-01"
        )
        assert f"wrote {target}" in out
        assert target.stat().st_size > 200
    assert json.loads((tmp_path / "report.json").read_text())["openExceptions"]["total"] == 1
    assert not re.search(r"https?://", (tmp_path / "report.html").read_text())
    assert "Items by holding and unit" in invoke(run, "report")
    bad = run.invoke(cli, ["report", "--until", "2026-01-01T00:00:00"])
    assert bad.exit_code == 2 and "no time zone" in bad.output


def test_report_gives_fees_per_holding_by_kind_and_bearer_in_every_format(
    run: CliRunner, session_factory: sessionmaker[Session]
) -> None:
    store = Store(session_factory)
    source, dest = store.holding(), store.holding()
    fees = [("sender_pays", 2_500, {}), ("receiver_pays", 1_000, {}), ("split", None, {"x": 1})]
    for bearer, fee, evidence in fees:
        transfer = store.transfer(source, dest, 100_000, requested=AN_HOUR_AGO)
        with session_factory.begin() as s:
            s.execute(
                update(Transfer)
                .where(Transfer.id == transfer.id)
                .values(
                    fee_charged_minor=fee,
                    fee_bearer=bearer,
                    fee_kind="application_fee",
                    fee_evidence=evidence or None,
                )
            )

    as_json = json.loads(invoke(run, "report", "--format", "json", "--since", "2020-01-01"))
    figures = {(f["bearer"], f["amountMinor"], f["unknownCount"]) for f in as_json["fees"]}
    assert figures == {("sender_pays", "2500", 0), ("receiver_pays", "1000", 0), ("split", "0", 1)}
    assert {f["holdingRef"] for f in as_json["fees"]} == {str(source.holding_ref)}

    as_csv = invoke(run, "report", "--format", "csv", "--section", "fees", "--since", "2020-01-01")
    fee_rows = {r["bearer"]: r for r in csv.DictReader(io.StringIO(as_csv))}
    assert Decimal(fee_rows["sender_pays"]["fees"]) == Decimal("25.00")
    assert fee_rows["sender_pays"]["holding_ref"] == str(source.holding_ref)
    assert fee_rows["split"]["unknown"] == "1"
    as_text = invoke(run, "report", "--since", "2020-01-01")
    assert "Fees of settled transfers, by kind and bearer" in as_text and "25.00 NGN" in as_text
    as_html = invoke(run, "report", "--format", "html", "--since", "2020-01-01")
    assert "Fees of settled transfers" in as_html and "10.00 NGN" in as_html


def test_a_transfer_past_its_finality_deadline_is_late_in_the_alert_and_the_report(
    run: CliRunner, session_factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One definition of late: the report never calls "waiting" what an alert calls overdue."""
    monkeypatch.setenv("RECON_FINALITY_DEADLINE_SECONDS", "1800")
    store = Store(session_factory)
    source, dest = store.holding(), store.holding()
    stuck = store.transfer(source, dest, 5_000, status="awaiting_finality", requested=AN_HOUR_AGO)
    fresh = store.transfer(source, dest, 7_000, status="awaiting_finality", requested=utcnow())
    invoke(run, "reconcile")
    listed = json.loads(invoke(run, "alerts", "list", "--json"))
    assert [a["kind"] for a in listed] == ["finality_overdue"]
    assert str(stuck.transfer_ref) in listed[0]["subject"]

    report = json.loads(invoke(run, "report", "--format", "json", "--since", "2020-01-01"))
    states = {i["reference"]: (i["state"], i["why"]) for i in report["openItems"]["items"]}
    assert states[str(stuck.transfer_ref)] == (
        "exception",
        "late: still in flight past its finality deadline",
    )
    assert states[str(fresh.transfer_ref)] == ("waiting", "in flight at the provider")
    assert "late: still in flight past its finality deadline" in invoke(
        run, "report", "--since", "2020-01-01"
    )


def test_report_names_holdings_by_account_and_finds_them_by_what_people_type(
    run: CliRunner, session_factory: sessionmaker[Session]
) -> None:
    store = Store(session_factory)
    ada = store.holding(name="ADA OBI STORES")
    bola, other = store.holding(name="Bola Trading"), store.holding(name="Bola Foods")
    unnamed = store.holding(locator=False)
    store.posting(ada, 123_456, posted=AN_HOUR_AGO)  # never notified: an open item
    store.posting(bola, 700, posted=AN_HOUR_AGO)
    store.transfer(unnamed, other, 5_000, requested=AN_HOUR_AGO)
    invoke(run, "reconcile")
    number, ref = store.numbers[ada.id], str(ada.holding_ref)
    label = f"{number} ADA OBI STORES"

    everything = invoke(run, "report", "--since", "2020-01-01")
    assert label in everything and f"ref {str(unnamed.holding_ref)[:8]}" in everything
    # The text names each holding by its account, and lists every holdingRef once at the end.
    holdings_table = everything.split("Holdings in this report", 1)[1]
    assert label in holdings_table and ref in holdings_table
    assert everything.count(ref) == 1

    for asked in (number, "obi stores", ref, ref[:8]):
        one = invoke(run, "report", "--since", "2020-01-01", "--holding", asked)
        assert f", holding {label}" in one.splitlines()[1], asked
        # Every section but the alerts (about conditions, not narrowed) is this holding's.
        assert "Bola" not in one.split("Alerts in the window")[0]
        assert "Bola" not in one.split("Holdings in this report")[1]
    ambiguous = run.invoke(cli, ["report", "--holding", "bola"])
    assert ambiguous.exit_code == 2
    assert "'bola' matches 2 holdings" in ambiguous.output
    assert "Bola Trading" in ambiguous.output and "Bola Foods" in ambiguous.output
    unknown = run.invoke(cli, ["report", "--holding", "nobody"])
    assert unknown.exit_code == 2 and "no holding matches 'nobody'" in unknown.output

    # The CSV a spreadsheet opens: one row per unmatched item, amounts in major units.
    items = list(
        csv.DictReader(
            io.StringIO(invoke(run, "report", "--format", "csv", "--since", "2020-01-01"))
        )
    )
    by_name = {r["holding_name"]: r for r in items}
    assert set(by_name) == {"ADA OBI STORES", "Bola Trading", ""}
    # A holding whose account is not known yet: its holdingRef, no number nor name to show.
    assert (by_name[""]["kind"], by_name[""]["holding_ref"]) == (
        "transfer",
        str(unnamed.holding_ref),
    )
    row = by_name["ADA OBI STORES"]
    assert (row["kind"], row["holding_account_number"], row["holding_ref"]) == (
        "posting",
        f'="{number}"',  # kept text by a spreadsheet (docs/reports.md)
        ref,
    )
    assert Decimal(row["amount"]) == Decimal("1234.56") and row["currency"] == "NGN"
    assert row["side"] == "credit"  # a posting's own side: money into its holding
    assert by_name[""]["side"] == "debit"  # a transfer: money out of its source holding
    assert (row["state"], row["why_listed"]) == ("exception", "no notification within the grace")
    # UTC to the second, as a spreadsheet reads a date and time.
    assert row["time"] == AN_HOUR_AGO.strftime("%Y-%m-%d %H:%M:%S")
    summary = csv.DictReader(
        io.StringIO(invoke(run, "report", "--format", "csv", "--section", "summary"))
    )
    figures = {r["figure"]: r["value"] for r in summary}
    assert (figures["exceptions"], figures["holdings"]) == ("3", "3")
    wrong = run.invoke(cli, ["report", "--section", "items"])
    assert wrong.exit_code == 2 and "for CSV only" in wrong.output
