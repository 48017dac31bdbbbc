"""The answer of any API route while the store is down: 503 with a body that says so.

Without it a lost database reaches Litestar as an unhandled OperationalError and the admin API
answers 500, which reads as a bug in recon and tells a client nothing about retrying. A 503
with Retry-After says what is true: the service is there, its store is not, try again.
"""

from __future__ import annotations

from typing import Any, Final

import structlog
from litestar import Request, Response
from sqlalchemy.exc import OperationalError

#: Seconds a client is asked to wait before retrying.
RETRY_AFTER_SECONDS: Final = 5

log = structlog.get_logger(__name__)


def store_unavailable(
    request: Request[Any, Any, Any], exc: OperationalError
) -> Response[dict[str, str]]:
    """503 naming the store as the cause; the driver's message stays in the log (it may name
    hosts and users), never in the answer."""
    log.warning(
        "web.store_unavailable",
        path=request.url.path,
        error=type(exc.orig).__name__ if exc.orig is not None else type(exc).__name__,
    )
    return Response(
        {
            "error": "store_unavailable",
            "detail": "the database is not reachable or not writable; retry later "
            "(see /health/parts)",
        },
        status_code=503,
        headers={"retry-after": str(RETRY_AFTER_SECONDS)},
    )
