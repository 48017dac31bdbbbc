"""Untrusted text made safe to print to a terminal or to put in a log line.

Provider data (ids, references, narrations, headers) and the headers of unauthenticated
requests are chosen by someone else. Printed raw, an escape byte in them drives the operator's
terminal (moves the cursor, rewrites earlier lines, sets a hyperlink); logged whole, a 100 KB
header turns every refused request into 100 KB of log. These functions show every character a
person can read as itself and every control character as a visible `\\xNN` escape, and cut a
value to a stated length with a note saying how much was cut.
"""

from __future__ import annotations

import html
import re
from typing import Final

#: Longest value (in characters) one field of a log line may carry when a request that nobody
#: authenticated chose it: enough for any real id (a UUID is 36, a KSUID 27), far too little
#: to flood a log.
LOG_VALUE_LIMIT: Final = 128

#: The same, less line breaks and tabs: what a multi-line value may keep.
_UNPRINTABLE_IN_LINES: Final = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]"
)

#: C0 and C1 controls, DEL, and the Unicode format characters that reorder or hide text
#: (bidirectional overrides, zero-width joiners): none of them has a place in an id or a name.
_UNPRINTABLE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, *, keep_newlines: bool = False) -> str:
    """`value` as text whose control characters are shown as escapes, never sent raw.

    `keep_newlines` keeps line breaks and tabs, for multi-line values such as a delivery body
    shown in full or a whole line of output; everything else a terminal acts on is escaped
    (a carriage return too: it would let a value overwrite the start of its line).
    """
    text = value if isinstance(value, str) else str(value)
    pattern = _UNPRINTABLE_IN_LINES if keep_newlines else _UNPRINTABLE
    return pattern.sub(_escaped, text)


def bounded(value: object, limit: int = LOG_VALUE_LIMIT) -> str | None:
    """A printable value cut to `limit` characters, saying how long it was; None stays None."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        return f"{printable(text[:limit])}...(cut, {len(text)} characters)"
    return printable(text)


def html_text(value: object) -> str:
    """`value` for an HTML page recon writes itself (the HTML report and its charts): printable
    (control characters, bidirectional overrides and zero-width characters as visible escapes,
    line breaks kept), then HTML-escaped. A provider's name with U+202E would otherwise reverse
    what follows it on the reader's screen."""
    return html.escape(printable(value, keep_newlines=True))
