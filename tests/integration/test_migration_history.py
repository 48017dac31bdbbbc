"""The schema's history: released migrations stay as released, and the chain stays one line.

A deployed store is upgraded by replaying the migrations it has not run yet. If a released
migration were edited (or regenerated from the models, as the first one was before release), a
store that already ran it would never see the edit, and its schema would silently differ from a
fresh one. So every released migration is recorded here by the SHA-256 of its file: a change to
the schema must be a new migration (`make migration NAME=what_changed`), and adding one here is
part of releasing it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final
from uuid import uuid4

from alembic.script import ScriptDirectory

from migrations import runner

VERSIONS: Final = Path(runner.SCRIPT_LOCATION) / "versions"

#: Released migrations and the SHA-256 of their files as released: every one in the folder
#: (0001 is the store every deployment before this record started from).
RELEASED: Final[dict[str, str]] = {
    "0001_initial_store.py": "7b0715bda4037cd2e0c2b5f20b00dbed7bc66423489d061cf6df2327d1895f36",
    "0002_transfer_fees.py": "b882d28cdb1111f14c47120c62af1c6aa1dcc4954a90ae30dc693b9ef93e1ee4",
    "0003_console_sessions.py": "484e48d5582d2ab02895ee999096a6ad79ad9ffbd7f03702ef91a53a8975b34f",
    "0004_audit_coverage_days.py": "3d1e6350c830a4f1bdd2cfac1d44893fff9d9b570e3dd25ff667d69256a7d130",
    "0005_amounts_of_any_size.py": "2a125f04cc0fd43ee615f42237832bae44229097408863fc85e36c813626fc18",
    "0006_fee_revisions.py": "133c7575905aa98ff7092aefe35477f3323363293db9c32d1b5f2f68d2fec8b5",
    "0007_audit_door.py": "9f94b1de1880feb3a6cf2943d83b706cd5abb3c290daa5ecbfc6ff1cf408bf02",
    "0008_transfer_changes_outcome.py": "f63cddb8c2a51969c11d57e00bf86cbccf268263ca7849f21085a3e9197cfa98",
    "0009_postings_lighter_writes.py": "0032810eede01cdf2a8227df8fa5aa0e6a36396976f3184bc93e44f07c56ba7b",
    "0010_transfer_fee_receipts.py": "4ff7f139a494c6edd20566e9fb1985b505714eb3b30dc0dc5340117bff23eba3",
    "0011_reads_follow_the_money.py": "9b1094654d5da39e8f38539297f0f5bcbfaf735fd87d31cc736f6c2a9e27a552",
}


def test_released_migrations_are_unchanged() -> None:
    for name, recorded in RELEASED.items():
        digest = hashlib.sha256((VERSIONS / name).read_bytes()).hexdigest()
        assert digest == recorded, (
            f"{name} was edited after release; a deployed store that already ran it would never "
            "see the change. Restore it and put the change in a new migration: "
            "make migration NAME=what_changed"
        )


def test_every_migration_in_the_folder_is_pinned() -> None:
    """Before: only 0001 was recorded, so 0002 onwards could be edited after release unseen."""
    files = {p.name for p in VERSIONS.glob("[0-9]*.py")}
    unpinned = sorted(files - set(RELEASED))
    assert not unpinned, (
        f"{unpinned} not recorded in RELEASED: add each with the SHA-256 of its file "
        "(sha256sum migrations/versions/NAME) as part of releasing it"
    )


def test_the_history_is_one_line_from_the_first_release() -> None:
    script = ScriptDirectory.from_config(runner.alembic_config("sqlite://"))
    heads = script.get_heads()
    assert len(heads) == 1, f"the migrations branch: heads {heads}; merge them into one line"
    walked = [rev.revision for rev in script.walk_revisions()]
    assert walked[-1] == "0001", f"the history does not start at 0001: {walked}"
    files = sorted(p.name for p in VERSIONS.glob("[0-9]*.py"))
    assert len(files) == len(walked), f"{files} against revisions {walked}"


def test_a_store_with_money_in_it_upgrades_exactly(db_url: str) -> None:
    """Amounts written under 0001 (BIGINT) read back exactly after the move to any-size amounts,
    on both databases: SQLite copies each table, PostgreSQL widens the column in place."""
    from sqlalchemy import text

    from reconciliation.store.db import make_engine

    runner.downgrade(db_url, "0001")
    engine = make_engine(db_url)
    largest = 2**63 - 1
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO holdings (id, account_ref, endpoint_ref, holding_ref, unit_kind, "
                "currency, watched, discovered_at, updated_at) VALUES (1, :a, :e, :h, 'fiat', "
                "'NGN', true, '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
            ),
            {"a": uuid4().hex, "e": uuid4().hex, "h": uuid4().hex},
        )
        for line, amount in enumerate((largest, 150050, 1)):
            conn.execute(
                text(
                    "INSERT INTO postings (journal_ref, line_ref, receipt_ref, holding_id, "
                    "posted_at, side, effect, kind, amount_minor, currency, ingested_at, "
                    "match_status) VALUES (:j, :l, :r, 1, '2026-01-01 00:00:00', 'credit', "
                    "'increase', 'transfer_settlement', :amount, 'NGN', '2026-01-01 00:00:00', "
                    "'unmatched')"
                ),
                {"j": uuid4().hex, "l": f"{line:032x}", "r": uuid4().hex, "amount": amount},
            )
    engine.dispose()
    runner.upgrade(db_url)
    runner.check(db_url)

    from sqlalchemy import select

    from reconciliation.store.models import Posting
    from reconciliation.store.types import amount_sum

    engine = make_engine(db_url)
    with engine.connect() as conn:
        stored = sorted(conn.scalars(select(Posting.amount_minor)))
        total = conn.scalar(select(amount_sum(Posting.amount_minor)))
    engine.dispose()
    assert stored == [1, 150050, largest]
    assert total == largest + 150051  # past 2**63: summed exactly after the upgrade
