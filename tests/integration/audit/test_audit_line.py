"""The last ledger audit where people look: the reconciliation report (every format) and the
console's overview, before any audit ran, after a clean one, and after one that diverged.

The audits are real: the store is filled by the activity poller from the in-process sandbox,
`audit_ledger` re-reads it through the gateway client, and the report and the console (the app
through Litestar's TestClient, lifespan included) read the `audit_runs` row the audit left.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from html import unescape
from typing import Any

import pytest
from litestar.testing import TestClient
from sqlalchemy import delete, func, select

from app.main import create_app
from app.report_formats import FORMATS, render
from foundation import load_settings
from reconciliation.ledger_audit.compare import DIFFERS, MISSING, UNKNOWN
from reconciliation.ledger_audit.run import audit_ledger, fetch_from
from reconciliation.ledger_audit.summary import NEVER
from reconciliation.reports import ReportWindow, build_report
from reconciliation.store.models import Holding, Posting
from reconciliation.store.types import utcnow
from sandbox.variants import PRESETS
from tests.integration.app.receiver_helpers import ADMIN_TOKEN, SECRET
from tests.integration.workers.inprocess_sandbox import (
    InProcessSandbox,
    StepClock,
    inprocess_sandbox,
    read_until_caught_up,
    reader_settings,
)
from workers import Runtime, build_runtime, release_runtime
from workers.actors.holdings import discover

PAGE = 10
#: Postings the sandbox holds for each of the two holdings.
SIZES = (12, 7)


@pytest.fixture
def env(base_env: dict[str, str], db_url: str) -> dict[str, str]:
    return {**base_env, "DATABASE_URL": db_url}


@pytest.fixture
def polled(env: dict[str, str]) -> Iterator[Runtime]:
    """Two holdings read into the store by the real poller from the in-process sandbox."""
    with inprocess_sandbox(PRESETS["recon"]) as sandbox:
        rt = build_runtime(
            reader_settings(env, PAGE), transport=sandbox.transport, clock=StepClock()
        )
        try:
            _fill(rt, sandbox)
            yield rt
        finally:
            release_runtime(rt)


def _fill(rt: Runtime, sandbox: InProcessSandbox) -> None:
    sandbox.reset(PRESETS["recon"], seed=11)
    for size in SIZES:
        sandbox.add_postings(sandbox.new_holding(), [1] * size, anywhere_in_ties=False)
    discover(rt)
    with rt.sessions() as s:
        ids = list(s.scalars(select(Holding.id)))
    for holding_id in ids:
        read_until_caught_up(rt, holding_id, StepClock())


def _audit(rt: Runtime) -> str:
    return audit_ledger(rt.sessions, fetch_from(rt.gateway), page_size=PAGE).status


def _days(rt: Runtime) -> str:
    """The days the store's postings were posted on, as the audit line names them."""
    with rt.sessions() as s:
        first, last = s.execute(
            select(func.min(Posting.posted_at), func.max(Posting.posted_at))
        ).one()
    count = (last.date() - first.date()).days + 1
    if count == 1:
        return f"1 day ({first.date().isoformat()})"
    return f"{count} days ({first.date().isoformat()} to {last.date().isoformat()})"


def _lose_one_posting(rt: Runtime) -> None:
    with rt.sessions.begin() as s:
        first = s.scalars(select(Posting.id).order_by(Posting.id).limit(1)).one()
        s.execute(delete(Posting).where(Posting.id == first))


def _rendered(rt: Runtime) -> dict[str, str]:
    with rt.sessions() as s:
        report = build_report(s, ReportWindow(until=utcnow()))
    return {fmt: render(report, fmt) for fmt in FORMATS} | {
        "csv_audit": render(report, "csv", section="audit")
    }


def _said(rendered: dict[str, str]) -> dict[str, Any]:
    """What each format says about the last audit."""
    rows = csv.DictReader(io.StringIO(rendered["csv_audit"]))
    audit_rows = {r["metric"]: r["value"] for r in rows}
    html = re.search(r'<p class="audit( alarm)?">([^<]*)</p>', rendered["html"])
    assert html is not None, "the HTML report has no audit paragraph"
    return {
        "text": next(
            line for line in rendered["text"].splitlines() if line.startswith("last audit:")
        ),
        "json": json.loads(rendered["json"])["lastAudit"],
        "csv": audit_rows,
        "html": unescape(html.group(2)),
        "html_alarm": bool(html.group(1)),
    }


def test_every_report_format_says_what_the_last_audit_found(polled: Runtime) -> None:
    never = _said(_rendered(polled))
    assert never["text"] == NEVER
    assert never["json"] == {"line": NEVER, "run": None}
    assert never["csv"] == {"line": NEVER}
    assert never["html"] == NEVER + "." and not never["html_alarm"]

    days = _days(polled)
    assert _audit(polled) == "clean"
    clean = _said(_rendered(polled))
    line = f"last audit: clean, 2 holdings, {sum(SIZES)} postings over {days}"
    assert clean["text"].startswith(line + "; finished ")
    assert clean["json"]["line"] == clean["json"]["run"]["line"]
    assert clean["json"]["line"].startswith(line + "; finished ")
    assert clean["json"]["run"]["status"] == "clean"
    assert clean["csv"]["line"] == clean["json"]["line"] and clean["csv"]["status"] == "clean"
    assert clean["csv"]["postings"] == str(sum(SIZES))
    assert clean["json"]["run"]["firstDay"] == clean["csv"]["first_day"] != ""
    assert clean["json"]["run"]["lastDay"] == clean["csv"]["last_day"] != ""
    assert clean["html"].startswith(line + "; finished ") and not clean["html_alarm"]

    _lose_one_posting(polled)
    assert _audit(polled) == "diverged"
    diverged = _said(_rendered(polled))
    line = (
        "last audit: 1 divergence (1 missing, 0 unknown, 0 differing), "
        f"2 holdings, {sum(SIZES)} postings over {days}"
    )
    assert diverged["text"].startswith(line + "; finished ")
    assert diverged["json"]["run"]["missing"] == 1
    assert diverged["json"]["line"].startswith(line + "; finished ")
    assert diverged["json"]["run"]["run"] > clean["json"]["run"]["run"]
    assert (diverged["csv"]["status"], diverged["csv"]["missing"]) == ("diverged", "1")
    assert diverged["html"].startswith(line) and diverged["html_alarm"]


def test_the_audit_line_says_when_and_which_holdings_it_did_not_read(
    env: dict[str, str], console: TestClient[Any]
) -> None:
    """A clean audit proves the books as they were when it ran: every format says when it
    finished, and a holding discovered after it is named as not covered ("2 of 3 holdings"),
    rather than "clean, 2 holdings" heading a report of three."""
    with inprocess_sandbox(PRESETS["recon"]) as sandbox:
        rt = build_runtime(
            reader_settings(env, PAGE), transport=sandbox.transport, clock=StepClock()
        )
        try:
            _fill(rt, sandbox)
            assert _audit(rt) == "clean"
            sandbox.add_postings(sandbox.new_holding(), [1] * 3, anywhere_in_ties=False)
            discover(rt)
            said = _said(_rendered(rt))
        finally:
            release_runtime(rt)
    covered = re.compile(
        r"^last audit: clean, 2 of 3 holdings, \d+ postings over .*; "
        r"finished \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; 1 holding watched now not covered"
    )
    for line in (said["text"], said["json"]["line"], said["csv"]["line"], said["html"]):
        assert covered.match(line), line
    assert said["json"]["run"]["holdingsNotCovered"] == 1
    _, tile = _tile(console)
    assert "2 of 3 holdings" in _words(tile)


def _signed_in(env: dict[str, str]) -> Iterator[TestClient[Any]]:
    settings = load_settings(
        {**env, "RECON_WEBHOOK_SECRETS": SECRET, "RECON_ADMIN_TOKEN": ADMIN_TOKEN}
    )
    with TestClient(create_app(settings, enqueue=None, self_register=False)) as client:
        form = client.get("/console/sign-in").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        answer = client.post(
            "/console/sign-in",
            data={"csrf_token": token.group(1), "name": "Ada", "token": ADMIN_TOKEN, "next": ""},
            follow_redirects=False,
        )
        assert answer.status_code == 303
        yield client


@pytest.fixture
def console(env: dict[str, str]) -> Iterator[TestClient[Any]]:
    yield from _signed_in(env)


def _tile(console: TestClient[Any]) -> tuple[str, str]:
    """The overview's audit tile: its class and its text (tags dropped, spaces squeezed)."""
    page = console.get("/console")
    assert page.status_code == 200
    tile = re.search(r'<div class="tile ?(\w*)" id="last-audit">(.*?)</div>', page.text, re.S)
    assert tile is not None, "the overview has no audit tile"
    return tile.group(1), tile.group(2)


def _words(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_the_console_overview_shows_the_last_audit_and_links_to_its_alerts(
    polled: Runtime, console: TestClient[Any]
) -> None:
    kind, tile = _tile(console)
    assert kind == ""
    assert _words(tile).startswith("none yet last ledger audit run recon audit")

    assert _audit(polled) == "clean"
    kind, tile = _tile(console)
    assert kind == ""
    assert _words(tile).startswith("clean last ledger audit")
    assert f"2 holdings, {sum(SIZES)} postings over {_days(polled)}" in _words(tile)

    _lose_one_posting(polled)
    assert _audit(polled) == "diverged"
    kind, tile = _tile(console)
    assert kind == "bad"
    assert _words(tile).startswith("1 divergence last ledger audit")
    links = dict(re.findall(r'<a href="([^"]+)">([^<]+)</a>', tile))
    assert links == {
        f"/console/alerts?kind={MISSING}": "1 missing",
        f"/console/alerts?kind={UNKNOWN}": "0 unknown",
        f"/console/alerts?kind={DIFFERS}": "0 differing",
    }
    # The link leads to the alert the audit raised, and to nothing else.
    assert len(_alert_ids(console, MISSING)) == 1
    assert _alert_ids(console, UNKNOWN) == set()


def _alert_ids(console: TestClient[Any], kind: str) -> set[str]:
    """The alerts the alerts page lists under one kind."""
    page = console.get(f"/console/alerts?kind={kind}")
    assert page.status_code == 200
    return set(re.findall(r'href="/console/alerts/(\d+)"', page.text))


@pytest.fixture
def nothing_known(env: dict[str, str]) -> Iterator[Runtime]:
    """The runtime of a store no holding has reached yet (the processes just started)."""
    with inprocess_sandbox(PRESETS["recon"]) as sandbox:
        rt = build_runtime(
            reader_settings(env, PAGE), transport=sandbox.transport, clock=StepClock()
        )
        try:
            sandbox.reset(PRESETS["recon"], seed=11)
            yield rt
        finally:
            release_runtime(rt)


def test_an_audit_of_no_holding_is_none_yet_everywhere(
    nothing_known: Runtime, console: TestClient[Any]
) -> None:
    """An audit that ran before any holding was known proved nothing: every report format and
    the console still say that no audit has run, not "clean, 0 holdings, 0 postings"."""
    assert _audit(nothing_known) == "clean"  # it ran, over nothing

    said = _said(_rendered(nothing_known))
    assert said["text"] == NEVER
    assert said["json"] == {"line": NEVER, "run": None}
    assert said["csv"] == {"line": NEVER}
    assert said["html"] == NEVER + "."
    kind, tile = _tile(console)
    assert kind == "" and _words(tile).startswith("none yet last ledger audit")
