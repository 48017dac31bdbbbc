"""How the rest of recon hands work to the workers without knowing Dramatiq.

The receiver calls `enqueue_process_delivery` right after committing a batch of deliveries.
Sending never fails the caller: the deliveries are already safe in the store, and if the broker
is unreachable (Redis restarting) the sweep finds them pending after the grace period and
sends them again. A lost message costs latency, never data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import structlog

#: Delivery row ids per process_delivery message.
DELIVERY_BATCH: Final = 100

log = structlog.get_logger(__name__)


def enqueue_process_delivery(delivery_pks: Sequence[int]) -> None:
    """Ask the workers to process these deliveries (row ids), in batches; never raises."""
    if not delivery_pks:
        return
    try:
        from workers.actors.inbox import process_delivery
        from workers.broker import ensure_configured

        ensure_configured()
        pks = list(delivery_pks)
        for start in range(0, len(pks), DELIVERY_BATCH):
            process_delivery.send(pks[start : start + DELIVERY_BATCH])
    except Exception as exc:  # noqa: BLE001 - the store has them; the sweep will send them
        log.warning(
            "dispatch.enqueue_failed",
            deliveries=len(delivery_pks),
            error=type(exc).__name__,
            detail=str(exc)[:300],
            recovery="the sweep re-sends pending deliveries after RECON_DELIVERY_GRACE_SECONDS",
        )
