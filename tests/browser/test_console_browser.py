"""The operator console as a person uses it, in Chromium, over the demo's four faults.

One walk through: sign in, see the four injected faults on the alerts page, acknowledge one,
resolve another, accept the posting whose webhook was dropped without a counterpart (after
"Match by hand" with nothing ticked is refused) and see it leave the queue, replay the quarantined delivery, download a report, read the audit trail, sign out.
Every page is screenshotted (see conftest.py for where).
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from app.main import create_app
from foundation import load_settings
from reconciliation.store.db import make_engine, make_session_factory
from reconciliation.store.models import Alert, AuditEvent, Delivery, Match, Posting
from tests.browser.fault_scenario import build_fault_store
from tests.integration.app.receiver_helpers import ADMIN_TOKEN, ServedApp

NAME = "Ada Operator"


def _shot(page: Any, folder: Path, name: str) -> None:
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_operator_walks_through_the_four_faults(
    chromium: Any, screenshots: Path, base_env: dict[str, str], db_url: str
) -> None:
    build_fault_store(base_env, db_url)
    settings = load_settings(
        {
            **base_env,
            "DATABASE_URL": db_url,
            "RECON_ADMIN_TOKEN": ADMIN_TOKEN,
            "RECON_NOTIFICATION_GRACE_SECONDS": "1",
            "RECON_MATCH_WINDOW_SECONDS": "600",
        }
    )
    enqueued: list[int] = []
    engine = make_engine(db_url)
    sessions = make_session_factory(engine)
    with ServedApp(create_app(settings, enqueue=enqueued.extend, self_register=False)) as served:
        page = chromium.new_page(viewport={"width": 1360, "height": 900})
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
        # Anything the Content-Security-Policy blocked (an inline script, style or handler)
        # shows in the browser's console; the console page must have none.
        blocked: list[str] = []
        page.on(
            "console",
            lambda message: (
                blocked.append(message.text) if "Content Security Policy" in message.text else None
            ),
        )
        base = served.base_url

        # Sign in: the console sends a stranger to the sign-in form first.
        page.goto(f"{base}/console/alerts")
        assert "/console/sign-in" in page.url
        _shot(page, screenshots, "01-sign-in")
        page.fill("input[name=name]", NAME)
        page.fill("input[name=token]", ADMIN_TOKEN)
        page.click("button[type=submit]")
        assert page.url.endswith("/console/alerts")
        assert page.get_by_text(f"Signed in as {NAME}").is_visible()

        # The four faults, as alerts.
        for label in (
            "Posting without notification",
            "Amount mismatch",
            "Delivery body conflict",
            "Finality overdue",
        ):
            assert page.locator("table.alerts td", has_text=label).count() >= 1, label
        _shot(page, screenshots, "02-alerts")
        page.goto(f"{base}/console")
        _shot(page, screenshots, "03-overview")
        assert page.locator(".tile", has_text="quarantined deliveries").inner_text().startswith("1")

        # Acknowledge the amount mismatch, with its evidence side by side.
        page.goto(f"{base}/console/alerts")
        page.locator("tr", has_text="Amount mismatch").locator("a").first.click()
        assert page.locator(".side-by-side .card").count() >= 2
        _shot(page, screenshots, "04-alert-amount-mismatch")
        page.fill("form[action$=acknowledge] input[name=comment]", "Asking the provider about 0.01")
        page.click("form[action$=acknowledge] button")
        assert page.locator(".flash.done").inner_text().endswith("acknowledged.")
        assert page.locator("dl.facts .badge", has_text="Acknowledged").is_visible()

        # Resolve the stuck transfer.
        page.goto(f"{base}/console/alerts?kind=finality_overdue")
        page.locator("tr", has_text="Finality overdue").locator("a").first.click()
        page.fill("form[action$=resolve] input[name=comment]", "Rail confirmed settlement by phone")
        page.click("form[action$=resolve] button")
        assert page.locator(".flash.done").inner_text().endswith("resolved.")
        _shot(page, screenshots, "05-alert-resolved")

        # Match the posting whose webhook was dropped; it leaves the queue.
        with sessions() as s:
            silent = s.scalars(select(Posting).where(Posting.amount_minor == 700_000)).one()
        page.goto(f"{base}/console/exceptions?stream=posting")
        _shot(page, screenshots, "06-exceptions")
        row_link = page.locator(f"a[href='/console/exceptions/posting/{silent.id}']")
        assert row_link.count() == 1
        row_link.click()
        _shot(page, screenshots, "07-exception-item")
        assert page.get_by_role(
            "heading", name=f"Why is posting {silent.id} not matched?"
        ).is_visible(), page.content()[:3000]
        # "Match by hand" with no counterpart ticked is not a match: the console says which
        # decision that would be instead, and changes nothing.
        page.fill(".match-form input[name=reason]", "Provider confirmed the webhook was never sent")
        page.click(".match-form button[type=submit]")
        # A refused change is a page of its own naming the reason (never free text in a URL).
        assert "accept it without a counterpart" in page.locator("main.refusal").inner_text()
        with sessions() as s:
            assert s.scalars(select(Match).where(Match.posting_id == silent.id)).all() == []
        page.goto(f"{base}/console/exceptions/posting/{silent.id}")
        accept = page.locator("form[action$='/exceptions/accept']")
        accept.locator("input[name=reason]").fill("Provider confirmed the webhook was never sent")
        accept.locator("button[type=submit]").click()
        assert "Accepted without a counterpart" in page.locator(".flash.done").inner_text()
        assert page.locator(f"a[href='/console/exceptions/posting/{silent.id}']").count() == 0
        with sessions() as s:
            match = s.scalars(select(Match).where(Match.posting_id == silent.id)).one()
        assert (match.matched_by, match.rule) == (NAME, "accepted")

        # The quarantined delivery is the other body under a known id: replay cannot settle
        # it, so its page offers the choice of the true body instead.
        page.goto(f"{base}/console/deliveries?state=quarantined")
        _shot(page, screenshots, "08-deliveries")
        page.locator("table a").first.click()
        row_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
        assert page.locator("pre.raw").inner_text().startswith("{")
        assert page.locator("form[action$=replay]").count() == 0
        _shot(page, screenshots, "09-delivery")
        choose = page.locator("form[action$=choose]")
        choose.locator("input[name=reason]").fill("The provider says the second body is true")
        choose.locator("button[type=submit]").click()
        assert "now the true one" in page.locator(".flash.done").inner_text()
        _shot(page, screenshots, "09-delivery-chosen")
        with sessions() as s:
            chosen = s.get_one(Delivery, row_id)
            others = s.scalars(
                select(Delivery.state).where(
                    Delivery.delivery_id == chosen.delivery_id, Delivery.id != row_id
                )
            ).all()
            assert (chosen.state, list(others)) == ("processed", ["rejected"])
            conflict = s.scalars(select(Alert).where(Alert.kind == "delivery_body_conflict")).one()
            assert (conflict.state, conflict.resolved_by) == ("resolved", NAME)

        # A report: every holding as a file (the page says why it is not shown) and a list to
        # pick one from by its account; one holding's last day on the page, reached from the
        # list, from the holding's page, or by typing its account number.
        page.goto(f"{base}/console/reports")
        assert page.locator("div.report").count() == 0
        assert page.get_by_text(
            "Not shown on the page because it covers every holding"
        ).is_visible()
        _shot(page, screenshots, "10-reports-pick")
        first = page.locator("table.holdings-to-pick a.holding").first
        label = first.inner_text()
        assert re.fullmatch(r"\d{10} .+", label), label  # account number and name, no UUID
        assert (first.get_attribute("title") or "").startswith("holdingRef ")
        page.locator("a.pick").first.click()
        shown = page.locator("div.report").inner_text()
        assert f", holding {label}" in shown.splitlines()[0]
        assert page.locator("div.report table").count() > 3  # tables, not a text dump
        page.goto(f"{base}/console/reports")
        page.fill("input[name=holding]", label.split()[0])
        page.click("form.filters button:text-is('Show')")
        assert f", holding {label}" in page.locator("div.report").inner_text()
        page.goto(f"{base}/console/holdings")
        page.locator("table a.holding").first.click()
        page.click("a.button:text-is('Report for this holding, last day')")
        assert "/console/reports?holding=" in page.url
        shown = page.locator("div.report").inner_text()
        assert ", holding " in shown.splitlines()[0]
        # The page fits the screen: nothing of the report is off to the right.
        assert page.evaluate("document.documentElement.scrollWidth") <= 1360
        _shot(page, screenshots, "10-reports")
        # The one CSV button gives the section chosen, unmatched items unless another is picked.
        assert page.locator("select[name=section]").input_value() == "items"
        with page.expect_download() as download:
            page.click("button:text-is('Download CSV')")
        items = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
        for row in items:  # the CSV a spreadsheet opens: one row per item, major units
            assert Decimal(row["amount"]) * 10**2 == Decimal(row["amount_minor"])
            assert row["holding_ref"]
        page.select_option("select[name=section]", "summary")
        with page.expect_download() as download:
            page.click("button:text-is('Download CSV')")
        summary = Path(download.value.path()).read_text().splitlines()
        assert summary[0] == "figure,value,meaning,counts"

        # Holdings and the chart.
        page.goto(f"{base}/console/holdings")
        _shot(page, screenshots, "11-holdings")
        page.locator("table a.holding").first.click()
        assert re.match(r"Holding \d{10} ", page.locator("h1").inner_text())
        chart = page.locator("svg").first
        assert chart.is_visible()
        assert "No balance checks yet" not in page.inner_text("main")
        _shot(page, screenshots, "12-holding")

        # Everything done above is in the audit trail, by name, through the console.
        page.goto(f"{base}/console/audit")
        _shot(page, screenshots, "13-audit")
        with sessions() as s:
            actions = set(
                s.scalars(
                    select(AuditEvent.action).where(
                        AuditEvent.actor == NAME, AuditEvent.door == "console"
                    )
                )
            )
        assert {
            "signed in",
            "acknowledged alert",
            "resolved alert",
            "accepted without a counterpart",
            "chose the true body",
            "downloaded report",
        } <= actions

        # The console's one script runs under the policy: it asks before replaying them all.
        page.goto(f"{base}/console/deliveries")
        page.click("form[action$=replay-quarantined] button")
        assert dialogs == ["Put every quarantined delivery back in the inbox for processing?"]
        assert page.locator(".flash.done").count() == 1
        assert blocked == []

        # Sign out: the console is closed again.
        page.click("header form.who button")
        assert "/console/sign-in" in page.url
        page.goto(f"{base}/console")
        assert "/console/sign-in" in page.url
        with sessions() as s:
            assert s.scalar(
                select(AuditEvent.id).where(
                    AuditEvent.action == "signed out", AuditEvent.actor == NAME
                )
            )
        assert re.search(r"recon console", page.title())
    engine.dispose()
