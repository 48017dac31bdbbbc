"""The operator console without a browser: sign-in cookie, CSRF refusal, audit rows, bounds,
and the reports page bounded to one holding. The exception queue against the report is
tests/integration/app/test_console_queue.py.

Runs the real app (TestClient, lifespan included) on both databases. The browser walk through
the demo's faults is tests/browser/test_console_browser.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from litestar.testing import TestClient
from sqlalchemy import event, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from foundation import Settings, load_settings
from reconciliation import ReconcilePolicy, run_pass
from reconciliation.alerts.lifecycle import raise_alert
from reconciliation.notifications.inbox import InboundDelivery, record_deliveries
from reconciliation.store.db import transaction
from reconciliation.store.models import Alert, AuditEvent, Delivery, Transfer
from reconciliation.store.types import utcnow
from tests.integration.app.receiver_helpers import ADMIN_TOKEN, wait_for
from tests.integration.reconciliation.builders import Store, at

Client = TestClient[Any]


def sign_in(client: Client, name: str = "Grace", token: str = ADMIN_TOKEN) -> Any:
    form = client.get("/console/sign-in")
    signin = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert signin is not None
    return client.post(
        "/console/sign-in",
        data={"csrf_token": signin.group(1), "name": name, "token": token, "next": ""},
        follow_redirects=False,
    )


def csrf_of(client: Client, path: str = "/console") -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text)
    assert found is not None
    return found.group(1)


def open_alert(factory: sessionmaker[Session], n: int = 0) -> int:
    with transaction(factory) as session:
        alert = raise_alert(
            session,
            kind="amount_mismatch",
            severity="high",
            subject=f"test alert {n}",
            fingerprint=f"console-test:{n}",
            evidence={"n": n},
        )
        return alert.id


def audit_rows(factory: sessionmaker[Session]) -> list[tuple[str, str, str, str | None]]:
    with factory() as s:
        return [
            (e.actor, e.action, e.subject, e.reason)
            for e in s.scalars(select(AuditEvent).order_by(AuditEvent.id))
        ]


def test_a_stranger_is_sent_to_sign_in_and_a_wrong_token_gets_no_cookie(client: Client) -> None:
    answer = client.get("/console/alerts", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/console/sign-in?next=/console/alerts"
    refused = sign_in(client, token="not-the-token")
    assert refused.status_code == 401
    assert not [c for c in refused.headers.get_list("set-cookie") if c.startswith("recon_console=")]
    assert client.get("/console", follow_redirects=False).status_code == 303


def test_the_session_cookie_is_httponly_strict_and_scoped(client: Client) -> None:
    answer = sign_in(client)
    assert answer.status_code == 303
    cookie = next(
        c for c in answer.headers.get_list("set-cookie") if c.startswith("recon_console=")
    )
    flags = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/console"} <= flags
    assert "secure" not in flags  # RECON_PUBLIC_URL is http in this environment
    assert client.get("/console").status_code == 200


def test_the_cookie_is_secure_when_the_public_url_is_https(recon_env: dict[str, str]) -> None:
    settings = load_settings({**recon_env, "RECON_PUBLIC_URL": "https://recon.test"})
    app = create_app(settings, enqueue=None, self_register=False)
    # Secure cookies come back only over https, so the client speaks https too.
    with TestClient(app, base_url="https://testserver.local") as client:
        cookie = next(
            c
            for c in sign_in(client).headers.get_list("set-cookie")
            if c.startswith("recon_console=")
        )
        assert "secure" in {part.strip().lower() for part in cookie.split(";")[1:]}
        assert client.get("/console").status_code == 200


def test_a_post_without_the_sessions_csrf_token_changes_nothing(
    client: Client,
    factory: sessionmaker[Session],
    make_client: Callable[..., Client],
    settings: Settings,
) -> None:
    alert_id = open_alert(factory)
    sign_in(client)
    other = make_client(settings)
    sign_in(other, name="Mallory")
    stolen = csrf_of(other)
    for form in ({"comment": "no token"}, {"comment": "other's token", "csrf_token": stolen}):
        answer = client.post(
            f"/console/alerts/{alert_id}/acknowledge", data=form, follow_redirects=False
        )
        assert answer.status_code == 403
        assert "CSRF" in answer.text
    with factory() as s:
        assert s.get_one(Alert, alert_id).state == "open"
    assert [row[1] for row in audit_rows(factory)] == ["signed in", "signed in"]


def test_every_action_leaves_an_audit_row_with_who_what_and_why(
    client: Client, factory: sessionmaker[Session], enqueued: list[int]
) -> None:
    first, second = open_alert(factory, 1), open_alert(factory, 2)
    with transaction(factory) as session:
        body = b'{"id":"e1","event":"PAYMENT_RECEIVED"}'
        recorded = record_deliveries(
            session.connection(),
            [
                InboundDelivery(
                    "d-1",
                    body,
                    {"webhook-id": "d-1"},
                    "standard",
                    "PAYMENT_RECEIVED",
                    utcnow(),
                    "unparseable",
                ),
            ],
        )
    row_id = recorded[0].row_id
    assert row_id is not None
    sign_in(client, name="Grace")
    token = csrf_of(client)

    def post(path: str, **form: str) -> Any:
        return client.post(path, data={"csrf_token": token, **form}, follow_redirects=False)

    assert post(f"/console/alerts/{first}/acknowledge", comment="looking").status_code == 303
    assert post(f"/console/alerts/{second}/resolve", comment="known cause").status_code == 303
    refused = post(f"/console/alerts/{second}/acknowledge", comment="too late")
    assert refused.status_code == 400
    assert "already resolved" in refused.text
    assert post(f"/console/deliveries/{row_id}/replay").status_code == 303
    assert client.get("/console/reports/download?format=json").status_code == 200
    assert post("/console/sign-out").status_code == 303

    # The relay hands row ids to `enqueue` on its own thread, after the commit.
    wait_for(lambda: enqueued == [row_id] or None, what="the replayed row to be enqueued")
    with factory() as s:
        assert s.get_one(Delivery, row_id).state == "pending"
        acknowledged = s.get_one(Alert, first)
        assert (acknowledged.acknowledged_by, acknowledged.note) == ("Grace", "looking")
    rows = audit_rows(factory)
    assert [r[:3] for r in rows] == [
        ("Grace", "signed in", "console"),
        ("Grace", "acknowledged alert", f"alert {first}"),
        ("Grace", "resolved alert", f"alert {second}"),
        ("Grace", "replayed delivery", f"delivery {row_id}"),
        ("Grace", "downloaded report", "report json since the start until now"),
        ("Grace", "signed out", "console"),
    ]
    assert rows[1][3] == "looking" and rows[2][3] == "known cause"
    # Signed out: the old cookie is gone from the client, the console is closed again.
    assert client.get("/console", follow_redirects=False).status_code == 303


@contextmanager
def statements(factory: sessionmaker[Session]) -> Iterator[list[tuple[str, Any]]]:
    """Every SQL statement the app's engine runs meanwhile, with its parameters."""
    seen: list[tuple[str, Any]] = []
    engine = factory.kw["bind"]

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def rows_returned(factory: sessionmaker[Session], statement: str, parameters: Any) -> int:
    """How many rows `statement` returns with `parameters`, counted by the database."""
    connection = factory.kw["bind"].raw_connection()
    try:
        cursor = connection.cursor()
        cursor.execute(f"SELECT count(*) FROM ({statement}) AS counted", parameters)
        return int(cursor.fetchone()[0])
    finally:
        connection.close()


#: Rows of each kind the store holds for the pages below: more than any page may read.
HELD = 200
#: The most rows one statement of a page may return: the longest list a page reads (the
#: reports page's hundred items) and the one that says whether there is more; under HELD.
READ_ROWS = 101
#: The most table rows a page may draw.
DRAWN_ROWS = 60


def test_every_page_reads_a_bounded_amount_whatever_the_store_holds(
    client: Client, factory: sessionmaker[Session]
) -> None:
    """With more postings, alerts and deliveries than a page shows, no statement a page runs
    returns more than the longest list a page reads (each is counted again by the database afterwards, so an
    aggregate per row or a query without a LIMIT is caught by what it returns, not by how its
    SQL looks), and no page draws more than a page of rows."""
    store = Store(factory)
    holding = store.holding()
    for n in range(HELD):
        store.posting(holding, 1_000 + n, posted=at(n))
        open_alert(factory, n)
    with transaction(factory) as session:
        record_deliveries(
            session.connection(),
            [
                InboundDelivery(f"q-{n}", b"{}", {}, "standard", None, utcnow(), "unparseable")
                for n in range(HELD)
            ],
        )
    sign_in(client)
    pages = [
        "/console",
        "/console/alerts",
        "/console/alerts?state=",
        "/console/exceptions",
        "/console/deliveries",
        "/console/deliveries?state=quarantined",
        "/console/exceptions?stream=posting&age=over+30&cursor=3",
        "/console/holdings",
        f"/console/holdings/{holding.id}",
        "/console/reports",
        f"/console/reports?holding={holding.holding_ref}&since=2026-11-20",
        "/console/audit",
    ]
    for path in pages:
        with statements(factory) as seen:
            answer = client.get(path)
        assert answer.status_code == 200, path
        # The receiver's signing keys are re-read every 5 s on their own thread (a handful of
        # rows); a page that takes a moment on a loaded machine may see that read too.
        reads = [
            (sql, parameters)
            for sql, parameters in seen
            if sql.lstrip().upper().startswith("SELECT") and "FROM webhook_secrets" not in sql
        ]
        assert reads, f"{path} read nothing: the statements were not seen"
        returned = {sql: rows_returned(factory, sql, parameters) for sql, parameters in reads}
        unbounded = {sql: n for sql, n in returned.items() if n > READ_ROWS}
        assert unbounded == {}, f"{path} read more than a page: {unbounded}"
        drawn = answer.text.count("<tr")
        assert drawn <= DRAWN_ROWS, f"{path} drew {drawn} rows"
    # The lists page on: the alerts, postings and deliveries are not drawn at once.
    assert "Older alerts" in client.get("/console/alerts").text
    assert "Older postings" in client.get(f"/console/holdings/{holding.id}").text
    assert "Older deliveries" in client.get("/console/deliveries").text


def test_replay_all_puts_every_quarantined_delivery_back_and_says_which(
    client: Client, factory: sessionmaker[Session], enqueued: list[int]
) -> None:
    with transaction(factory) as session:
        recorded = record_deliveries(
            session.connection(),
            [
                InboundDelivery(f"bad-{n}", b"{", {}, "standard", None, utcnow(), "unparseable")
                for n in range(3)
            ],
        )
    ids = sorted(r.row_id for r in recorded if r.row_id is not None)
    sign_in(client, name="Grace")
    answer = client.post(
        "/console/deliveries/replay-quarantined",
        data={"csrf_token": csrf_of(client)},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    wait_for(lambda: sorted(enqueued) == ids or None, what="the replayed rows to be enqueued")
    with factory() as s:
        assert {s.get_one(Delivery, i).state for i in ids} == {"pending"}
    actor, action, subject, reason = audit_rows(factory)[-1]
    assert (actor, action, subject) == (
        "Grace",
        "replayed quarantined deliveries",
        "3 quarantined deliveries",
    )
    assert reason == "rows " + ", ".join(str(i) for i in ids)


def test_the_reports_page_shows_one_holding_and_offers_the_rest_as_downloads(
    client: Client, factory: sessionmaker[Session]
) -> None:
    store = Store(factory)
    holding, other = store.holding(), store.holding()
    store.posting(holding, 4_321_00, posted=utcnow() - timedelta(hours=2))
    store.posting(other, 9_876_00, posted=utcnow() - timedelta(hours=2))
    sign_in(client)

    everyone = client.get("/console/reports").text
    assert '<div class="report">' not in everyone
    assert "Not shown on the page because it covers every holding" in everyone
    # One CSV button, and the section it gives is the one chosen: unmatched items.
    assert everyone.count("Download CSV") == 1 and "format=csv&" not in everyone
    assert '<option value="items" selected>Unmatched items, one row per item</option>' in everyone
    # "Since" as a person types it, and the page takes it back as typed.
    since = re.search(r'name="since" value="([^"]+)"', everyone)
    assert since is not None and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\dZ", since.group(1))
    again = client.get("/console/reports", params={"since": since.group(1)})
    assert again.status_code == 200

    mine = client.get(f"/console/reports?holding={holding.holding_ref}").text
    # The report as tables in the page's own style, not a text dump in a dark box.
    assert '<div class="report">' in mine and '<pre class="report">' not in mine
    assert "<table>" in mine.split('<div class="report">')[1]
    assert "4,321.00 NGN" in mine and "9,876.00 NGN" not in mine

    month = client.get(f"/console/reports?holding={holding.holding_ref}&since=2026-01-01").text
    assert '<div class="report">' not in month
    assert "its window is longer than 8 days" in month

    unknown = client.get("/console/reports?holding=not-a-holding")
    assert unknown.status_code == 200 and "no holding matches" in unknown.text


def test_the_holding_and_reports_pages_show_fees_by_kind_and_bearer(
    client: Client, factory: sessionmaker[Session]
) -> None:
    store = Store(factory)
    source, dest = store.holding(), store.holding()
    two_hours_ago = utcnow() - timedelta(hours=2)
    charged = [("sender_pays", 2_500), ("sender_pays", 1_500), ("split", 700)]
    for bearer, fee in charged:
        transfer = store.transfer(source, dest, 100_000, requested=two_hours_ago)
        with factory.begin() as s:
            s.execute(
                update(Transfer)
                .where(Transfer.id == transfer.id)
                .values(fee_charged_minor=fee, fee_bearer=bearer, fee_kind="application_fee")
            )
    in_flight = store.transfer(source, dest, 100_000, status="awaiting_finality")
    with factory.begin() as s:
        s.execute(
            update(Transfer).where(Transfer.id == in_flight.id).values(fee_charged_minor=9_999)
        )
    sign_in(client)

    page = client.get(f"/console/holdings/{source.id}").text
    assert "Fees of its settled transfers" in page
    assert "40.00 NGN" in page and "7.00 NGN" in page and "99.99 NGN" not in page
    assert "Sender pays" in page and "Split" in page

    report = client.get(f"/console/reports?holding={source.holding_ref}").text
    assert "Fees of settled transfers, by kind and bearer" in report
    assert "sender_pays" in report and "40.00 NGN" in report

    other = client.get(f"/console/holdings/{dest.id}").text
    assert "No fee charged on a settled transfer from this holding" in other


def test_a_fee_mismatch_shows_the_transfer_with_both_fees(
    client: Client, factory: sessionmaker[Session]
) -> None:
    store = Store(factory)
    source, dest = store.holding(locator=False), store.holding()
    transfer = store.transfer(source, dest, 100_000, requested=at(0))
    with factory.begin() as s:
        s.execute(
            update(Transfer)
            .where(Transfer.id == transfer.id)
            .values(fee_charged_minor=3_000, fee_quoted_minor=2_500, fee_bearer="sender_pays")
        )
    run_pass(factory, ReconcilePolicy(notification_grace_seconds=300), now=at(60), publish=False)
    with factory() as s:
        alert = s.scalars(select(Alert).where(Alert.kind == "fee_mismatch")).one()
    sign_in(client)

    listed = client.get("/console/alerts?kind=fee_mismatch").text
    assert "Fee mismatch" in listed
    page = client.get(f"/console/alerts/{alert.id}").text
    assert "was charged a fee of 30.00 NGN, its accepted quote said 25.00 NGN" in page
    assert "fee 30.00 NGN (sender_pays)" in page
    assert str(transfer.transfer_ref) in page


#: Past what a database row id can be (a signed 64-bit integer): the driver cannot bind it.
HUGE = 2**64 + 1


@pytest.mark.parametrize(
    "path",
    [
        f"/console/alerts/{HUGE}",
        f"/console/holdings/{HUGE}",
        f"/console/exceptions/posting/{HUGE}",
        f"/console/deliveries/{HUGE}",
    ],
)
def test_a_page_for_an_id_no_row_can_have_is_not_found(client: Client, path: str) -> None:
    sign_in(client)
    answer = client.get(path)
    assert answer.status_code in (400, 404), answer.text
    assert "Internal" not in answer.text


@pytest.mark.parametrize(
    "path",
    [f"/console/alerts/{HUGE}/acknowledge", f"/console/deliveries/{HUGE}/replay"],
)
def test_an_action_on_an_id_no_row_can_have_changes_nothing_and_says_so(
    client: Client, factory: sessionmaker[Session], enqueued: list[int], path: str
) -> None:
    """An id past any row's (2**64 + 1: 1 again, were it cut to 64 bits) is refused on the
    console's own page naming the request, and the rows an id cut short would name stay as
    they were: the alert open, the delivery quarantined and not sent again, no audit row."""
    alert_id = open_alert(factory)
    with transaction(factory) as session:
        [recorded] = record_deliveries(
            session.connection(),
            [InboundDelivery("bad", b"{", {}, "standard", None, utcnow(), "unparseable")],
        )
    sign_in(client)
    answer = client.post(path, data={"csrf_token": csrf_of(client), "comment": "checked"})
    assert answer.status_code == 400, answer.text
    refusal = re.sub(r"\s+", " ", answer.text)
    assert '<main class="refusal">' in refusal and f"POST {path}" in refusal, refusal
    assert "Internal" not in refusal
    with factory() as s:
        assert s.get_one(Alert, alert_id).state == "open"
        assert s.get_one(Delivery, recorded.row_id).state == "quarantined"
    assert enqueued == []
    assert [row[1] for row in audit_rows(factory)] == ["signed in"]


@pytest.mark.parametrize("action", ["ack", "resolve"])
def test_the_alert_api_refuses_an_id_no_row_can_have(client: Client, action: str) -> None:
    answer = client.post(
        f"/alerts/{HUGE}/{action}",
        json={"by": "Grace", "note": "n"},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    assert answer.status_code in (400, 404), answer.text


def test_the_alerts_page_takes_state_all_as_the_cli_does(
    client: Client, factory: sessionmaker[Session]
) -> None:
    """`recon alerts list --state all` has a console twin: `?state=all` lists alerts in every
    state (it was a bare 400), and the state picker's "Any" sends it."""
    kept, settled = open_alert(factory, 1), open_alert(factory, 2)
    sign_in(client)
    token = csrf_of(client)
    resolved = client.post(
        f"/console/alerts/{settled}/resolve",
        data={"csrf_token": token, "comment": "known cause"},
        follow_redirects=False,
    )
    assert resolved.status_code == 303
    listed = client.get("/console/alerts?state=all")
    assert listed.status_code == 200, listed.text
    shown = set(re.findall(r'href="/console/alerts/(\d+)"', listed.text))
    assert {str(kept), str(settled)} <= shown
    assert '<option value="all" selected>Any</option>' in listed.text
    active = client.get("/console/alerts").text
    assert str(settled) not in set(re.findall(r'href="/console/alerts/(\d+)"', active))
    assert (
        "is not one of active, open, acknowledged, resolved, all"
        in client.get("/console/alerts?state=gone").text
    )


def test_every_console_page_names_recon_s_own_icon(client: Client) -> None:
    """A tab shows recon's icon, served by recon itself (no request to /favicon.ico that
    answers 404, no asset from elsewhere)."""
    link = '<link rel="icon" href="/console/static/favicon.svg" type="image/svg+xml">'
    assert link in client.get("/console/sign-in").text
    sign_in(client)
    assert link in client.get("/console").text
    assert link in client.get("/console/alerts?state=gone").text  # a refusal page too
    icon = client.get("/console/static/favicon.svg")
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.text.startswith("<svg")


def test_a_matched_item_s_page_says_so_and_lists_its_partner_not_unrelated_matches(
    client: Client, factory: sessionmaker[Session]
) -> None:
    """A matched posting's page is titled as matched, and names its own counterpart as its
    partner ("matched with it"), not as "already matched" elsewhere; counterparts near its time
    that are matched to other items and share no reference are counted, not listed."""
    from reconciliation import ReconcilePolicy, run_pass
    from reconciliation.store.models import Match
    from tests.integration.reconciliation.builders import Store, at

    store = Store(factory)
    holding = store.holding()
    pairs = []
    for n in range(4):
        posting = store.posting(holding, 1_000 + n, posted=at(n))
        note = store.notification(
            "PAYMENT_RECEIVED", holding, 1_000 + n, receipt=posting.receipt_ref, occurred=at(n)
        )
        pairs.append((posting.id, note.id))
    alone = store.posting(holding, 7_777, posted=at(2))
    run_pass(factory, ReconcilePolicy(notification_grace_seconds=300), now=at(60), publish=False)
    posting_id, note_id = pairs[0]
    with factory() as s:
        match_id = s.scalars(select(Match.id).where(Match.posting_id == posting_id)).one()
    sign_in(client)

    matched = client.get(f"/console/exceptions/posting/{posting_id}").text
    assert f"Posting {posting_id} is matched</h1>" in matched
    assert "not matched?" not in matched
    assert f"matched with it (match {match_id})" in matched
    assert f'href="/console/exceptions/notification/{note_id}"' in matched
    assert "already matched (match" not in matched
    assert "3 more near its time are already matched to other items" in matched

    lonely = client.get(f"/console/exceptions/posting/{alone.id}").text
    assert f"Why is posting {alone.id} not matched?" in lonely
    assert "already matched (match" not in lonely
    assert "4 more near its time are already matched to other items" in lonely
