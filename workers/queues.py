"""Queue names and priorities: which work waits behind which.

Deliveries and scheduler ticks are small and latency-sensitive; polling can be a long
catch-up of thousands of pages. They get their own queues (each consumed separately, so a
backlog in one never hides another) and a lower priority number runs first when a worker's
threads are all busy.
"""

from __future__ import annotations

from typing import Final

#: process_delivery: webhook inbox to notifications.
INBOX: Final = "recon_inbox"
#: Readers of the gateway: activity, transfers, balances, discovery, subscription check.
POLLING: Final = "recon_polling"
#: Periodic ticks and the sweep: they only look at the store and enqueue.
TICKS: Final = "recon_ticks"

ALL: Final = (INBOX, POLLING, TICKS)

#: Dramatiq priorities (lower runs first among messages already fetched by one worker).
PRIORITY_URGENT: Final = 0
PRIORITY_BULK: Final = 10
