"""Each alert's console page links its kind's runbook section, served by the console itself."""

from __future__ import annotations

import re
from typing import Any

from litestar.testing import TestClient
from sqlalchemy.orm import Session, sessionmaker

from tests.integration.app.test_console import open_alert, sign_in

Client = TestClient[Any]


def test_an_alerts_page_links_the_runbook_of_its_kind(
    client: Client, factory: sessionmaker[Session]
) -> None:
    alert_id = open_alert(factory)  # an amount_mismatch
    assert sign_in(client).status_code == 303
    alert_page = client.get(f"/console/alerts/{alert_id}").text
    [link] = re.findall(r'href="(/console/runbook/[^"]+)"', alert_page)
    assert link == "/console/runbook/amount_mismatch"

    runbook = client.get(link)
    assert runbook.status_code == 200
    assert "**Fires when**" in runbook.text and "recon unmatch" in runbook.text
    # Its own section only, from the repository's docs/alerts.md, escaped as text.
    assert (
        "## unit_mismatch" not in runbook.text and "Replaying the quarantined" not in runbook.text
    )
    assert "<script" not in runbook.text.split("<main>")[1]
    assert not re.search(r"""(src|href)\s*=\s*["']https?://""", runbook.text)


def test_the_runbook_knows_only_real_kinds_and_only_for_operators(client: Client) -> None:
    stranger = client.get("/console/runbook/amount_mismatch", follow_redirects=False)
    assert stranger.status_code == 303
    assert sign_in(client).status_code == 303
    assert client.get("/console/runbook/no_such_kind").status_code == 404
    assert client.get("/console/runbook/delivery_body_conflict").status_code == 200
    assert "recon deliveries choose" in client.get("/console/runbook/delivery_body_conflict").text


def test_the_alerts_page_refuses_a_kind_recon_never_raises(client: Client) -> None:
    assert sign_in(client).status_code == 303
    typo = client.get("/console/alerts", params={"kind": "amount-mismatch"})
    assert typo.status_code == 400
    assert "did you mean amount_mismatch?" in typo.text
    assert client.get("/console/alerts", params={"kind": "amount_mismatch"}).status_code == 200
