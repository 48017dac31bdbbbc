"""The console names a holding as people know it, on every page, and finds it by what they type.

A holding reads as its account number and name (`1000000001 ADA OBI STORES`), its holdingRef
on hover and on its own page; one whose account is not known yet reads `ref 1a2b3c4d`. The
holdings search and the reports page take an account number, part of a name, or a holdingRef;
the reports page lists the holdings to pick from when none (or several) is named. Real app,
both databases.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from decimal import Decimal
from html import unescape
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from reconciliation import ReconcilePolicy, run_pass
from reconciliation.store.types import utcnow
from tests.integration.app.test_console import sign_in
from tests.integration.reconciliation.builders import Store

Client = Any


def _text(html: str) -> str:
    """What a person reads on the page: tags dropped, entities read, spaces collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_every_page_names_a_holding_by_its_account_with_its_ref_on_hover(
    client: Client, factory: sessionmaker[Session]
) -> None:
    store = Store(factory)
    ada = store.holding(name="ADA OBI STORES")
    unnamed = store.holding(locator=False)
    two_hours_ago = utcnow() - timedelta(hours=2)
    posting = store.posting(ada, 4_321_00, posted=two_hours_ago)  # never notified
    store.posting(unnamed, 1_00, posted=two_hours_ago)
    store.cursor(ada, errors=2)
    store.cursor(unnamed)
    run_pass(factory, ReconcilePolicy(), publish=False)
    sign_in(client)
    ref, short = str(ada.holding_ref), str(unnamed.holding_ref)[:8]
    label = f"{store.numbers[ada.id]} ADA OBI STORES"
    hover = f'title="holdingRef {ref}">{label}</a>'

    alerts = client.get("/console/alerts?kind=posting_without_notification").text
    assert f"credit of 4,321.00 NGN on holding {label} (receipt" in _text(alerts)
    assert ref not in alerts
    alert_id = re.search(r'href="/console/alerts/(\d+)"', alerts)
    assert alert_id is not None
    assert hover in client.get(f"/console/alerts/{alert_id.group(1)}").text

    queue = client.get("/console/exceptions?stream=posting").text
    assert hover in queue and f"ref {short}" in queue
    assert hover in client.get(f"/console/exceptions/posting/{posting.id}").text
    assert hover in client.get("/console").text  # the activity cursors, lagging first

    listed = client.get("/console/holdings").text
    assert f"{label}</a>" in listed and f"ref {short}</a>" in listed
    own = _text(client.get(f"/console/holdings/{ada.id}").text)
    assert f"Holding {label}" in own and f"holdingRef {ref}" in own


def test_the_holdings_search_and_the_reports_page_take_what_people_type(
    client: Client, factory: sessionmaker[Session]
) -> None:
    store = Store(factory)
    ada = store.holding(name="ADA OBI STORES")
    trading, foods = store.holding(name="Bola Trading"), store.holding(name="Bola Foods")
    store.posting(ada, 4_321_00, posted=utcnow() - timedelta(hours=2))
    store.posting(trading, 9_876_00, posted=utcnow() - timedelta(hours=2))
    sign_in(client)
    number, ref = store.numbers[ada.id], str(ada.holding_ref)
    label = f"{number} ADA OBI STORES"

    for asked in (number, "obi", ref, ref[:8]):
        found = _text(client.get("/console/holdings", params={"search": asked}).text)
        assert label in found and "Bola" not in found, asked
    both = _text(client.get("/console/holdings", params={"search": "BOLA"}).text)
    assert "Bola Trading" in both and "Bola Foods" in both and label not in both
    none = _text(client.get("/console/holdings", params={"search": "nobody"}).text)
    assert "No holding matches “nobody”" in none

    # No holding named: every holding to pick from, each a link to its report on the page.
    everyone = client.get("/console/reports").text
    assert '<div class="report">' not in everyone
    picks = re.findall(r'<a class="pick" href="([^"]+)">report for ([^<]+)</a>', everyone)
    assert {unescape(name) for _, name in picks} == {
        label,
        f"{store.numbers[trading.id]} Bola Trading",
        f"{store.numbers[foods.id]} Bola Foods",
    }
    chosen = next(unescape(href) for href, name in picks if unescape(name) == label)
    shown = client.get(chosen).text
    assert '<div class="report">' in shown and f", holding {label}" in unescape(shown)

    by_name = unescape(client.get("/console/reports", params={"holding": "obi stores"}).text)
    assert f", holding {label}" in by_name and "4,321.00 NGN" in by_name
    assert "9,876.00 NGN" not in by_name
    several = _text(client.get("/console/reports", params={"holding": "bola"}).text)
    assert "'bola' names 2 holdings: pick one below" in several
    assert "report for" in several and label not in several
    nobody = _text(client.get("/console/reports", params={"holding": "nobody"}).text)
    assert "no holding matches 'nobody'" in nobody and f"report for {label}" in nobody

    # The download takes the same words; its CSV is one row per item, in major units.
    download = client.get(
        "/console/reports/download",
        params={"format": "csv", "holding": number, "since": "2020-01-01"},
    )
    assert download.status_code == 200
    assert "-items.csv" not in download.headers["content-disposition"]
    [row] = list(csv.DictReader(io.StringIO(download.text)))
    assert (row["holding_account_number"], row["holding_name"], row["holding_ref"]) == (
        f'="{number}"',  # kept text by a spreadsheet (docs/reports.md)
        "ADA OBI STORES",
        ref,
    )
    assert Decimal(row["amount"]) == Decimal("4321.00")
    summary = client.get(
        "/console/reports/download", params={"format": "csv", "section": "summary"}
    )
    assert summary.text.splitlines()[0] == "figure,value,meaning,counts"
    assert "-summary.csv" in summary.headers["content-disposition"]
    wrong = client.get("/console/reports/download", params={"format": "csv", "section": "x"})
    assert wrong.status_code == 400 and "not one of summary, items" in wrong.text
