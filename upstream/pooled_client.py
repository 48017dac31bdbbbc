"""What both provider clients share beyond the transport: their lifetime and their throttle.

The gateway and company clients differ in credentials, envelopes and retry rules, all of which
`HttpCore` takes as arguments; what is left in common is owning that one core (its pooled
connections closed with the client) and turning an optional rate into a token bucket.
"""

from __future__ import annotations

from typing import Self

from upstream.throttle import Throttle
from upstream.transport import HttpCore


class PooledClient:
    """A client that owns one `HttpCore`: usable as a context manager, closed once done."""

    _core: HttpCore

    def __repr__(self) -> str:
        # The base URL only: credentials never appear in a repr.
        return f"{type(self).__name__}({self._core.base_url!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release pooled connections."""
        self._core.close()


def optional_throttle(requests_per_second: float | None) -> Throttle | None:
    """A token bucket for `requests_per_second` (bursts of about one second), or none."""
    if not requests_per_second:
        return None
    return Throttle(requests_per_second, burst=max(1, round(requests_per_second)))
