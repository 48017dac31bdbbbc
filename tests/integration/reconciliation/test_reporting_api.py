"""The reports and alerts API inside the real app (admin token), over the ASGI test client."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from foundation import load_settings
from reconciliation.alerts.lifecycle import raise_alert
from tests.integration.reconciliation.builders import Store

TOKEN = "reporting-api-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(base_env: dict[str, str], db_url: str) -> Iterator[TestClient[Litestar]]:
    settings = load_settings({**base_env, "DATABASE_URL": db_url, "RECON_ADMIN_TOKEN": TOKEN})
    app = create_app(settings, enqueue=lambda ids: None, self_register=False)
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def factory(client: TestClient[Litestar]) -> sessionmaker[Session]:
    found: sessionmaker[Session] = client.app.state["session_factory"]
    return found


def test_every_route_wants_the_admin_token(client: TestClient[Litestar]) -> None:
    for method, path in (
        ("GET", "/reports/reconciliation"),
        ("GET", "/alerts"),
        ("POST", "/alerts/1/ack"),
        ("POST", "/alerts/1/resolve"),
    ):
        response = client.request(method, path, json={"by": "x"})
        assert response.status_code == 401, path
        wrong = client.request(
            method, path, json={"by": "x"}, headers={"Authorization": "Bearer no"}
        )
        assert wrong.status_code == 401, path


def test_report_in_every_format(
    client: TestClient[Litestar], factory: sessionmaker[Session]
) -> None:
    store = Store(factory)
    holding = store.holding()
    store.posting(holding, 1_500)
    for fmt, media in (
        ("json", "application/json"),
        ("csv", "text/csv"),
        ("text", "text/plain"),
        ("html", "text/html"),
    ):
        response = client.get("/reports/reconciliation", params={"format": fmt}, headers=AUTH)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith(media)
    data = client.get(
        "/reports/reconciliation",
        params={
            "holding": str(holding.holding_ref),
            "since": "2020-01-01",
            "until": "2030-01-01T00:00:00Z",
        },
        headers=AUTH,
    ).json()
    assert data["window"]["holdingRef"] == str(holding.holding_ref)
    assert [t["creditsMinor"] for t in data["totals"]] == ["1500"]
    html = client.get("/reports/reconciliation", params={"format": "html"}, headers=AUTH).text
    assert not re.search(r"https?://", html)


def test_report_input_errors_say_what_to_fix(client: TestClient[Litestar]) -> None:
    for params, message in (
        ({"format": "pdf"}, "not one of"),
        ({"since": "yesterday"}, "not a date or time"),
        ({"until": "2026-01-01T10:00:00"}, "no time zone"),
        ({"holding": "abc"}, "no holding matches 'abc'"),
        ({"format": "text", "section": "items"}, "for CSV only"),
        ({"format": "csv", "section": "everything"}, "not one of summary, items"),
    ):
        response = client.get("/reports/reconciliation", params=params, headers=AUTH)
        assert response.status_code == 400
        assert message in response.text


def test_report_finds_a_holding_by_account_number_name_or_reference(
    client: TestClient[Litestar], factory: sessionmaker[Session]
) -> None:
    store = Store(factory)
    ada = store.holding(name="ADA OBI STORES")
    store.holding(name="Bola Trading")
    store.holding(name="Bola Foods")
    store.posting(ada, 2_500)
    ref, number = str(ada.holding_ref), store.numbers[ada.id]

    def scope(holding: str) -> dict[str, str]:
        response = client.get("/reports/reconciliation", params={"holding": holding}, headers=AUTH)
        assert response.status_code == 200, (holding, response.text)
        window: dict[str, str] = response.json()["window"]
        return {k: v for k, v in window.items() if k not in ("since", "until")}

    for asked in (number, "obi stores", ref, ref.upper(), ref[:8], f"ref {ref[:8]}"):
        assert scope(asked) == {
            "holdingRef": ref,
            "accountNumber": number,
            "accountName": "ADA OBI STORES",
        }, asked
    assert scope(f"{number} ADA OBI STORES")["holdingRef"] == ref  # a label pasted from a report

    ambiguous = client.get("/reports/reconciliation", params={"holding": "bola"}, headers=AUTH)
    assert ambiguous.status_code == 400
    assert "'bola' matches 2 holdings" in ambiguous.text
    assert "Bola Trading" in ambiguous.text and "Bola Foods" in ambiguous.text

    items = client.get(
        "/reports/reconciliation",
        params={"format": "csv", "holding": number, "since": "2020-01-01"},
        headers=AUTH,
    ).text
    header, row = items.splitlines()
    assert header.startswith("kind,id,holding_account_number,holding_name,holding_ref,")
    # The account number as a spreadsheet keeps it text: ="<digits>", its quotes doubled in CSV.
    assert f',"=""{number}""",ADA OBI STORES,{ref},' in row and ",25.00,2500,NGN," in row
    summary = client.get(
        "/reports/reconciliation", params={"format": "csv", "section": "summary"}, headers=AUTH
    ).text
    assert summary.splitlines()[0] == "figure,value,meaning,counts"


def test_alerts_list_ack_resolve(
    client: TestClient[Litestar], factory: sessionmaker[Session]
) -> None:
    with factory.begin() as s:
        alert_id = raise_alert(
            s,
            kind="finality_overdue",
            severity="medium",
            subject="late",
            fingerprint="f:1",
            evidence={"a": 1},
        ).id

    listed = client.get("/alerts", params={"state": "open"}, headers=AUTH).json()
    assert [a["id"] for a in listed] == [alert_id]

    acked = client.post(f"/alerts/{alert_id}/ack", json={"by": "ana", "note": "mine"}, headers=AUTH)
    assert acked.status_code == 200
    assert (acked.json()["state"], acked.json()["acknowledgedBy"]) == ("acknowledged", "ana")

    why = {"by": "ana", "note": "fixed"}
    unsaid = client.post(f"/alerts/{alert_id}/resolve", json={"by": "ana"}, headers=AUTH)
    assert unsaid.status_code == 400 and "say why you resolve it" in unsaid.text
    done = client.post(f"/alerts/{alert_id}/resolve", json=why, headers=AUTH)
    assert done.json()["state"] == "resolved"
    again = client.post(f"/alerts/{alert_id}/ack", json=why, headers=AUTH)
    assert again.status_code == 400 and "already resolved" in again.text
    missing = client.post("/alerts/999/resolve", json=why, headers=AUTH)
    assert missing.status_code == 404
    nobody = client.post(f"/alerts/{alert_id}/resolve", json={"note": "x"}, headers=AUTH)
    assert nobody.status_code == 400
    assert client.get("/alerts", params={"state": "gone"}, headers=AUTH).status_code == 400
