"""The store on SQLite and PostgreSQL: migrations, constraints, money and time."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from migrations import runner as migrate
from reconciliation.store.models import Base, Delivery, Holding, Posting


def test_models_and_migrations_agree(db_url: str) -> None:
    migrate.check(db_url)


def test_migrations_round_trip(db_url: str, engine: Engine) -> None:
    migrate.downgrade(db_url, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate.upgrade(db_url)
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    migrate.check(db_url)


def _holding(session: Session) -> Holding:
    holding = Holding(
        account_ref=uuid.uuid4(),
        endpoint_ref=uuid.uuid4(),
        holding_ref=uuid.uuid4(),
        currency="NGN",
    )
    session.add(holding)
    session.flush()
    return holding


def _posting(holding: Holding, journal: uuid.UUID, line: uuid.UUID, amount: int) -> Posting:
    return Posting(
        journal_ref=journal,
        line_ref=line,
        receipt_ref=uuid.uuid4(),
        holding_id=holding.id,
        posted_at=datetime(2026, 11, 22, 1, 2, 3, 456000, tzinfo=UTC),
        side="credit",
        effect="increase",
        kind="transfer_settlement",
        amount_minor=amount,
        currency="NGN",
    )


def test_posting_is_unique_on_journal_and_line(session_factory: sessionmaker[Session]) -> None:
    journal, line = uuid.uuid4(), uuid.uuid4()
    with session_factory.begin() as session:
        holding = _holding(session)
        session.add(_posting(holding, journal, line, 100))
    with pytest.raises(IntegrityError), session_factory.begin() as session:
        session.add(_posting(holding, journal, line, 100))


def test_money_beyond_32_bits_and_time_round_trip_exactly(
    session_factory: sessionmaker[Session],
) -> None:
    big = 9_007_199_254_740_993  # 2**53 + 1: a float would lose the last unit
    with session_factory.begin() as session:
        holding = _holding(session)
        session.add(_posting(holding, uuid.uuid4(), uuid.uuid4(), big))
    with session_factory() as session:
        posting = session.scalars(select(Posting)).one()
    assert posting.amount_minor == big
    assert posting.posted_at == datetime(2026, 11, 22, 1, 2, 3, 456000, tzinfo=UTC)
    assert posting.posted_at.tzinfo is not None


def test_non_utc_input_is_stored_as_the_same_instant(
    session_factory: sessionmaker[Session],
) -> None:
    lagos = timezone(timedelta(hours=1))
    with session_factory.begin() as session:
        holding = _holding(session)
        p = _posting(holding, uuid.uuid4(), uuid.uuid4(), 1)
        p.posted_at = datetime(2026, 1, 1, 1, 0, tzinfo=lagos)
        session.add(p)
    with session_factory() as session:
        stored = session.scalars(select(Posting.posted_at)).one()
    assert stored == datetime(2026, 1, 1, 0, 0, tzinfo=UTC)


def test_naive_datetime_is_refused(session_factory: sessionmaker[Session]) -> None:
    with (
        pytest.raises(Exception, match="naive datetime refused"),
        session_factory.begin() as session,
    ):
        holding = _holding(session)
        p = _posting(holding, uuid.uuid4(), uuid.uuid4(), 1)
        p.posted_at = datetime(2026, 1, 1)
        session.add(p)


def test_delivery_dedup_is_on_id_and_body(session_factory: sessionmaker[Session]) -> None:
    def delivery(body: bytes, digest: str) -> Delivery:
        return Delivery(
            delivery_id="evt-1", body_sha256=digest, body=body, headers={}, scheme="standard"
        )

    with session_factory.begin() as session:
        session.add(delivery(b"{}", "a" * 64))
        session.add(delivery(b"{ }", "b" * 64))  # same id, another body: kept, to be quarantined
    with pytest.raises(IntegrityError), session_factory.begin() as session:
        session.add(delivery(b"{}", "a" * 64))


def test_no_float_column_anywhere() -> None:
    from sqlalchemy import Float, Numeric

    floats = [
        f"{table.name}.{column.name}"
        for table in Base.metadata.tables.values()
        for column in table.columns
        if isinstance(column.type, (Float, Numeric))
    ]
    assert floats == []
