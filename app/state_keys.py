"""Names under which create_app puts the process's shared objects in `app.state`.

Route modules read them from there (never from module globals), so several apps can live in one
process, as they do in tests.
"""

from __future__ import annotations

from typing import Final

#: `sessionmaker[Session]` of the store.
SESSION_FACTORY: Final = "session_factory"
#: The process's `enqueue(row_ids)` (through the relay: never blocks a request).
ENQUEUE: Final = "enqueue"
#: Redis URL of the broker, or None for the in-process broker.
BROKER_URL: Final = "broker_url"
#: The store's `Engine` (readiness probes open their own short transactions on it).
ENGINE: Final = "engine"
#: Seconds the readiness probe may wait for the store's write lock.
COMMIT_BOUND_SECONDS: Final = "commit_bound_seconds"
#: The receiver's `SigningKeys` (readiness asks whether it holds a usable secret).
SIGNING_KEYS: Final = "signing_keys"
#: The `PayloadReader` RECON_PAYLOAD_SHAPES and RECON_PAYLOAD_FIELD_MAP describe (reading a body a
#: person marks as the true one, as the workers would read it).
PAYLOAD_READER: Final = "payload_reader"
#: The gateway budget and staleness ceiling (reconciliation.postings.ReadBudget): the console's
#: overview says when they cannot hold the holdings known.
READ_BUDGET: Final = "read_budget"
