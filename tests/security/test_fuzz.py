"""Fuzzing: generated and mutated inputs thrown at the payload reader, the receiver's intake, the
admin API and the console's forms. Each input is accepted or refused within a time bound (and,
in process, a memory bound), and never raises or answers anything but a refusal.

What it guards: no input costs more than a small multiple of its own size, and every refusal
is a 4xx (issue #39's third wave found an amount of `1e999999999999` that raised MemoryError,
a `createdAt` of `1e500000` that held the interpreter for a minute, and 500s from cursors and
form ids). Runs with a few dozen examples per test under `make test`; RECON_FUZZ_EXAMPLES sets
more (tests/security/fuzz_inputs.py).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import httpx
from hypothesis import given
from hypothesis import strategies as st

from app.receiver.intake import build_delivery
from tests.integration.app.receiver_helpers import ADMIN
from tests.security.conftest import WebProcess
from tests.security.console_client import csrf_of, signed_in_client
from tests.security.fuzz_inputs import (
    FUZZ,
    SECONDS_PER_INPUT,
    delivery_bodies,
    hostile_text,
    json_value,
)
from upstream import (
    DeliveryNotification,
    DeliveryNotUnderstood,
    VerifiedSignature,
    configured_reader,
)

#: Most memory reading one body may take beyond a fixed allowance, per byte of the body: a
#: parse holds the body a few times over; an expansion holds it millions of times over.
BYTES_PER_BODY_BYTE = 50
#: The fixed allowance: the parsed document's objects and the reader's own.
BASE_BYTES = 2_000_000
#: How much a web process's peak memory may grow over a whole fuzz run: an expansion of one
#: costly number would take gigabytes.
PEAK_GROWTH_BYTES = 200_000_000

READER = configured_reader()


@FUZZ
@given(body=delivery_bodies())
def test_the_reader_and_the_intake_accept_or_refuse_every_body_cheaply(body: bytes) -> None:
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = READER.read(body, {"webhook-id": "fuzz"})
        delivery = build_delivery(
            verified=VerifiedSignature(None, None),
            body=body,
            headers={"content-type": "application/json"},
            scheme="standard",
            signature_header="webhook-signature",
            received_at=datetime(2026, 11, 22, tzinfo=UTC),
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < SECONDS_PER_INPUT
    assert peak < BASE_BYTES + BYTES_PER_BODY_BYTE * len(body), peak
    assert isinstance(result, (DeliveryNotification, DeliveryNotUnderstood))
    if isinstance(result, DeliveryNotUnderstood):
        # A reason is a cause and an excerpt, never an expansion of the body.
        assert len(result.describe()) < 4_000 + 2 * len(body)
    assert delivery.body == body
    if delivery.quarantine_reason is not None:
        assert len(delivery.quarantine_reason) < 1_000


def _peak_rss(web: WebProcess) -> int:
    """The web process's peak resident memory so far (Linux's VmHWM), in bytes."""
    status = Path(f"/proc/{web.popen.pid}/status").read_text()
    line = next(s for s in status.splitlines() if s.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def _answered(send: Callable[[], httpx.Response]) -> httpx.Response:
    started = time.monotonic()
    answer = send()
    assert time.monotonic() - started < SECONDS_PER_INPUT
    assert answer.status_code < 500, (answer.status_code, answer.text[:500])
    return answer


def test_the_admin_api_and_the_console_refuse_every_generated_input_with_a_4xx(
    security_env: dict[str, str], web_process: Callable[..., WebProcess]
) -> None:
    """One web process for both (starting one costs more than the fuzzing itself)."""
    web = web_process(security_env, "--no-workers")
    before = _peak_rss(web)
    _fuzz_the_admin_api(web)
    _fuzz_the_console(web)
    assert _peak_rss(web) - before < PEAK_GROWTH_BYTES
    assert "web.unhandled_error" not in web.log_text()


def _fuzz_the_admin_api(web: WebProcess) -> None:
    with httpx.Client(base_url=web.base, headers=ADMIN, timeout=30) as client:

        @FUZZ
        @given(
            route=st.sampled_from(
                [
                    ("GET", "/deliveries", ("state", "event_type", "cursor", "limit")),
                    ("GET", "/alerts", ("state", "kind", "limit")),
                    (
                        "GET",
                        "/reports/reconciliation",
                        ("since", "until", "holding", "format", "section"),
                    ),
                ]
            ),
            values=st.lists(hostile_text, min_size=1, max_size=5),
        )
        def query(route: tuple[str, str, tuple[str, ...]], values: list[str]) -> None:
            method, path, names = route
            params = dict(zip(names, values, strict=False))
            _answered(lambda: client.request(method, path, params=params))

        @FUZZ
        @given(
            path=st.sampled_from(
                [
                    "/alerts/{}/ack",
                    "/alerts/{}/resolve",
                    "/deliveries/{}/replay",
                    "/deliveries/{}/choose",
                    "/deliveries/{}",
                ]
            ),
            row=st.one_of(hostile_text, st.integers(min_value=-(2**70), max_value=2**70)),
            body=json_value,
        )
        def by_id(path: str, row: object, body: object) -> None:
            target = path.format(quote(str(row), safe="") or "x")
            if target.endswith(("/ack", "/resolve", "/replay", "/choose")):
                _answered(lambda: client.post(target, json=body))
            else:
                _answered(lambda: client.get(target))

        query()
        by_id()


def _fuzz_the_console(web: WebProcess) -> None:
    with signed_in_client(web.base) as client:
        token = csrf_of(client, "/console/exceptions")

        @FUZZ
        @given(
            action=st.sampled_from(
                [
                    "/console/exceptions/match",
                    "/console/exceptions/accept",
                    "/console/exceptions/unmatch",
                    "/console/alerts/1/acknowledge",
                    "/console/alerts/1/resolve",
                    "/console/deliveries/1/replay",
                ]
            ),
            fields=st.dictionaries(
                st.sampled_from(
                    ["item", "kind", "match", "posting", "transfer", "notification", "reason"]
                ),
                hostile_text,
                max_size=5,
            ),
        )
        def post(action: str, fields: dict[str, str]) -> None:
            data = {**fields, "csrf_token": token, "here": "/console"}
            _answered(lambda: client.post(action, data=data))

        @FUZZ
        @given(
            page=st.sampled_from(
                [
                    "/console/audit?before={}",
                    "/console/holdings?after={}",
                    "/console/holdings?search={}",
                    "/console/exceptions?cursor={}",
                    "/console/exceptions?age={}",
                    "/console/alerts?cursor={}",
                    "/console/deliveries?cursor={}",
                    "/console/reports?since={}",
                ]
            ),
            value=hostile_text,
        )
        def get(page: str, value: str) -> None:
            path, _, name = page.partition("?")
            _answered(lambda: client.get(path, params={name.split("=")[0]: value}))

        post()
        get()
