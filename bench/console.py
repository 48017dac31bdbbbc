"""Benchmark: every console page's answer time with 1,000,000 postings in PostgreSQL.

    .venv/bin/python bench/console.py                  # 1M postings, 7 requests a page
    .venv/bin/python bench/console.py --size 200000 --requests 5
    .venv/bin/python bench/console.py --keep           # leave the filled database behind
    .venv/bin/python bench/console.py --reuse NAME     # time pages of a database kept before
    BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres (the default)

Fills a fresh database the way a running recon would have it, then signs in to the real app
in-process and times each page over several requests (min / median / max, ms), after one
warm-up request per page. The database is dropped at the end unless --keep.

The store: bench/reconcile_data.py's three streams (1M postings, 1M transfers, 1M notifications
over 1,000 holdings, ~23 days of traffic ending three hours ago, so the "last day" views have
a day to show), with a tenth of the inbound credits' notifications and another tenth's postings
taken out before a full reconciliation pass runs over it (`reconciliation.reconcile.run_pass`,
the real one: matches, backlog, watermarks, alerts). After the pass, 500 matches are taken
apart through `operator_actions.unmatch` (exceptions a person must decide, with audit rows),
and 10,000 records arrive that no pass has seen yet (above the watermarks). Besides: an
activity cursor per holding, 200 balance checks on each of 20 holdings, 2,000 alerts, 5,000
deliveries (500 quarantined).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import reconcile_data  # noqa: E402 - found through the path set just above
from reconcile_data import (  # noqa: E402 - found through the path set just above
    HOLDINGS,
    Shape,
    generate,
)
from reconcile_load import (  # noqa: E402 - found through the path set just above
    append_records,
    load_postgres,
    load_with_snapshots,
)

ADMIN_TOKEN = "bench-admin-token-0123456789abcdef"
#: The holding the per-holding pages ask about (holding id 2: a source of transfers, so it has
#: postings, transfers and notifications every day).
FIRST_HOLDING = str(reconcile_data.ref("holding", 1))
#: Indexes the reports page needs to read one holding's notifications and transfers without
#: scanning both tables (proposed for reconciliation/store/models.py; `--proposed-indexes`
#: creates them here first, so their effect can be measured before they are in the schema).
PROPOSED_INDEXES = (
    "CREATE INDEX IF NOT EXISTS ix_notifications_holding_occurred "
    "ON notifications (holding_ref, occurred_at)",
    "CREATE INDEX IF NOT EXISTS ix_transfers_source_holding_asked "
    "ON transfers (source_holding_ref, (coalesce(requested_at, created_at)))",
)
#: How long before the benchmark starts the generated traffic ends: older than the notification
#: grace, so what no pass has seen yet is late by the report's definition (as in a store whose
#: passes have stopped for a few hours), and new enough that "the last day" holds a day of it.
TRAFFIC_ENDS_BEFORE = timedelta(hours=3)
#: Matches taken apart by hand after the pass: the exceptions a person must decide.
UNMATCHED_BY_HAND = 500
#: Settled transfers appended after the pass (a transfer, two legs, one notification each).
UNSEEN_TRANSFERS = 2_500


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg", "postgresql")


def fill(url: str, size: int) -> None:
    """The store as a running recon would have it: streams, a pass, decisions, newer traffic."""
    import psycopg

    shape = Shape(size)
    # reconcile_data stamps rows from its BASE; move it so the traffic ends a little before now.
    reconcile_data.BASE = (
        datetime.now(UTC) - timedelta(seconds=2 * (size + UNSEEN_TRANSFERS)) - TRAFFIC_ENDS_BEFORE
    )
    load_with_snapshots(load_postgres, url, generate(shape))
    with psycopg.connect(_plain(url)) as conn, conn.cursor() as cur:
        # Counterparts that never arrive: credits without their notification, notifications
        # without their posting. The pass leaves them in the backlog; the grace makes them late.
        cur.execute(
            "DELETE FROM notifications WHERE event_type = 'PAYMENT_RECEIVED' AND id % 10 = 0"
        )
        cur.execute(
            "DELETE FROM postings WHERE id > %s AND (id - %s) %% 10 = 5",
            (2 * shape.settled, 2 * shape.settled),
        )
        conn.commit()
    run_reconciliation(url)
    unmatch_by_hand(url)
    append_records("postgres", url, generate(shape, offset=size, settled_only=UNSEEN_TRANSFERS))
    extras(url)
    with psycopg.connect(_plain(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def run_reconciliation(url: str) -> None:
    """One full pass, the real one, so matches, backlog and watermarks are what recon keeps."""
    from reconciliation.policy import ReconcilePolicy
    from reconciliation.reconcile import run_pass
    from reconciliation.store.db import make_engine, make_session_factory

    engine = make_engine(url)
    started = time.perf_counter()
    result = run_pass(make_session_factory(engine), ReconcilePolicy(), publish=False)
    print(
        f"reconciliation pass: {time.perf_counter() - started:.0f} s, "
        f"matched {sum(result.matched.rows_by_rule.values()):,} rows",
        flush=True,
    )
    engine.dispose()


def unmatch_by_hand(url: str) -> None:
    """Take matches apart the way `recon unmatch` does, spread over the matches table."""
    from sqlalchemy import func, select

    from reconciliation.operator import actions as operator_actions
    from reconciliation.operator.audit_trail import CLI, Actor
    from reconciliation.store.db import make_engine, make_session_factory
    from reconciliation.store.models import Match

    engine = make_engine(url)
    factory = make_session_factory(engine)
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

    with psycopg.connect(_plain(url)) as conn, conn.cursor() as cur:
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


def time_pages(url: str, requests: int) -> list[tuple[str, float, float, float]]:
    from cryptography.fernet import Fernet
    from litestar.testing import TestClient

    from app.main import create_app
    from foundation.settings import load_settings

    settings = load_settings(
        {
            "DATABASE_URL": url,
            "RECON_GATEWAY_URL": "http://127.0.0.1:9",
            "RECON_GATEWAY_API_KEY": "ak_bench",
            "RECON_PROVIDER_MODE": "sandbox",
            "RECON_COMPANY_API_KEY": "ck_bench",
            "RECON_COMPANY_APP_ID": str(uuid.uuid4()),
            "RECON_PUBLIC_URL": "http://127.0.0.1:8000",
            "RECON_SECRET_KEY": Fernet.generate_key().decode(),
            "RECON_ADMIN_TOKEN": ADMIN_TOKEN,
            "RECON_STATE_DIR": tempfile.mkdtemp(prefix="recon-bench-console-"),
        }
    )
    app = create_app(settings, enqueue=None, self_register=False)
    week_ago = (datetime.now(UTC) - timedelta(days=7)).replace(microsecond=0).isoformat()
    pages = [
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
        "/console/holdings/1?cursor="
        + quote(f"{(datetime.now(UTC) - timedelta(days=10)).isoformat()}/999999999"),
        "/console/reports",
        "/console/reports?since=&holding=",
        f"/console/reports?holding={FIRST_HOLDING}",
        f"/console/reports?holding={FIRST_HOLDING}&since={quote(week_ago)}",
        "/console/audit",
    ]
    #: Downloads are the full report (every holding, every item of the window): timed once each,
    #: outside the pages' 200 ms goal; the reports page says they take longer.
    downloads = [
        "/console/reports/download?format=csv",
        "/console/reports/download?format=csv&since=",
    ]
    figures = []
    with TestClient(app) as client:
        form = client.get("/console/sign-in").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        client.post(
            "/console/sign-in",
            data={"csrf_token": token.group(1), "name": "bench", "token": ADMIN_TOKEN, "next": ""},
        )
        for path in pages:
            assert client.get(path).status_code == 200, path  # warm-up
            times = []
            for _ in range(requests):
                started = time.perf_counter()
                answer = client.get(path)
                times.append((time.perf_counter() - started) * 1000)
                assert answer.status_code == 200, path
            figures.append((path, min(times), statistics.median(times), max(times)))
        for path in downloads:
            started = time.perf_counter()
            assert client.get(path).status_code == 200, path
            took = (time.perf_counter() - started) * 1000
            figures.append((path, took, took, took))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--size", type=int, default=1_000_000, help="postings (and transfers, notifications)"
    )
    parser.add_argument("--requests", type=int, default=7, help="timed requests per page")
    parser.add_argument("--keep", action="store_true", help="leave the database behind")
    parser.add_argument("--reuse", metavar="NAME", help="time a database kept by --keep")
    parser.add_argument(
        "--proposed-indexes",
        action="store_true",
        help="create the indexes the reports page needs (PROPOSED_INDEXES) before timing",
    )
    args = parser.parse_args()

    import logging

    import structlog
    from sqlalchemy import text

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    from migrations import runner as migrate
    from reconciliation.store.db import make_engine

    admin = os.environ.get(
        "BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    admin = admin.replace("postgresql://", "postgresql+psycopg://", 1)
    name = args.reuse or f"recon_bench_console_{uuid.uuid4().hex[:8]}"
    url = admin.rpartition("/")[0] + "/" + name
    admin_engine = make_engine(admin, isolation_level="AUTOCOMMIT")
    try:
        if not args.reuse:
            with admin_engine.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
            migrate.upgrade(url)
            started = time.perf_counter()
            fill(url, args.size)
            print(
                f"filled {name}: {args.size:,} postings over {HOLDINGS:,} holdings "
                f"in {time.perf_counter() - started:.0f} s",
                flush=True,
            )
        if args.proposed_indexes:
            with make_engine(url, isolation_level="AUTOCOMMIT").connect() as conn:
                for statement in PROPOSED_INDEXES:
                    conn.execute(text(statement))
                conn.execute(text("ANALYZE notifications"))
                conn.execute(text("ANALYZE transfers"))
            print("with the proposed indexes:", ", ".join(s.split()[5] for s in PROPOSED_INDEXES))
        print(f"{'page':58} {'min ms':>8} {'median':>8} {'max ms':>8}")
        for path, low, middle, high in time_pages(url, args.requests):
            print(f"{path:58} {low:8.1f} {middle:8.1f} {high:8.1f}", flush=True)
    finally:
        if not (args.keep or args.reuse):
            with admin_engine.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin_engine.dispose()


if __name__ == "__main__":
    main()
