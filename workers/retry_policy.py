"""What retrying a message can fix, and what it cannot.

Credentials the provider refuses (401), a capability the key lacks (403) and a request the
provider calls invalid (400) give the same answer however often they are sent; retrying them
only hides the problem for hours. Actors list these in `throws`, so Dramatiq fails the message
at once and the operator sees one clear error. Everything else (5xx, timeouts, a database that
restarted) is retried a few times by Dramatiq, and after that the sweep re-enqueues from the
store whatever is still undone.
"""

from __future__ import annotations

from typing import Final

from upstream import Forbidden, InvalidInput, Unauthorized

#: Exceptions that end a message without retry.
NOT_RETRYABLE: Final = (Unauthorized, Forbidden, InvalidInput)

#: Milliseconds, for readability of actor options.
SECOND_MS: Final = 1_000
MINUTE_MS: Final = 60_000
