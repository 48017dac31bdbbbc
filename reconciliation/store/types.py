"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar, Final

from sqlalchemy import BigInteger, DateTime, Integer, Numeric, Text, case, type_coerce
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeDecorator

from foundation import MAX_AMOUNT_DIGITS, check_digits

#: Primary keys of the big tables: BIGINT on PostgreSQL, but SQLite only auto-increments a
#: column declared exactly INTEGER PRIMARY KEY (which is 64-bit there anyway).
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in, timezone-aware UTC out, on both databases.

    SQLite has no time zone type and hands back naive values; PostgreSQL hands back aware ones
    in the session's zone. Normalising here means no naive datetime ever reaches domain code.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime refused: the store keeps aware UTC timestamps only")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utcnow() -> datetime:
    """The one clock the store uses."""
    return datetime.now(UTC)


#: Digits the store holds in an amount: NUMERIC(78, 0) on PostgreSQL (see MAX_AMOUNT_DIGITS).
#: The same bound is kept on SQLite so both databases refuse the same amounts.
AMOUNT_DIGITS: Final = MAX_AMOUNT_DIGITS

#: Characters of a value unit's code (foundation.money.unit_code): a currency ("NGN") or, for
#: other kinds, kind, asset, network and instrument ref together ("token:USDC@ethereum#...").
UNIT_CODE_LENGTH: Final = 255


class Amount(TypeDecorator[int]):
    """An exact integer of base units, of any size up to AMOUNT_DIGITS digits, as a Python int.

    PostgreSQL: NUMERIC(78, 0), summed and compared natively and exactly. SQLite has no exact
    type wider than 64 bits (its sum() overflows past 2**63, and a big integer literal becomes
    a REAL), so the column there is canonical decimal TEXT ('-1500', never '+1500' or
    '01500'): equal amounts are equal texts. Anything that sums, negates, takes the absolute
    value of or orders amounts goes through the constructs below, which compile to the
    functions reconciliation.store.db registers on every SQLite connection.
    """

    impl = Numeric(AMOUNT_DIGITS, 0)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(Text())
        return dialect.type_descriptor(Numeric(AMOUNT_DIGITS, 0, asdecimal=True))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, Decimal) and value == value.to_integral_value():
                value = int(value)
            else:
                raise TypeError(f"an amount is an int of base units, got {value!r}")
        check_digits(value)
        return str(value) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> int | None:
        return None if value is None else to_amount(value)

    def coerce_compared_value(self, op: Any, value: Any) -> Any:
        """A literal compared with an amount is bound as an amount (text on SQLite)."""
        return self


def to_amount(value: object) -> int:
    """A value an amount expression returned (int, canonical text, Decimal) as an exact int.

    A float is refused: it can only come from arithmetic outside these constructs, and it may
    already be inexact.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        return int(value)
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    raise TypeError(f"not an exact amount: {value!r}")


class _AmountFunction(FunctionElement[int]):
    """An amount expression written differently per database (see Amount)."""

    type = Amount()
    inherit_cache = True
    #: The PostgreSQL form, with {0} for the argument; SQLite calls the function `name`.
    postgresql_form: ClassVar[str]


class amount_sum(_AmountFunction):  # noqa: N801 (reads as the SQL function it is)
    """sum() of amounts, exact at any size (NULL over no rows, as sum())."""

    name = "amount_sum"
    inherit_cache = True
    postgresql_form = "sum({0})"


class amount_max(_AmountFunction):  # noqa: N801
    """max() of amounts by value (on SQLite a text max would put '9' above '10')."""

    name = "amount_max"
    inherit_cache = True
    postgresql_form = "max({0})"


class amount_neg(_AmountFunction):  # noqa: N801
    """-amount (on SQLite, unary minus would turn the text into a number, inexact past 2**63)."""

    name = "amount_neg"
    inherit_cache = True
    postgresql_form = "-({0})"


class amount_abs(_AmountFunction):  # noqa: N801
    """abs(amount)."""

    name = "amount_abs"
    inherit_cache = True
    postgresql_form = "abs({0})"


class amount_order(FunctionElement[str]):  # noqa: N801
    """A key that orders amounts by value: the amount on PostgreSQL, a sortable text on SQLite.

    Only for ORDER BY; the value itself is read through the amount expression.
    """

    name = "amount_order"
    type = Text()
    inherit_cache = True


def _compile_sqlite(element: FunctionElement[Any], compiler: Any, **kw: Any) -> str:
    return f"{element.name}({compiler.process(element.clauses, **kw)})"


def _compile_default(element: _AmountFunction, compiler: Any, **kw: Any) -> str:
    return element.postgresql_form.format(compiler.process(element.clauses, **kw))


for _function in (amount_sum, amount_max, amount_neg, amount_abs):
    compiles(_function)(_compile_default)
    compiles(_function, "sqlite")(_compile_sqlite)


@compiles(amount_order)
def _compile_order_default(element: amount_order, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.clauses, **kw))


compiles(amount_order, "sqlite")(_compile_sqlite)


def signed_amount(is_increase: Any, amount: Any) -> Any:
    """`amount` where `is_increase` holds, else its negation: a posting's effect on a balance."""
    return type_coerce(case((is_increase, amount), else_=amount_neg(amount)), Amount())
