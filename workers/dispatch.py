"""How the rest of recon hands work to the workers without knowing Dramatiq.

The receiver calls `send_process_delivery` right after committing a batch of deliveries, from
its enqueue relay, which counts a failure (`recon_webhook_enqueue_failures_total`) and logs
once per outage. Other callers (the sweep) use `enqueue_process_delivery`, which never raises:
the deliveries are already safe in the store, and if the broker is unreachable (Redis
restarting) the sweep finds them pending after the grace period and sends them again. A lost
message costs latency, never data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import structlog

from foundation import OutageLog

#: Delivery row ids per process_delivery message from the receiver: small, so a delivery just
#: received waits for few others before its notification is written.
DELIVERY_BATCH: Final = 100

#: Delivery row ids per message when the sweep re-sends what lost messages left pending. A
#: batch is processed with a few set-wise statements whatever its size, so after an outage
#: larger batches drain faster (about 1.5x from 100 to 500 rows: fewer messages, statements
#: and commits); nobody waits on one delivery then, and 500 rows are well under a second's
#: work, far inside the actor's time limit.
RESEND_BATCH: Final = 500

log = structlog.get_logger(__name__)

#: One line when sending starts failing in this process and one when it works again: during a
#: Redis restart every call fails, and a warning per call buried everything else.
_outage: Final = OutageLog(log, "dispatch.enqueue_failed", "dispatch.enqueue_recovered")


class EnqueueError(Exception):
    """The broker did not take the message; the rows stay pending for the sweep."""


def send_process_delivery(delivery_pks: Sequence[int], batch: int = DELIVERY_BATCH) -> None:
    """Ask the workers to process these deliveries (row ids), `batch` to a message; raise
    EnqueueError when the broker does not take them (the caller counts it)."""
    if not delivery_pks:
        return
    try:
        from workers.actors.inbox import process_delivery
        from workers.broker import ensure_configured

        ensure_configured()
        pks = list(delivery_pks)
        for start in range(0, len(pks), batch):
            process_delivery.send(pks[start : start + batch])
    except Exception as exc:  # whatever the broker raised, it is one failure
        raise EnqueueError(f"{type(exc).__name__}: {str(exc)[:300]}") from exc


def enqueue_process_delivery(delivery_pks: Sequence[int]) -> None:
    """`send_process_delivery` that never raises; a failure is logged once per outage."""
    try:
        send_process_delivery(delivery_pks)
    except EnqueueError as exc:
        _outage.failed(
            exc,
            items=len(delivery_pks),
            recovery="the sweep re-sends pending deliveries after RECON_DELIVERY_GRACE_SECONDS",
        )
    else:
        if delivery_pks:
            _outage.succeeded()
