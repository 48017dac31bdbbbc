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

from foundation.quiet_logs import OutageLog

#: Delivery row ids per process_delivery message.
DELIVERY_BATCH: Final = 100

log = structlog.get_logger(__name__)

#: One line when sending starts failing in this process and one when it works again: during a
#: Redis restart every call fails, and a warning per call buried everything else.
_outage: Final = OutageLog(log, "dispatch.enqueue_failed", "dispatch.enqueue_recovered")


class EnqueueError(Exception):
    """The broker did not take the message; the rows stay pending for the sweep."""


def send_process_delivery(delivery_pks: Sequence[int]) -> None:
    """Ask the workers to process these deliveries (row ids), in batches; raise EnqueueError
    when the broker does not take them (the caller counts it)."""
    if not delivery_pks:
        return
    try:
        from workers.actors.inbox import process_delivery
        from workers.broker import ensure_configured

        ensure_configured()
        pks = list(delivery_pks)
        for start in range(0, len(pks), DELIVERY_BATCH):
            process_delivery.send(pks[start : start + DELIVERY_BATCH])
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
