"""How the console's templates say things to people: dates, ages, money, labels.

Registered on the Jinja environment as filters (`register_filters`), so a template writes
`{{ alert.opened_at | when }}` and never formats a value itself. Times read as
'22 Nov 2026, 10:04:05 UTC' (no microseconds), ages as '3 min', keys as words.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, Final

from jinja2 import Environment
from markupsafe import Markup

from foundation import format_money, printable
from reconciliation.store import utcnow

#: Words that read better in capitals when a key becomes a label.
ACRONYMS: Final = {"id": "ID", "ref": "ref", "url": "URL", "kyc": "KYC", "sha256": "SHA-256"}
#: Shown where a value is absent (an en dash, written as an escape so no linter mistakes it).
NOTHING: Final = "\u2013"
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def when(value: datetime | str | None) -> str:
    """'22 Nov 2026, 10:04:05 UTC', or an en dash for nothing."""
    if value is None or value == "":
        return NOTHING
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return str(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%d %b %Y, %H:%M:%S UTC")


def duration(seconds: float | None) -> str:
    """'45 s', '12 min', '3 h 5 min', '4 days'."""
    if seconds is None:
        return NOTHING
    total = int(abs(seconds))
    if total < 60:
        return f"{total} s"
    minutes = total // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    return f"{hours // 24} days"


def age(value: datetime | None, now: datetime | None = None) -> str:
    """How long ago: '3 min ago', or 'never'."""
    if value is None:
        return "never"
    seconds = ((now or utcnow()) - value).total_seconds()
    return "just now" if seconds < 1 else f"{duration(seconds)} ago"


def millis(value: int | None) -> str:
    """A duration given in milliseconds: '850 ms', '12 s'."""
    if value is None:
        return "not recorded"
    return f"{value} ms" if value < 10_000 else duration(value / 1000)


def money(amount: int | str | None, currency: str | None = None, signed: bool = False) -> str:
    """An amount for people; evidence keeps amounts as strings of digits (exact in JSON)."""
    if amount is None:
        return NOTHING
    return format_money(int(amount), currency, signed=signed)


def label(key: object) -> str:
    """'delivery_body_conflict' or 'quarantinedRowId' -> 'Delivery body conflict' / 'Quarantined row ID'."""
    words = _CAMEL.sub(" ", str(key)).replace("_", " ").replace("-", " ").split()
    shown = [ACRONYMS.get(w.lower(), w.lower()) for w in words]
    text = " ".join(shown)
    return text[:1].upper() + text[1:]


def count(value: int | None) -> str:
    return NOTHING if value is None else f"{value:,}"


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def shown(value: Any) -> Any:
    """Every value a template writes, as the page shows it: text with its control characters,
    bidirectional overrides and zero-width characters written as visible escapes
    (foundation.untrusted_text), line breaks kept. A provider's account name with U+202E would
    otherwise reverse the text after it on the operator's screen. Markup the console made
    itself (a chart) and non-text values pass as they are; Jinja then HTML-escapes the text."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return printable(value, keep_newlines=True)
    return value


def register_filters(environment: Environment) -> None:
    """Put every filter above on the console's Jinja environment, and `shown` on every value
    it writes (the one place the console decides how untrusted text is displayed)."""
    environment.finalize = shown
    environment.filters.update(
        when=when,
        duration=duration,
        age=age,
        millis=millis,
        money=money,
        label=label,
        count=count,
        pretty_json=pretty_json,
    )
