"""Bulk scenario builder: many postings straight into the ledger, for benchmarks.

It bypasses the HTTP routes, the scheduler and webhooks on purpose: a million inbound-credit
legs over a thousand collection-child holdings are made as plain int tuples and sorted once per
holding. Posting times fall on a coarse grid in the past, so equal ``postedAt`` values are
common (the cursor's tie-break is exercised) and later live postings always sort after them.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from sandbox.endpoints import COLLECTION_CHILD
from sandbox.ids import as_v4
from sandbox.ledger import CREDIT, Holding, Row, prerender

if TYPE_CHECKING:
    from sandbox.state import SandboxState

BULK_CURRENCY = "NGN"
BULK_OWNER_KIND = "business-entity"
SLOT_MS = 1000  # postings share whole seconds: ~3 per slot on average
SPAN_DAYS = 30


def build_bulk(
    state: SandboxState, *, holdings: int = 1000, postings: int = 1_000_000, seed: int | None = None
) -> list[dict[str, str]]:
    """Create ``holdings`` endpoints and spread ``postings`` over them; return their refs."""
    if holdings < 1 or postings < 0:
        raise ValueError("holdings must be >= 1 and postings >= 0")
    rng = random.Random(f"bulk:{state.config.seed if seed is None else seed}")
    bits = rng.getrandbits
    randrange = rng.randrange
    made: list[dict[str, str]] = []
    with state.lock:
        # Whole days before today's midnight: the same seed gives the same postings all day.
        base = (state.clock.now_ms() // 86_400_000 - SPAN_DAYS) * 86_400_000
        per, extra = divmod(postings, holdings)
        for index in range(holdings):
            owner = f"{as_v4(bits(128)):032x}"
            owner_ref = f"{owner[:8]}-{owner[8:12]}-{owner[12:16]}-{owner[16:20]}-{owner[20:]}"
            ep = state.create_endpoint(
                COLLECTION_CHILD, owner_ref, BULK_OWNER_KIND, BULK_CURRENCY, emit=False
            )
            holding: Holding = state.holdings[ep.holding_ref]
            count = per + (1 if index < extra else 0)
            slots = max(1, count // 3)
            step = max(1, (SPAN_DAYS * 86_400_000) // (slots * SLOT_MS)) * SLOT_MS
            rows: list[Row] = [
                (
                    base + randrange(slots) * step,
                    as_v4(bits(128)),
                    as_v4(bits(128)),
                    as_v4(bits(128)),
                    randrange(100, 10_000_000),
                    CREDIT,
                )
                for _ in range(count)
            ]
            holding.load_sorted(rows)
            made.append(
                {
                    "accountRef": ep.account_ref,
                    "endpointRef": ep.endpoint_ref,
                    "holdingRef": ep.holding_ref,
                    "accountNumber": ep.locator.account_number if ep.locator else "",
                }
            )
    return made


def prerender_activity(state: SandboxState) -> None:
    """Render every posting's activity entry ahead of reads (see ``sandbox.ledger.prerender``).

    Separate from ``build_bulk`` because it roughly doubles the world's memory: only the
    catch-up benchmark, which measures the reader and not the sandbox, wants it.
    """
    with state.lock:
        for holding in state.holdings.values():
            prerender(holding)
