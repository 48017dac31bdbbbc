"""Page parameters and form fields a person (or an attacker) can write anything into, against a
real `recon web`: every one a 400 (or the page's own refusal), never a 500.

Before: `?before=`, `?cursor=` and `?after=` of 20 digits on the audit, exceptions, alerts and
holdings pages overflowed the database driver; exception forms with `item=²` (a digit to
`str.isdigit`, not to `int`), ids past 2**63 or of 5,000 digits raised; on PostgreSQL a NUL in
the API's `by` or `note`, or in the console's sign-in name, was refused by the driver: each a 500.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.integration.app.receiver_helpers import ADMIN, PATH, signed_headers, wait_for
from tests.security.conftest import WebProcess
from tests.security.console_client import csrf_of, sign_in, signed_in_client

HUGE = "99999999999999999999"


#: Pages with a parameter that names a row: each is asked with a number past 2**63.
PAGES = (
    f"/console/audit?before={HUGE}",
    f"/console/holdings?after={HUGE}",
    f"/console/exceptions?cursor={HUGE}",
    "/console/exceptions?cursor=%C2%B2",
    f"/console/alerts?cursor=2026-01-01T00:00:00%2B00:00/{HUGE}",
    f"/console/holdings/1?cursor=2026-01-01T00:00:00%2B00:00/{HUGE}",
)
#: Exception forms naming an impossible row, and what the refusal says.
FORMS = (
    ("²", "not a whole number"),
    ("9" * 19, "out of range"),
    ("7" * 5_000, "not a whole number"),
)


def test_overflowing_page_parameters_and_form_ids_are_refused_not_a_500(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env, "--no-workers")
    with signed_in_client(web.base) as client:
        for path in PAGES:
            answer = client.get(path)
            assert 400 <= answer.status_code < 500, (path, answer.status_code, answer.text[:500])
        token = csrf_of(client, "/console/exceptions")
        for item, said in FORMS:
            data = {"csrf_token": token, "reason": "checked by hand", "here": "/console"}
            accept = client.post(
                "/console/exceptions/accept", data={**data, "kind": "posting", "item": item}
            )
            assert accept.status_code == 400, (item[:20], accept.status_code, accept.text[:500])
            assert said in accept.text, (item[:20], accept.text[-400:])
            match = client.post("/console/exceptions/match", data={**data, "posting": item})
            assert match.status_code == 400, (item[:20], match.status_code, match.text[:500])
    assert "web.unhandled_error" not in web.log_text()


@pytest.mark.postgres
def test_a_nul_in_names_and_notes_is_400_on_postgresql(
    security_env: dict[str, str],
    web_process: Callable[..., WebProcess],
    postgres_db_url: str,
) -> None:
    web = web_process({**security_env, "DATABASE_URL": postgres_db_url})
    with httpx.Client(base_url=web.base, timeout=30) as client:
        answer = sign_in(client, name="Grace\x00")
    assert answer.status_code == 400, (answer.status_code, answer.text[:500])
    # A delivery no shape reads opens an alert: something for `by` and `note` to reach.
    body = b'{"id": "no-shape-1", "what": "nothing we know"}'
    stored = httpx.post(web.base + PATH, content=body, headers=signed_headers(body), timeout=30)
    assert stored.status_code == 200, stored.text
    alerts = wait_for(
        lambda: httpx.get(f"{web.base}/alerts", headers=ADMIN, timeout=30).json(),
        60,
        "the shape alert",
    )
    alert_id = alerts[0]["id"]
    for body_json in ({"by": "ops\x00", "note": "seen"}, {"by": "ops", "note": "seen\x00"}):
        answer = httpx.post(
            f"{web.base}/alerts/{alert_id}/ack", json=body_json, headers=ADMIN, timeout=30
        )
        assert answer.status_code == 400, (answer.status_code, answer.text[:500])
    assert "web.unhandled_error" not in web.log_text()
