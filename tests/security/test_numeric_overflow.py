"""Numbers too large for the store, and dates too far out, sent to the API and the CLI.

Before: a cursor or a row id past 2**63 overflowed the database driver and a date near the
end of the calendar overflowed the report's arithmetic: 500 from the API, a traceback from
the CLI. Now each is a 400 (or a one-line usage error) naming what was wrong.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.integration.app.receiver_helpers import ADMIN
from tests.security.conftest import WebProcess, run_recon

HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    ("path", "params", "said"),
    [
        ("/deliveries", {"cursor": HUGE}, "cursor"),
        (f"/deliveries/{HUGE}", {}, "out of range"),
        ("/reports/reconciliation", {"until": "9999-12-31T23:59:59-01:00"}, "until"),
        ("/reports/reconciliation", {"since": "0001-01-01T00:00:00+01:00"}, "since"),
        ("/reports/reconciliation", {"until": "9999-12-31"}, "out of range"),
    ],
)
def test_overflowing_numbers_and_dates_are_400_from_the_api(
    security_env: dict[str, str],
    web_process: Callable[..., WebProcess],
    path: str,
    params: dict[str, str],
    said: str,
) -> None:
    web = web_process(security_env, "--no-workers")
    response = httpx.get(web.base + path, params=params, headers=ADMIN, timeout=30)
    assert response.status_code == 400, response.text
    assert said in response.json()["detail"]


def test_replaying_an_overflowing_row_id_is_400(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    web = web_process(security_env, "--no-workers")
    response = httpx.post(f"{web.base}/deliveries/{HUGE}/replay", headers=ADMIN, timeout=30)
    assert response.status_code == 400, response.text


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("deliveries", "show", HUGE), "is not in the range 1<=x<=9223372036854775807"),
        (("deliveries", "replay", HUGE), "is not in the range 1<=x<=9223372036854775807"),
        (("deliveries", "list", "--cursor", HUGE), "cursor '99999999999999999999' is not valid"),
        (("report", "--until", "9999-12-31T23:59:59-01:00"), "is out of range"),
    ],
)
def test_overflowing_numbers_and_dates_are_one_line_from_the_cli(
    security_env: dict[str, str], args: tuple[str, ...], said: str
) -> None:
    result = run_recon(security_env, *args)
    assert result.returncode == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert said in result.stderr
