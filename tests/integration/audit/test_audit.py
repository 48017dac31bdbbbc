"""`recon audit` against the sandbox playing each provider variant, over real (in-process) HTTP.

The store is filled by the real activity poller; then the store is damaged (a posting deleted,
one altered, one made up) and the provider adds a posting behind the poller's cursor through the
sandbox's control API. The audit must name each of them, raise one alert each, leave the live
cursors exactly as they were, resolve what a later audit finds fixed, and read no faster than the
shared gateway rate limit.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, select, update

from foundation import load_settings
from reconciliation.ledger_audit.compare import DIFFERS, MISSING, UNKNOWN
from reconciliation.ledger_audit.run import AuditStoppedError, audit_ledger, due, fetch_from
from reconciliation.ledger_audit.summary import last_audit, last_audit_line
from reconciliation.store.models import ActivityCursor, Alert, AuditRun, Holding, Posting
from sandbox.variants import PRESETS, parse_variant
from tests.integration.workers.inprocess_sandbox import (
    InProcessSandbox,
    StepClock,
    inprocess_sandbox,
    read_until_caught_up,
    reader_settings,
)
from workers import Runtime, build_runtime, release_runtime
from workers.actors.holdings import discover
from workers.runtime import install_runtime

PAGE = 10


@pytest.fixture
def sandbox() -> Iterator[InProcessSandbox]:
    with inprocess_sandbox(PRESETS["recon"]) as made:
        yield made


@pytest.fixture
def env(base_env: dict[str, str], db_url: str) -> dict[str, str]:
    return {**base_env, "DATABASE_URL": db_url}


def polled_world(
    env: dict[str, str], sandbox: InProcessSandbox, spec: str
) -> tuple[Runtime, dict[str, int]]:
    """Two holdings (40 and 25 postings) read into the store by the real poller."""
    variant = parse_variant(spec)
    sandbox.reset(variant, seed=7)
    walk_only = "oldest_first" not in variant.sort_directions
    refs = [sandbox.new_holding(), sandbox.new_holding()]
    for ref, size in zip(refs, (40, 25), strict=True):
        sandbox.add_postings(
            ref, [sandbox.rng.choice((0, 1)) for _ in range(size)], anywhere_in_ties=walk_only
        )
    rt = build_runtime(reader_settings(env, PAGE), transport=sandbox.transport, clock=StepClock())
    discover(rt)
    with rt.sessions() as s:
        ids = {str(r): i for r, i in s.execute(select(Holding.holding_ref, Holding.id))}
    for ref in refs:
        read_until_caught_up(rt, ids[ref], StepClock())
    return rt, {ref: ids[ref] for ref in refs}


def cursors(rt: Runtime) -> list[dict[str, Any]]:
    with rt.sessions() as s:
        return [
            {c.key: getattr(row, c.key) for c in ActivityCursor.__table__.columns}
            for row in s.scalars(select(ActivityCursor).order_by(ActivityCursor.holding_id))
        ]


def open_audit_alerts(rt: Runtime) -> dict[str, Alert]:
    with rt.sessions() as s:
        rows = s.scalars(select(Alert).where(Alert.kind.like("audit_%"), Alert.state == "open"))
        return {a.fingerprint: a for a in rows}


@pytest.mark.parametrize("spec", ["recon", "standard", "sparse", "recon,page_cap=7,over_cap=clamp"])
def test_audit_finds_deleted_altered_unknown_and_backdated_postings(
    env: dict[str, str], sandbox: InProcessSandbox, spec: str
) -> None:
    rt, ids = polled_world(env, sandbox, spec)
    first, second = list(ids)
    try:
        before = cursors(rt)
        clean = audit_ledger(rt.sessions, fetch_from(rt.gateway), page_size=PAGE)
        assert (clean.status, clean.postings, clean.total_divergences) == ("clean", 65, 0)
        with rt.sessions() as s:
            assert last_audit_line(s).startswith("last audit: clean, 2 holdings, 65 postings over ")

        with rt.sessions.begin() as s:
            stored = list(
                s.scalars(
                    select(Posting).where(Posting.holding_id == ids[first]).order_by(Posting.id)
                )
            )
            deleted, altered = stored[3], stored[7]
            amount = altered.amount_minor
            s.execute(delete(Posting).where(Posting.id == deleted.id))
            s.execute(
                update(Posting).where(Posting.id == altered.id).values(amount_minor=amount + 1)
            )
            made_up = Posting(
                journal_ref=uuid.uuid4(),
                line_ref=uuid.uuid4(),
                receipt_ref=uuid.uuid4(),
                holding_id=ids[first],
                posted_at=stored[0].posted_at - timedelta(days=1),
                side="credit",
                effect="increase",
                kind="transfer_settlement",
                amount_minor=5,
                currency="NGN",
            )
            s.add(made_up)
        with httpx.Client(
            transport=sandbox.transport, base_url="http://sandbox.invalid"
        ) as control:
            answer = control.post(
                "/_sandbox/postings/backdated",
                json={
                    "holdingRef": second,
                    "amountMinorUnits": "777",
                    "postedAt": sandbox.state.postings(second)[0]["postedAt"],
                },
            )
        assert answer.status_code == 201, answer.text
        backdated = answer.json()

        found = audit_ledger(rt.sessions, fetch_from(rt.gateway), page_size=PAGE)

        assert found.status == "diverged"
        assert found.counts == {MISSING: 2, UNKNOWN: 1, DIFFERS: 1}
        named = {(d.kind, str(d.line_ref)) for d in found.divergences}
        assert named == {
            (MISSING, str(deleted.line_ref)),
            (MISSING, backdated["lineRef"]),
            (UNKNOWN, str(made_up.line_ref)),
            (DIFFERS, str(altered.line_ref)),
        }
        differs = next(d for d in found.divergences if d.kind == DIFFERS)
        assert differs.fields == {"amount_minor": (amount + 1, amount)}
        assert set(open_audit_alerts(rt)) == {d.fingerprint for d in found.divergences}
        assert cursors(rt) == before  # the live cursors were neither moved nor renewed
        with rt.sessions() as s:
            summary = last_audit(s)
        assert summary is not None and summary.line().startswith("last audit: 4 divergences")

        # Put the first holding right; its audit resolves its alerts, the other's stays open.
        with rt.sessions.begin() as s:
            s.execute(delete(Posting).where(Posting.id == made_up.id))
            s.execute(update(Posting).where(Posting.id == altered.id).values(amount_minor=amount))
            s.add(
                Posting(
                    **{
                        c: getattr(deleted, c)
                        for c in (
                            "journal_ref",
                            "line_ref",
                            "receipt_ref",
                            "holding_id",
                            "posted_at",
                            "side",
                            "effect",
                            "kind",
                            "amount_minor",
                            "currency",
                            "partition",
                            "normal_side",
                        )
                    }
                )
            )
        with rt.sessions() as s:
            first_ref = s.scalar(select(Holding.holding_ref).where(Holding.id == ids[first]))
        fixed = audit_ledger(
            rt.sessions, fetch_from(rt.gateway), holding_ref=first_ref, page_size=PAGE
        )
        assert (fixed.status, fixed.alerts_resolved) == ("clean", 3)
        left = open_audit_alerts(rt)
        assert [a.evidence["lineRef"] for a in left.values()] == [backdated["lineRef"]]

        again = audit_ledger(rt.sessions, fetch_from(rt.gateway), page_size=PAGE)
        assert again.counts[MISSING] == 1
        assert [a.occurrences for a in open_audit_alerts(rt).values()] == [
            2
        ]  # one alert, seen twice
        assert cursors(rt) == before
    finally:
        release_runtime(rt)


def test_audit_reads_no_faster_than_the_gateway_rate(
    env: dict[str, str], sandbox: InProcessSandbox
) -> None:
    rt, _ = polled_world(env, sandbox, "recon")
    release_runtime(rt)
    settings = load_settings(
        {
            **env,
            "RECON_GATEWAY_URL": "http://sandbox.invalid",
            "RECON_GATEWAY_RPS": "2",
            "RECON_ACTIVITY_PAGE_SIZE": str(PAGE),
        }
    )
    slow = build_runtime(settings, transport=sandbox.transport)
    try:
        requests_before = sandbox.transport.activity_requests
        started = time.monotonic()
        result = audit_ledger(slow.sessions, fetch_from(slow.gateway), page_size=PAGE)
        elapsed = time.monotonic() - started
        sent = sandbox.transport.activity_requests - requests_before
        assert result.status == "clean" and sent >= 7  # 40 + 25 postings, 10 a page
        # 2 a second in whole-second buckets: n requests fill ceil(n / 2) buckets, and the
        # first and the last may each be caught at their edge, so at least ceil(n / 2) - 2 s.
        assert elapsed >= math.ceil(sent / 2) - 2 >= 2
    finally:
        release_runtime(slow)


def test_the_scheduled_actor_audits_once_per_interval(
    env: dict[str, str], sandbox: InProcessSandbox
) -> None:
    rt, _ = polled_world(env, sandbox, "standard")
    install_runtime(rt)
    try:
        from workers.actors.audit import audit_ledger as actor

        actor.fn()
        actor.fn()  # a duplicate tick: skipped, no gateway request
        with rt.sessions() as s:
            runs = list(s.scalars(select(AuditRun)))
        assert [(r.status, r.holdings, r.postings) for r in runs] == [("clean", 2, 65)]
    finally:
        release_runtime(rt)


def test_an_audit_asked_to_stop_ends_at_the_next_holding_and_stays_due(
    env: dict[str, str], sandbox: InProcessSandbox
) -> None:
    """A worker being stopped must not hold its shutdown for a whole audit: the audit ends
    before its next holding, records no verdict, and the next audit is still due."""
    rt, _ = polled_world(env, sandbox, "recon")
    asked: list[int] = []

    def stop_after_one() -> bool:
        asked.append(1)
        return len(asked) > 1

    try:
        requests_before = sandbox.transport.activity_requests
        with pytest.raises(AuditStoppedError, match="after 1 of 2 holdings"):
            audit_ledger(rt.sessions, fetch_from(rt.gateway), page_size=PAGE, stop=stop_after_one)
        read = sandbox.transport.activity_requests - requests_before
        assert 0 < read < 7  # the first holding's pages only (40 + 25 postings, 10 a page)
        with rt.sessions() as s:
            runs = [(r.status, r.holdings) for r in s.scalars(select(AuditRun))]
            assert runs == [("stopped", 1)]
            assert due(s, 86_400, rt.clock())
            assert last_audit(s) is None  # a stopped audit is no verdict
        assert audit_ledger(rt.sessions, fetch_from(rt.gateway), page_size=PAGE).status == "clean"
    finally:
        release_runtime(rt)
