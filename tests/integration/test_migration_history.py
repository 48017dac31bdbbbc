"""The schema's history: released migrations stay as released, and the chain stays one line.

A deployed store is upgraded by replaying the migrations it has not run yet. If a released
migration were edited (or regenerated from the models, as the first one was before release), a
store that already ran it would never see the edit, and its schema would silently differ from a
fresh one. So every released migration is recorded here by the SHA-256 of its file: a change to
the schema must be a new migration (`make migration NAME=what_changed`), and adding one here is
part of releasing it.

The schema each revision leaves is recorded too (`MIGRATED_SCHEMA`, on SQLite and PostgreSQL),
because the file hash alone cannot tell an edit that changes the schema from one that does not.
Once, the released files were edited and re-pinned: they imported their column types from the
domain (`reconciliation.store.types`), so a change to the models could have changed an old
migration underneath; they now name the same types frozen in `migrations.frozen_types`. That
edit is safe for deployed stores because it changed no schema: every revision's fingerprint
below was taken from the files before the edit and is reproduced by the files after it. A store
that ran the old files holds exactly what a fresh store gets from the new ones; the frozen types
keep only the DDL, since no migration binds a value through them, and the amounts a store held
under 0001 still read back exactly after 0005 (the last test here). Any later edit
to a released file must keep these fingerprints; one that cannot is a new migration.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Final
from uuid import uuid4

from alembic.script import ScriptDirectory
from sqlalchemy import make_url

from migrations import runner

VERSIONS: Final = Path(runner.SCRIPT_LOCATION) / "versions"

#: Released migrations and the SHA-256 of their files: every one in the folder (0001 is the store
#: every deployment before this record started from). Re-pinned once, when their column types
#: moved to migrations.frozen_types with the schema unchanged (module docstring).
RELEASED: Final[dict[str, str]] = {
    "0001_initial_store.py": "8d80f89b3321c5f2286e1d49a103e485350f9c9e0e60acc5fcb7211d19fec8e9",
    "0002_transfer_fees.py": "e962ef70d7861d68f10213b0b7539596e1a0752e53f0a58c9689e8e21b1bee51",
    "0003_console_sessions.py": "765e329f9f5cc04b58f137649b2019a1f18d7437037d6220c242bfec99d07664",
    "0004_audit_coverage_days.py": "0146bd0e1ebc8bf6579a9316b4eb0a421d3b40ea03d277dfb98a798bbdac8c36",
    "0005_amounts_of_any_size.py": "af8a2294c853d70b9110945817bd19d676d61f929101be9033cf74a1eb5e7cd1",
    "0006_fee_revisions.py": "21fde6daf50b6c5843a4e2732d57db40350021fb8187eb0f690cec56459f1234",
    "0007_audit_door.py": "d61ea7b91635e6770fe358c8cf2b293f0d2daa71f4c42f4e597bf359a636a5e1",
    "0008_transfer_changes_outcome.py": "be6428e18eb3a05b6ab6b52ecc721500d3d1a9660e8b471cc38b6b03fa2d3d68",
    "0009_postings_lighter_writes.py": "0032810eede01cdf2a8227df8fa5aa0e6a36396976f3184bc93e44f07c56ba7b",
    "0010_transfer_fee_receipts.py": "72c95048720d0433a3c2666314b212f930a7762fb286a5e4be9da42ddb51a2b8",
    "0011_reads_follow_the_money.py": "d1a61e4d411541de9769896994ba8ac5ed19105e67b33a677991c5f9940f7ed8",
    "0012_cursor_changes.py": "c9bc039ec23d6e16785afb85cfe1af9178141a92ccddc69244c26924ba18d3ef",
}


#: The SHA-256 of the schema each released revision leaves (`schema_fingerprint`), per database,
#: taken upgrading an empty store one revision at a time. They depend on what the database
#: reports (PostgreSQL 15, SQLite 3) and how SQLAlchemy reflects it (constraints.txt): a change
#: of either may move them all at once, which says nothing about the migrations; re-record them
#: from the files at the last release, never from edited ones.
MIGRATED_SCHEMA: Final[dict[str, dict[str, str]]] = {
    "sqlite": {
        "0001": "9c0104bc5d8b51df1b03688cac50213d3ed82bfcb89a723be9fbb8e098b72615",
        "0002": "d7269d69f4e0f08e2d0c3d4a9a5b855eb70a3383051c64ef2fb15b6d2e57c242",
        "0003": "960b02b5a20e67a8b2b82732916281d18ea8ceff5fb514ee638016f0c5c3e3c8",
        "0004": "35534b3f7d77e8c31a86fe3f01b7086c577d2f3f829da816e422c019088016a9",
        "0005": "6c699f479f3ca7d319506a25823bd3faac5c579b4d1b6ac668d0078d0d0f68a9",
        "0006": "3e31bfa9690914980559ed312290fcfcee91fed7ca9d32d29fce0a42d881bf17",
        "0007": "acf0d2dc472717a618cfa15c407f67ca330472dce4d9e7301232a306083d844f",
        "0008": "668679c74c6d12090aa8aade11f28392779e7988ee8342c62b8f3a8e95c445fe",
        "0009": "6701c5d276c43311b7b3be268b364718ce9f18715533a47001041ffe6672f0f5",
        "0010": "8b7cdddd11b9e25d8941c6022ab28543ab1ebf2b6418d66b2350cf9567176de3",
        "0011": "137155ab166e0683d3d6ff1f21c32f25f401ba6515d28c3d32a01ab37f77d753",
        "0012": "6dddff61479890fbb1bd4b1becaab744da23d986a3f38b36dc7fe0956e9d2f6f",
    },
    "postgresql": {
        "0001": "66e60b6cc3a27d926b66d900eff43918eeadd1140040b8e549929cf2234d9a0d",
        "0002": "3b6be6c8c3c77f78cce7c3447d9df940dfcab9e31722d99e5971ab7a9500f67d",
        "0003": "95786a07c8c1456d1ff4f91bcb791ba0cb46360ab1d7bf0f3deff7a74829d936",
        "0004": "902adb35994716a4ce1a422f54afd0a5c9fe9043e383fd6dc59c2342d08def2c",
        "0005": "65ceb21064c0d149d2768c658277c52781a7474f2b11552eb5e84bec5d89caec",
        "0006": "cbca5f568483043ce8a072ec915701d6e2c8ef72261f40524056b892d4ae31e2",
        "0007": "452442ee37110c9f9727f665f86590c1b8b03babfb903dfc1dc7c4a7e47175c0",
        "0008": "d0162e008ff9c356308814c8ab4d00991589135f98b19ec798278759c1dfb061",
        "0009": "7de056bb2487af988b4411f3d18d7b44aae3cfa6b5333e7b4c86b2492159e93e",
        "0010": "fc1f4d158a48c66ecee36145240f1db4c5b28b62890c0e0e0623474ca03a8396",
        "0011": "eeb6a512408b9cc8a5adfda665f89eef6877264766e65d85b9a8d2f368ca4167",
        "0012": "1e31e4bedb87d198f5120e9adc1d509111ee7a0b8e22782615e4c73dc1e45aa8",
    },
}


def canonical(reflected: object) -> str:
    """What the inspector reported as stable text (an index's WHERE clause as its SQL)."""
    return json.dumps(reflected, sort_keys=True, default=str)


def schema_fingerprint(database_url: str) -> str:
    """SHA-256 of the store's schema as the database itself reports it: every table's columns
    (type as this database spells it, nullability, default), keys, indexes and constraints."""
    from sqlalchemy import inspect

    from reconciliation.store.db import make_engine

    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            seen = inspect(conn)
            tables = {}
            for table in sorted(set(seen.get_table_names()) - {"alembic_version"}):
                columns = [
                    {**column, "type": column["type"].compile(dialect=conn.dialect)}
                    for column in seen.get_columns(table)
                ]
                tables[table] = {
                    "columns": columns,
                    "primary_key": seen.get_pk_constraint(table),
                    "foreign_keys": sorted(seen.get_foreign_keys(table), key=canonical),
                    "indexes": sorted(seen.get_indexes(table), key=canonical),
                    "unique": sorted(seen.get_unique_constraints(table), key=canonical),
                    "checks": sorted(seen.get_check_constraints(table), key=canonical),
                }
    finally:
        engine.dispose()
    return hashlib.sha256(canonical(tables).encode()).hexdigest()


def migrated_fingerprints(database_url: str) -> dict[str, str]:
    """The schema's fingerprint after each released revision, upgrading one step at a time from
    an empty store; the store is left at head."""
    runner.downgrade(database_url, "base")
    fingerprints = {}
    for revision in sorted(RELEASED):
        number = revision.partition("_")[0]
        runner.upgrade(database_url, number)
        fingerprints[number] = schema_fingerprint(database_url)
    runner.upgrade(database_url)
    return fingerprints


def test_released_migrations_are_unchanged() -> None:
    for name, recorded in RELEASED.items():
        digest = hashlib.sha256((VERSIONS / name).read_bytes()).hexdigest()
        assert digest == recorded, (
            f"{name} was edited after release; a deployed store that already ran it would never "
            "see the change. Restore it and put the change in a new migration: "
            "make migration NAME=what_changed"
        )


def test_each_released_revision_leaves_the_schema_it_left_when_released(db_url: str) -> None:
    """An edit to a released file (its imports, say) passes only if the schema is unchanged."""
    dialect = make_url(db_url).get_backend_name()
    assert migrated_fingerprints(db_url) == MIGRATED_SCHEMA[dialect], (
        "a released migration now builds a different schema than it did when released; a store "
        "that ran it then differs from one that runs it now. Restore it; put the change in a new "
        "migration"
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
