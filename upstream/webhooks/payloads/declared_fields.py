"""A shape declared as data: where each of our fields sits in the body, read the same way.

Every built-in shape and the operator's field map (RECON_PAYLOAD_FIELD_MAP) is a `FieldPaths`:
a dotted path per field (`data.amountMinorUnits`, `items.0.ref`), `header:<name>` for a value a
provider puts in a header, `=<value>` for a value every body of the shape shares (`=NGN` for a
provider that names no currency), or nothing when the shape does not carry the field.
`DeclaredShape` reads any such declaration with one set of rules, so a shape learned from
configuration is held to exactly the checks of the built-in ones:

- refs are UUIDs; the account number is 6 to 20 digits;
- money is exact (invariant 5, docs/architecture.md): a major-unit amount (`"1500.50"`, or the
  JSON number 1500.50, which the reader parsed as a `Decimal`, never a float) is scaled by the
  currency's exponent, a minor-unit amount (`"150050"`) is taken as it is, both through
  `foundation.money`, and a value that does not fit the currency is refused, never rounded;
- a timestamp is ISO 8601 with a zone, or a number of epoch seconds or milliseconds when the
  shape says its timestamps are numbers;
- a money event (`MONEY_EVENTS`) must carry amount and currency, and an outcome: the body's
  status, or, where the body has none, the one its event type says (`EVENT_OUTCOMES`, or
  RECON_EVENT_OUTCOMES). A status the body does carry is kept as it is, even beside an event
  type that says otherwise: statuses are the provider's words, never compared with anything
  (matching goes by the event type, a transfer's truth is the gateway's status read), so the
  body's own word is the better evidence.

Every problem is collected, not just the first, so the alert about a shape names all its gaps.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Final, Literal

from foundation import (
    AmountError,
    CostlyNumberError,
    decimal_within,
    excerpt,
    major_to_minor,
    parse_minor_units,
    uuid_from_text,
)
from upstream.webhooks.payloads.base import (
    EVENT_OUTCOMES,
    MONEY_EVENTS,
    OUTCOME_STATUS,
    DeliveryNotification,
    NotUnderstood,
    PayloadAdapter,
    Problem,
)

AmountUnits = Literal["major", "minor"]
TimestampUnit = Literal["epoch-seconds", "epoch-millis"]

#: Prefix of a path that names a request header rather than a place in the body.
HEADER_PREFIX: Final = "header:"
#: Prefix of a constant: the value itself rather than where to find it (no path starts so).
CONSTANT_PREFIX: Final = "="

#: Longest texts the notifications table keeps (event_type, claimed_status, currency columns).
MAX_EVENT_TYPE: Final = 64
MAX_STATUS: Final = 32
#: A currency column holds a value unit's code: a currency, or `kind:asset@network#ref` for a unit
#: that is none (foundation.money.unit_code), as long as the store's unit columns.
MAX_CURRENCY: Final = 255

#: Most digits an epoch timestamp may have before its point: milliseconds of year 9999 take 15,
#: so 20 refuses nothing real and keeps `int()` from expanding `1e500000`.
MAX_EPOCH_DIGITS: Final = 20
#: Most digits an amount may have either side of its point before it is written out: more than
#: any amount recon keeps (78 digits) or any unit's places (18), and writing out `1e-99999` or
#: `1e999999999999` would cost far more than its text.
MAX_PLACES: Final = 100

#: Where epoch timestamps count from.
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

_ACCOUNT_NUMBER: Final = re.compile(r"[0-9]{6,20}")


@dataclass(frozen=True, slots=True)
class FieldPaths:
    """Where each normalised field is found; None means the shape does not carry it.

    `required` names the fields (attribute names of this class) whose absence means "this is not
    the shape": the event type and the time always, and the built-in shapes add their body id.
    """

    event_type: str
    occurred_at: str
    body_id: str | None = None
    transfer_ref: str | None = None
    receipt_ref: str | None = None
    account_ref: str | None = None
    endpoint_ref: str | None = None
    holding_ref: str | None = None
    account_number: str | None = None
    amount: str | None = None
    currency: str | None = None
    status: str | None = None
    narration: str | None = None
    amount_units: AmountUnits = "major"
    timestamp_unit: TimestampUnit = "epoch-seconds"
    required: tuple[str, ...] = ("event_type", "occurred_at")

    def paths(self) -> dict[str, str]:
        """Field name -> path, for the fields this shape carries."""
        skip = {"amount_units", "timestamp_unit", "required"}
        found = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        return {name: path for name, path in found.items() if path is not None}


class DeclaredShape(PayloadAdapter):
    """An adapter whose whole knowledge of the wire is one `FieldPaths`, and the outcome table
    (event type -> `OUTCOME_STATUS` key) that speaks for a body without a status."""

    def __init__(
        self, name: str, paths: FieldPaths, outcomes: Mapping[str, str] = EVENT_OUTCOMES
    ) -> None:
        self.name = name
        self.paths = paths
        self.status_of: Final = {event: OUTCOME_STATUS[o] for event, o in outcomes.items()}
        # Read once: a rebuild reads a million bodies, and asking the dataclass for its fields
        # on every lookup was about 40% of the reader's time.
        self.path_of: Final = paths.paths()
        # Each body path split once, for the same reason (None: a header or a constant).
        self.steps: Final = {
            name: None
            if path.startswith((HEADER_PREFIX, CONSTANT_PREFIX))
            else tuple(path.split("."))
            for name, path in self.path_of.items()
        }

    def read(
        self, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> DeliveryNotification | NotUnderstood:
        reading = _Reading(body, headers, self.paths, self.path_of, self.steps)
        return reading.result(self.name, self.status_of)


class _Reading:
    """One delivery read against one declaration; problems pile up in `problems`."""

    def __init__(
        self,
        body: Mapping[str, Any],
        headers: Mapping[str, str],
        paths: FieldPaths,
        path_of: Mapping[str, str],
        steps: Mapping[str, tuple[str, ...] | None],
    ) -> None:
        self.body, self.headers, self.paths, self.path_of = body, headers, paths, path_of
        self.steps = steps
        self.problems: list[Problem] = []

    def result(
        self, shape: str, status_of: Mapping[str, str]
    ) -> DeliveryNotification | NotUnderstood:
        p = self.paths
        raw = {name: self._found(path, self.steps[name]) for name, path in self.path_of.items()}
        marks_missing = 0
        for name in p.required:
            path = self.path_of.get(name)
            if path is not None and raw.get(name) is None:
                marks_missing += 1
                if not self._already(path):
                    self._missing(path)
        event_type = self._text(raw, "event_type", MAX_EVENT_TYPE)
        occurred_at = self._timestamp(raw.get("occurred_at"))
        currency = self._text(raw, "currency", MAX_CURRENCY)
        status = self._text(raw, "status", MAX_STATUS)
        if raw.get("status") is None and event_type is not None:
            status = status_of.get(event_type)
        if event_type in MONEY_EVENTS:
            for name in ("amount", "currency"):
                path = self.path_of.get(name, name)
                if raw.get(name) is None and not self._already(path):
                    self._missing(path, f"{event_type} must carry amount and currency")
            path = self.path_of.get("status", "status")
            if raw.get("status") is None and status is None and not self._already(path):
                why = f"{event_type} has no status, and RECON_EVENT_OUTCOMES gives it no outcome"
                self._missing(path, why)
        amount = self._amount(raw.get("amount"), currency)
        account_number = self._text(raw, "account_number", 32)
        if account_number is not None and not _ACCOUNT_NUMBER.fullmatch(account_number):
            self._invalid("account_number", f"{excerpt(account_number)} is not an account number")
            account_number = None
        refs = {
            name: self._uuid(raw, name)
            for name in (
                "transfer_ref",
                "receipt_ref",
                "account_ref",
                "endpoint_ref",
                "holding_ref",
            )
        }
        body_id = self._text(raw, "body_id", None)
        narration = self._text(raw, "narration", None)
        if self.problems or event_type is None or occurred_at is None:
            return NotUnderstood(shape, tuple(sorted(set(self.problems))), marks_missing)
        return DeliveryNotification(
            shape=shape,
            body_id=body_id,
            event_type=event_type,
            occurred_at=occurred_at,
            account_number=account_number,
            amount_minor=amount,
            currency=currency,
            claimed_status=status,
            narration=narration,
            **refs,
        )

    # --- finding values ---------------------------------------------------------------

    def _found(self, path: str, steps: tuple[str, ...] | None) -> Any:
        """`_value(path)`, walking plain objects directly: the common case, twice as fast. Any
        other step (an array index, something that is no object) is left to `_value`, which
        walks the whole path again with every rule and records the problem."""
        if steps is None:
            return self._value(path)
        here: Any = self.body
        for step in steps:
            if type(here) is not dict:
                return self._value(path)
            here = here.get(step)
            if here is None:
                return None
        return here

    def _value(self, path: str) -> Any:
        """The value at `path`; None when absent or null; a problem when a step is no object."""
        if path.startswith(CONSTANT_PREFIX):
            return path.removeprefix(CONSTANT_PREFIX)
        if path.startswith(HEADER_PREFIX):
            return self.headers.get(path.removeprefix(HEADER_PREFIX).lower())
        here: Any = self.body
        walked: list[str] = []
        for step in path.split("."):
            if isinstance(here, list) and step.isdigit():
                here = here[int(step)] if int(step) < len(here) else None
            elif isinstance(here, Mapping):
                here = here.get(step)
            else:
                where = ".".join(walked)
                self._invalid_at(where, f"{where}: expected an object, got {_kind(here)}")
                return None
            walked.append(step)
            if here is None:
                return None
        return here

    # --- problems ---------------------------------------------------------------------

    def _already(self, path: str) -> bool:
        """A problem is already recorded at `path` or at an object on the way to it."""
        return any(
            path == problem.path or path.startswith(problem.path + ".") for problem in self.problems
        )

    def _missing(self, path: str, why: str | None = None) -> None:
        detail = f"{path} is missing" + (f" ({why})" if why else "")
        self.problems.append(Problem(path, "missing", detail))

    def _invalid(self, name: str, what: str) -> None:
        path = self.path_of.get(name, name)
        self._invalid_at(path, f"{path} {what}")

    def _invalid_at(self, path: str, detail: str) -> None:
        if not self._already(path):
            self.problems.append(Problem(path, "invalid", detail))

    # --- converting values ------------------------------------------------------------

    def _text(self, raw: Mapping[str, Any], name: str, limit: int | None) -> str | None:
        value = raw.get(name)
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and name == "body_id":
            return str(value)
        if not isinstance(value, str) or not value.strip() or "\x00" in value:
            self._invalid(name, f"must be a non-empty string, got {_kind(value)} {excerpt(value)}")
            return None
        if limit is not None and len(value) > limit:
            self._invalid(name, f"is longer than {limit} characters")
            return None
        return value

    def _uuid(self, raw: Mapping[str, Any], name: str) -> uuid.UUID | None:
        value = self._text(raw, name, None)
        if value is None:
            return None
        try:
            return uuid_from_text(value)
        except ValueError:
            self._invalid(name, f"{excerpt(value)} is not a UUID")
            return None

    def _timestamp(self, value: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            try:
                parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                self._invalid("occurred_at", f"{excerpt(value)} is not an ISO 8601 timestamp")
                return None
            if parsed.tzinfo is None:
                self._invalid("occurred_at", f"{excerpt(value)} has no time zone")
                return None
            return parsed.astimezone(UTC)
        if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
            per_second = 1000 if self.paths.timestamp_unit == "epoch-millis" else 1
            try:
                # The exponent is checked first: int() of 1e500000 would expand it, for a minute.
                seconds = decimal_within(
                    Decimal(value), whole=MAX_EPOCH_DIGITS, places=MAX_PLACES, what="timestamp"
                )
                micros = int(seconds * 1_000_000 / per_second)
                return EPOCH + timedelta(microseconds=micros)
            except (OverflowError, ArithmeticError, CostlyNumberError):
                shown = excerpt(value)
                self._invalid("occurred_at", f"{shown} is not a time ({self.paths.timestamp_unit})")
                return None
        self._invalid("occurred_at", f"must be a timestamp, got {_kind(value)} {excerpt(value)}")
        return None

    def _amount(self, value: Any, currency: str | None) -> int | None:
        if value is None:
            return None
        if currency is None:
            if not self._already(self.path_of.get("currency", "currency")):
                self._invalid("amount", "is given without a currency")
            return None
        if isinstance(value, bool):
            self._invalid("amount", f"must be a number or a decimal string, got {excerpt(value)}")
            return None
        try:
            # Minor units need no exponent: a unit recon has none for (a token nobody listed in
            # RECON_UNIT_EXPONENTS) still has exact minor units. Major units need one.
            if self.paths.amount_units == "minor":
                text = str(value) if isinstance(value, int) else value
                return parse_minor_units(text)
            if isinstance(value, Decimal):
                # Its size is checked before it is written out: format() of 1e999999999999
                # would try to write a trillion digits.
                decimal_within(value, whole=MAX_PLACES, places=MAX_PLACES, what="amount")
                value = format(value, "f")  # the number's own digits: 1500.50 -> "1500.50"
            return major_to_minor(value, currency)
        except (AmountError, CostlyNumberError) as exc:
            self._invalid("amount", f"({excerpt(value)}): {exc}")
            return None


def _kind(value: Any) -> str:
    """A JSON-ish name for what was found, for the problem text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, Decimal)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__
