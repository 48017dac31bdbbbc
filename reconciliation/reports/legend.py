"""What each figure means, in words short enough to print under the figures in every format.

The definitions themselves are code (`reconciliation.reports.items`, `Report.figures`); this is
their wording, one line each, kept next to them so that a change to one is a change to both.
docs/reports.md says the same at more length.
"""

from __future__ import annotations

from typing import Final

#: Figure (as in `Report.figures`) -> what it counts. `{grace}` is the notification grace.
DEFINITIONS: Final[dict[str, str]] = {
    "items": (
        "postings, money notifications and transfers we asked for whose own time falls in the "
        "window; each is matched, accepted, waiting or an exception"
    ),
    "matched": (
        "an active match links the item to its counterparts, or it needs none (a refused "
        "transfer moved nothing)"
    ),
    "accepted": (
        "accepted without a counterpart: a person decided the item needs none and said why "
        "(recon accept); a decision, not a match"
    ),
    "unmatched": "waiting + exceptions",
    "waiting": (
        "not matched yet and not late: younger than the {grace} grace, or a transfer still "
        "in flight at the provider and not past its finality deadline"
    ),
    "exceptions": (
        "not matched and needing a person: no counterpart within the {grace} grace, a "
        "transfer still in flight past its finality deadline (the finality_overdue alert), or "
        "marked for a person to decide; aged from the item's own time"
    ),
    "transfers": (
        "by the provider's isTerminal/isSuccessful: settled (terminal, successful), in flight "
        "(not terminal), refused (denied at creation), failed (terminal, not successful)"
    ),
    "fees": (
        "fees of settled transfers, on the transfer's source holding, by kind and by who paid "
        "(bearer); a fee recon could not read is counted as unknown, never as 0"
    ),
    "openAlerts": (
        "alerts open or acknowledged now that were opened before the window's end; an alert "
        "is about a condition (an item, a pair that disagrees, a balance, a delivery), so it "
        "is not a count of items"
    ),
    "moves": (
        "waiting -> matched when a pass matches it; waiting -> exception when the grace (or a "
        "transfer's finality deadline) runs out first; exception -> matched when the "
        "counterpart arrives or a person matches it; exception -> accepted when a person "
        "accepts it alone; matched or accepted -> exception when a person unmatches it"
    ),
}


def grace_words(seconds: int) -> str:
    """'15 min', '8 s', '2 h': the grace as a person says it."""
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def legend_terms(grace_seconds: int) -> list[tuple[str, str]]:
    """(term, definition) pairs, the grace filled in, in the order the report prints them."""
    grace = grace_words(grace_seconds)
    return [(term, text.format(grace=grace)) for term, text in DEFINITIONS.items()]
