"""Benchmark: every console page's answer time with 1,000,000 postings in PostgreSQL.

    .venv/bin/python bench/console.py --size 200000 --requests 5

Fills a fresh database (BENCH_POSTGRES_URL's server) as a running recon would have it, signs
in to the real app in-process and times each page (min / median / max ms over --requests,
after a warm-up, and the median's ratio to the 200 ms goal). The store: bench/streams.py's streams ending three hours ago, a tenth of the
credits' notifications and another tenth's postings taken out, a real full pass, 500 matches
taken apart by hand, 10,000 records no pass has seen; an activity cursor per holding, 200
balance checks on each of 20 holdings, 2,000 alerts, 5,000 deliveries (500 quarantined).
"""

from __future__ import annotations

import argparse
import logging
import re
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final
from urllib.parse import quote

from harness import ADMIN_TOKEN, plain, postgres_database, quiet_logs, recon_env
from streams import HOLDINGS, generate, new_records, ref, store_tables, write

#: The holding the per-holding pages ask about (holding id 2: a source of transfers, so it has
#: postings, transfers and notifications every day).
FIRST_HOLDING: Final = str(ref("holding", 1))
#: How long before the benchmark starts the generated traffic ends: older than the notification
#: grace, so what no pass has seen yet is late by the report's definition (as in a store whose
#: passes have stopped for a few hours), and new enough that "the last day" holds a day of it.
TRAFFIC_ENDS_BEFORE: Final = timedelta(hours=3)
#: Matches taken apart by hand after the pass: the exceptions a person must decide.
UNMATCHED_BY_HAND: Final = 500
#: Settled transfers appended after the pass (a transfer, two legs, one notification each).
UNSEEN_TRANSFERS: Final = 2_500


def fill(url: str, size: int) -> None:
    """The store as a running recon would have it: streams, a pass, decisions, newer traffic."""
    import psycopg

    # Rows are two seconds apart from `base`: the traffic ends a little before now.
    base = (
        datetime.now(UTC) - timedelta(seconds=2 * (size + UNSEEN_TRANSFERS)) - TRAFFIC_ENDS_BEFORE
    )
    write(url, store_tables(generate(size, base=base)))
    with psycopg.connect(plain(url)) as conn, conn.cursor() as cur:
        # Counterparts that never arrive: credits without their notification, notifications
        # without their posting. The pass leaves them in the backlog; the grace makes them late.
        cur.execute(
            "DELETE FROM notifications WHERE event_type = 'PAYMENT_RECEIVED' AND id % 10 = 0"
        )
        credits_after = 2 * (size * 2 // 5)  # the settled transfers' legs come first
        cur.execute(
            "DELETE FROM postings WHERE id > %s AND (id - %s) %% 10 = 5",
            (credits_after, credits_after),
        )
        conn.commit()
    pass_and_decisions(url)
    write(url, new_records(generate(size, size, UNSEEN_TRANSFERS, base)), numbered=False)
    extras(url)
    with psycopg.connect(plain(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def pass_and_decisions(url: str) -> None:
    """One full pass, the real one (matches, backlog, watermarks as recon keeps them); then
    matches taken apart the way `recon unmatch` does, spread over the matches table."""
    from sqlalchemy import func, select

    from reconciliation import ReconcilePolicy, run_pass
    from reconciliation.operator import actions as operator_actions
    from reconciliation.operator.audit_trail import CLI, Actor
    from reconciliation.store.db import make_engine, make_session_factory
    from reconciliation.store.models import Match

    engine = make_engine(url)
    factory = make_session_factory(engine)
    result = run_pass(factory, ReconcilePolicy(), publish=False)
    print(f"reconciliation pass: matched {sum(result.matched.rows_by_rule.values()):,} rows")
    with factory() as session:
        top = int(session.scalar(select(func.max(Match.id))) or 0)
    step = max(1, top // UNMATCHED_BY_HAND)
    for match_id in range(step, top + 1, step)[:UNMATCHED_BY_HAND]:
        with factory.begin() as session:
            operator_actions.unmatch(
                session, Actor("bench", CLI), match_id, "bench: a person must decide"
            )
    engine.dispose()


def extras(url: str) -> None:
    """What the console reads beyond the three streams, written with plain SQL."""
    import psycopg

    with psycopg.connect(plain(url)) as conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO activity_cursors (holding_id, last_polled_at, last_advanced_at, "
            "consecutive_errors, postings_read, reads_completed) "
            "SELECT id, now() - (id || ' seconds')::interval, now() - (id || ' minutes')::interval, "
            "CASE WHEN id % 97 = 0 THEN 2 ELSE 0 END, 1000, 10 FROM holdings "
            "ON CONFLICT (holding_id) DO NOTHING"
        )
        cur.execute(
            "INSERT INTO balance_snapshots (holding_id, settled_minor, available_minor, reserved_minor, observed_at) "
            "SELECT h, 1000000 + g * 1000, 1000000 + g * 1000, 0, now() - (g || ' hours')::interval "
            "FROM generate_series(1, 20) h, generate_series(1, 200) g"
        )
        cur.execute(
            "INSERT INTO balance_checks (snapshot_id, holding_id, observed_at, settled_minor, "
            "posted_minor, drift_minor, explained_by_lag, postings_through_id, checked_at) "
            "SELECT s.id, s.holding_id, s.observed_at, s.settled_minor, "
            "s.settled_minor - CASE WHEN s.id % 17 = 0 THEN 500 ELSE 0 END, "
            "CASE WHEN s.id % 17 = 0 THEN 500 ELSE 0 END, false, 0, now() "
            "FROM balance_snapshots s WHERE s.id NOT IN (SELECT snapshot_id FROM balance_checks)"
        )
        cur.execute(
            "INSERT INTO alerts (kind, severity, subject, fingerprint, evidence, state, opened_at, "
            "last_seen_at, occurrences) SELECT "
            "(ARRAY['amount_mismatch','posting_without_notification','finality_overdue','delivery_body_conflict'])[1 + g % 4], "
            "(ARRAY['critical','high','medium','low'])[1 + g % 4], 'bench alert ' || g, 'bench:' || g, "
            "json_build_object('postingId', g, 'notificationId', g), "
            "(ARRAY['open','acknowledged','resolved'])[1 + g % 3], now() - (g || ' minutes')::interval, now(), 1 "
            "FROM generate_series(1, 2000) g"
        )
        cur.execute(
            "INSERT INTO deliveries (delivery_id, body_sha256, body, headers, scheme, event_type, "
            "received_at, state, attempts, original) SELECT 'bench-' || g, md5(g::text) || md5(g::text), "
            "convert_to('{\"id\":\"' || g || '\",\"event\":\"PAYMENT_RECEIVED\"}', 'UTF8'), '{}'::json, 'standard', "
            "'PAYMENT_RECEIVED', now() - (g || ' seconds')::interval, "
            "CASE WHEN g % 10 = 0 THEN 'quarantined' WHEN g % 100 = 1 THEN 'pending' ELSE 'processed' END, 1, true "
            "FROM generate_series(1, 5000) g"
        )
        conn.commit()


#: The pages timed, as a person opens them; pages of one holding follow.
PAGES: Final = [
    "/console",
    "/console/alerts",
    "/console/alerts/1",
    "/console/exceptions",
    "/console/exceptions?stream=notification",
    "/console/exceptions?stream=transfer",
    "/console/exceptions?stream=posting&age=0-1",
    "/console/exceptions?stream=posting&cursor=500000",
    "/console/exceptions/posting/3",
    "/console/exceptions/notification/5",
    "/console/deliveries",
    "/console/deliveries?state=quarantined",
    "/console/deliveries/10",
    "/console/holdings",
    "/console/holdings/1",
    "/console/reports",
    "/console/reports?since=&holding=",
    "/console/audit",
]
#: Every page's goal, median answer time in ms (the ratio column is median / this).
PAGE_GOAL_MS: Final = 200.0


def time_pages(url: str, requests: int) -> list[tuple[str, float, float, float]]:
    """min / median / max ms of each page over `requests` after a warm-up."""
    from litestar.testing import TestClient

    from app.main import create_app
    from foundation import load_settings

    state = Path(tempfile.mkdtemp(prefix="recon-bench-console-"))
    env = recon_env(
        url, state, RECON_GATEWAY_URL="http://127.0.0.1:9", RECON_PROVIDER_MODE="sandbox"
    )
    env |= {"RECON_COMPANY_APP_ID": str(uuid.uuid4()), "RECON_PUBLIC_URL": "http://127.0.0.1:8000"}
    app = create_app(load_settings(env), enqueue=None, self_register=False)
    figures = []
    with TestClient(app) as client:
        form = client.get("/console/sign-in").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        signing_in = {"csrf_token": token.group(1), "name": "bench", "token": ADMIN_TOKEN}
        client.post("/console/sign-in", data=signing_in | {"next": ""})

        def ms(path: str) -> float:
            started = time.perf_counter()
            assert client.get(path).status_code == 200, path
            return (time.perf_counter() - started) * 1000

        now = datetime.now(UTC)
        week_ago = quote((now - timedelta(days=7)).replace(microsecond=0).isoformat())
        older = quote(f"{(now - timedelta(days=10)).isoformat()}/999999999")
        holding = f"/console/reports?holding={FIRST_HOLDING}"
        more = [f"/console/holdings/1?cursor={older}", holding, f"{holding}&since={week_ago}"]
        for path in [*PAGES, *more]:
            ms(path)  # warm-up
            times = [ms(path) for _ in range(requests)]
            figures.append((path, min(times), statistics.median(times), max(times)))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--size", type=int, default=1_000_000, help="postings (and transfers, notifications)"
    )
    parser.add_argument("--requests", type=int, default=7, help="timed requests per page")
    args = parser.parse_args()
    quiet_logs(logging.ERROR)
    with postgres_database("console") as url:
        started = time.perf_counter()
        fill(url, args.size)
        took = time.perf_counter() - started
        print(f"filled: {args.size:,} postings over {HOLDINGS:,} holdings in {took:.0f} s")
        print(f"{'page':58} {'min ms':>8} {'median':>8} {'max ms':>8} {'ratio':>6}")
        worst = 0.0
        for path, low, middle, high in time_pages(url, args.requests):
            worst = max(worst, middle / PAGE_GOAL_MS)
            ratio = f"{middle / PAGE_GOAL_MS:6.2f}"
            print(f"{path:58} {low:8.1f} {middle:8.1f} {high:8.1f} {ratio}", flush=True)
        print(
            f"slowest page: median {worst:.2f} x the {PAGE_GOAL_MS:g} ms goal (under 1.00 meets it)"
        )


if __name__ == "__main__":
    main()
