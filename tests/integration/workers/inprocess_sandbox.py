"""The sandbox in this process for the activity reader's tests: any variant, any ledger, crashes.

`InProcessSandbox` puts a `SandboxState` (no background thread) behind the in-process HTTP
transport of `asgi_transport.py`, so recon's gateway client talks HTTP to it with no
socket; the transport counts activity requests by answer and can kill the reader on its n-th
one. Ledgers are written straight into the sandbox's holdings (`add_postings`), with as many
equal `postedAt` values as a test wants. `crash_on_commit` makes the store's n-th commit fail
as a dying process would, so a page's write is lost with its position.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session, sessionmaker

from foundation import Settings, load_settings
from reconciliation.postings.activity import LEASE_SECONDS
from reconciliation.store.models import Base
from sandbox.app import create_app
from sandbox.bulk import BULK_CURRENCY, BULK_OWNER_KIND
from sandbox.config import SandboxConfig
from sandbox.endpoints import COLLECTION_CHILD
from sandbox.ids import as_v4
from sandbox.ledger import CREDIT, Holding, append_row, posting_time
from sandbox.state import SandboxState
from sandbox.variants import ProviderVariant
from tests.integration.workers.asgi_transport import InProcessASGITransport
from tests.integration.workers.ledger_compare import sandbox_ledger, stored_ledger
from workers import Runtime
from workers.actors.activity import read_activity

ACTIVITY_PATH = "/v1/balances/activity"
#: Postings start here; a few distinct instants make many equal postedAt values.
BASE_MS = 1_790_000_000_000


class Crash(BaseException):
    """The process dying, as far as the code it interrupts can tell (nothing catches it)."""


class KillableTransport(httpx.BaseTransport):
    """Hands requests to the in-process app; counts activity answers; may die on one."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.answers: Counter[int] = Counter()
        self.directions: Counter[str] = Counter()
        self.kill_at: int | None = None
        self.activity_requests = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != ACTIVITY_PATH:
            return self.inner.handle_request(request)
        self.activity_requests += 1
        if self.kill_at is not None and self.activity_requests >= self.kill_at:
            self.kill_at = None
            raise Crash("killed while reading a page")
        response = self.inner.handle_request(request)
        self.answers[response.status_code] += 1
        self.directions[request.url.params.get("sortDirection", "")] += 1
        return response


class InProcessSandbox:
    """One sandbox state and app for a test; `reset(variant)` starts a new provider and world."""

    def __init__(self, variant: ProviderVariant) -> None:
        self.state = SandboxState(
            SandboxConfig(run_background=False, variant=variant, projection_lag_seconds=0.0)
        )
        self._app_transport = InProcessASGITransport(create_app(state=self.state)).start()
        self.transport = KillableTransport(self._app_transport)
        self.rng = random.Random(0)

    def reset(self, variant: ProviderVariant, seed: int = 0) -> None:
        """A new world (no endpoints, no postings) played as `variant`."""
        self.state.reset()
        self.state.config.variant = variant
        self.transport.answers.clear()
        self.transport.directions.clear()
        self.transport.activity_requests = 0
        self.transport.kill_at = None
        self.rng = random.Random(seed)

    def close(self) -> None:
        self._app_transport.close()
        self.state.close()

    def new_holding(self) -> str:
        """An endpoint with one holding and no postings; its holding ref."""
        owner = f"{as_v4(self.rng.getrandbits(128)):032x}"
        owner_ref = f"{owner[:8]}-{owner[8:12]}-{owner[12:16]}-{owner[16:20]}-{owner[20:]}"
        ep = self.state.create_endpoint(
            COLLECTION_CHILD, owner_ref, BULK_OWNER_KIND, BULK_CURRENCY, emit=False
        )
        return ep.holding_ref

    def add_postings(self, holding_ref: str, times: list[int], *, anywhere_in_ties: bool) -> None:
        """One posting per offset in `times` (ms after the holding's newest, >= 0).

        With `anywhere_in_ties` a posting at an instant already present may sort anywhere among
        its equals (a provider whose tie order is not ours to know); without, every new posting
        sorts after all that are there, as the sandbox's own postings do.
        """
        bits = self.rng.getrandbits
        with self.state.lock:
            holding: Holding = self.state.holdings[holding_ref]
            for offset in times:
                newest = holding.rows[-1][0] if holding.rows else BASE_MS
                receipt, line, journal = as_v4(bits(128)), as_v4(bits(128)), as_v4(bits(128))
                posted = newest + offset
                if not anywhere_in_ties:
                    posted = posting_time([holding], posted, receipt, [line])
                row = (posted, receipt, line, journal, self.rng.randrange(1, 10_000), CREDIT)
                append_row(holding, row, 0)

    def assert_stored(self, sessions: sessionmaker[Session], holding_refs: list[str]) -> int:
        """Each holding's postings stored exactly once, nothing else; returns how many."""
        want = sandbox_ledger(self.state, holding_refs)
        got = stored_ledger(sessions)
        for ref in holding_refs:
            assert sorted(got.get(ref, [])) == sorted(want[ref]), (
                f"holding {ref}: {len(got.get(ref, []))} stored, {len(want[ref])} posted"
            )
        return sum(len(v) for v in want.values())


@contextmanager
def inprocess_sandbox(variant: ProviderVariant) -> Iterator[InProcessSandbox]:
    sandbox = InProcessSandbox(variant)
    try:
        yield sandbox
    finally:
        sandbox.close()


def reader_settings(env: dict[str, str], page_size: int) -> Settings:
    """Settings for a reader of the in-process sandbox asking `page_size` per page."""
    return load_settings(
        {
            **env,
            "RECON_GATEWAY_URL": "http://sandbox.invalid",
            "RECON_GATEWAY_RPS": "1000000",
            "RECON_ACTIVITY_PAGE_SIZE": str(page_size),
        }
    )


def empty_store(engine: Engine) -> None:
    """Delete every row (a new provider, a new store), keeping the migrated schema."""
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(text(f'DELETE FROM "{table.name}"'))


class StepClock:
    """The reader's clock: moves only when told (past a dead reader's lease, say)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 22, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@contextmanager
def crash_on_commit(engine: Engine, nth: int) -> Iterator[dict[str, Any]]:
    """The engine's `nth` commit from now fails before it reaches the database."""
    seen = {"commits": 0, "fired": False}

    def before_commit(connection: Any) -> None:
        seen["commits"] += 1
        if seen["commits"] == nth and not seen["fired"]:
            seen["fired"] = True
            raise Crash("died while committing")

    event.listen(engine, "commit", before_commit)
    try:
        yield seen
    finally:
        event.remove(engine, "commit", before_commit)


def read_until_caught_up(
    rt: Runtime, holding_id: int, clock: StepClock, *, page_budget: int = 1000
) -> tuple[int, int]:
    """Read one holding until a read ends caught up; returns (messages, crashes survived).

    A `Crash` ends a read the way a dead worker does; the next read comes after its lease has
    expired, as it would on another worker.
    """
    messages = crashes = 0
    while True:
        messages += 1
        assert messages < 500, "the reader does not converge"
        try:
            result = read_activity(rt, holding_id, page_budget=page_budget)
        except Crash:
            crashes += 1
            clock.advance(LEASE_SECONDS + 1)
            continue
        if result.caught_up:
            return messages, crashes
