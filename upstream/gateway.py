"""The transfer gateway client (`{base}/v1`): one method per operation of the spec.

Reads are retried freely. Every write asks `IdempotencyKeys` for its key first (recorded before
the request goes out), sends it as `Idempotency-Key`, retries only under that same key, and
closes the key when the gateway has answered for good. `ReservationDenied` is a value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any
from uuid import UUID

import msgspec

from upstream.activity import (
    OLDEST_FIRST,
    ActivityCursor,
    ActivityPage,
    check_paging,
    iterate_pages,
    parse_activity_page,
)
from upstream.gateway_base import CAPABILITIES, RESUME_REASONS, SUSPEND_REASONS, read_problem
from upstream.gateway_endpoints import EndpointOperations
from upstream.idempotency import Outcome
from upstream.wire.balances import BalanceSnapshot, CreditRequest, Simulation
from upstream.wire.common import HoldingAddress, Result
from upstream.wire.environment import EnvironmentStatus
from upstream.wire.evidence import merge_evidence
from upstream.wire.replays import WriteReplayed
from upstream.wire.transfers import (
    TRANSFER_CREATE,
    Quote,
    Replay,
    Stage,
    Transfer,
    TransferAccepted,
    TransferCreation,
    TransferDenied,
    TransferReplayed,
    TransferRequest,
    TransferStatus,
)

__all__ = ["CAPABILITIES", "RESUME_REASONS", "SUSPEND_REASONS", "GatewayClient", "read_problem"]


class GatewayClient(EndpointOperations):
    """Typed, resilient client for the transfer gateway. Thread-safe; close() when done.

    Endpoint operations come from `EndpointOperations`; construction from `GatewayBase`.
    """

    # -- transfers --------------------------------------------------------------------------

    def create_transfer(
        self,
        request: TransferRequest,
        *,
        accepted_quote: Mapping[str, Any] | None = None,
        before_send: Callable[[UUID], None] | None = None,
    ) -> TransferCreation:
        """POST /transfers. Accepted (202), denied (200, a value) or replayed (same key).

        `before_send(key)` runs once the Idempotency-Key is recorded and before the request goes
        out, so a caller can record its intent under that key (reconciliation.transfers).
        """
        body = request.to_wire(accepted_quote)
        key, env = self._write(TRANSFER_CREATE, "/transfers", body, body, before_send=before_send)
        if env.body.get("replay") is not None:
            replay = env.read(Replay, "replay").value
            self._keys.completed(
                key, Outcome.REPLAYED, str(replay.transfer_ref), http_status=env.http_status
            )
            return TransferReplayed(
                replay=replay,
                idempotency_key=key,
                http_status=env.http_status,
                evidence=env.all_evidence("replay"),
            )
        transfer = env.read(Transfer, "transfer").value
        evidence = env.all_evidence("transfer")
        if transfer.stage == Stage.RESERVATION_DENIED:
            self._keys.completed(
                key, Outcome.DENIED, str(transfer.transfer_ref), http_status=env.http_status
            )
            return TransferDenied(
                transfer=transfer,
                idempotency_key=key,
                http_status=env.http_status,
                evidence=evidence,
            )
        self._keys.completed(
            key, Outcome.ACCEPTED, str(transfer.transfer_ref), http_status=env.http_status
        )
        return TransferAccepted(
            transfer=transfer, idempotency_key=key, http_status=env.http_status, evidence=evidence
        )

    def quote_transfer(self, request: TransferRequest) -> Result[Quote]:
        """POST /transfers/quote: fees and totals; reserves nothing, so it is a (safe) read."""
        env = self._read("transfer.quote", "POST", "/transfers/quote", body=request.to_wire())
        quote = env.read(Quote)
        wire = env.section()[0].value
        return quote.carrying(msgspec.structs.replace(quote.value, wire=wire))

    def transfer_status(self, transfer_ref: UUID) -> Result[TransferStatus]:
        """GET /transfers/{ref}/status: where the transfer is and whether it is terminal."""
        env = self._read("transfer.status", "GET", f"/transfers/{transfer_ref}/status")
        return env.read(TransferStatus)

    # -- environment, balances, sandbox -----------------------------------------------------

    def environment(self) -> Result[EnvironmentStatus]:
        """GET /environment: which environment the key is scoped to."""
        return self._read("environment.read", "GET", "/environment").read(EnvironmentStatus)

    def balance(
        self, account_ref: UUID, endpoint_ref: UUID, holding_ref: UUID | None = None
    ) -> Result[BalanceSnapshot]:
        """GET /balances/current: a point-in-time snapshot."""
        params = {"accountRef": str(account_ref), "endpointRef": str(endpoint_ref)}
        if holding_ref is not None:
            params["holdingRef"] = str(holding_ref)
        env = self._read("balance.current", "GET", "/balances/current", params=params)
        return env.read(BalanceSnapshot)

    def activity_page(
        self,
        holding: HoldingAddress,
        cursor: ActivityCursor | None = None,
        *,
        page_size: int = 200,
        sort_direction: str = OLDEST_FIRST,
    ) -> ActivityPage:
        """GET /balances/activity: one page after `cursor` (from the start when None)."""
        check_paging(cursor, page_size, sort_direction)
        params = {
            "accountRef": str(holding.account_ref),
            "endpointRef": str(holding.endpoint_ref),
            "holdingRef": str(holding.holding_ref),
            "pageSize": str(page_size),
            "sortDirection": sort_direction,
        }
        if cursor is not None:
            params.update(cursor.as_query())
        env = self._read("balance.activity", "GET", "/balances/activity", params=params)
        section, where = env.section()
        return parse_activity_page(
            section.value,
            where,
            holding=holding,
            requested=cursor,
            page_size=page_size,
            sort_direction=sort_direction,
            http_status=env.http_status,
            evidence=merge_evidence(env.evidence, section.evidence),
        )

    def iter_activity(
        self,
        account_ref: UUID,
        endpoint_ref: UUID,
        holding_ref: UUID,
        cursor: ActivityCursor | None = None,
        page_size: int = 200,
        sort_direction: str = OLDEST_FIRST,
    ) -> Iterator[ActivityPage]:
        """Pages of postings, one request each, to the provider's last (`ActivityPage.ends_read`)."""
        holding = HoldingAddress(
            account_ref=account_ref, endpoint_ref=endpoint_ref, holding_ref=holding_ref
        )
        check_paging(cursor, page_size, sort_direction)
        return iterate_pages(
            lambda c: self.activity_page(
                holding, c, page_size=page_size, sort_direction=sort_direction
            ),
            cursor,
        )

    def simulate_inbound_credit(self, request: CreditRequest) -> Result[Simulation] | WriteReplayed:
        """POST /sandbox/inbound-credits (sandbox keys only): an inbound credit arrives.

        A repeated key may be answered with a replay record (`WriteReplayed`): the credit was
        already taken in, and it is not credited twice.
        """
        body = request.to_wire()
        key, env = self._write("sandbox.inbound_credit", "/sandbox/inbound-credits", body, body)
        if replayed := self._replay_of("sandbox.inbound_credit", key, env):
            return replayed
        result = env.read(Simulation, "simulation", key)
        self._keys.completed(
            key, Outcome.ACCEPTED, str(result.value.simulation_ref), http_status=env.http_status
        )
        return result
