"""A rebuild after retention removed reconciled history reproduces the live state.

Retention removes settled match groups and their postings; what it removed is kept as facts
(the `retention.*` watermarks: per holding, the pruned horizon and the net amount). A rebuild
derives every balance check afresh, summing each holding from nothing: it must start from that
net, or every pruned holding would show a drift of exactly what was removed.
"""

from __future__ import annotations

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from reconciliation.rebuild.run import Mode, rebuild
from reconciliation.retention.runner import run_retention
from reconciliation.store.models import Posting, Watermark
from tests.integration.retention.reconciled_world import (
    LIMITS,
    NOW,
    POLICY,
    build_world,
    settle_after_prune,
)
from upstream.webhooks.payloads import configured_reader


def test_rebuild_after_pruning_reproduces_the_live_state(
    engine: Engine, session_factory: sessionmaker[Session]
) -> None:
    world = build_world(session_factory)
    with session_factory() as s:
        postings_before = len(s.scalars(select(Posting.id)).all())
    run_retention(
        session_factory,
        LIMITS,
        match_window_seconds=POLICY.match_window_seconds,
        projection_grace_seconds=POLICY.projection_grace_seconds,
        now=NOW,
    )
    settle_after_prune(session_factory, world)
    with session_factory() as s:
        assert len(s.scalars(select(Posting.id)).all()) < postings_before  # history went
        nets = s.scalars(
            select(Watermark.value).where(
                Watermark.name.startswith("retention.postings.pruned_net")
            )
        ).all()
    assert any(nets), "retention recorded no net amount removed"

    result = rebuild(engine, POLICY, configured_reader(), mode=Mode.DRY_RUN)

    assert result.comparison is not None
    assert [d.as_dict() for d in result.comparison.differences] == []
