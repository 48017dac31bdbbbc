"""`POST /transfers` and `POST /transfers/{ref}/track`: transfers for the company's own systems.

Admin token, like every operator route. Each handler calls the same service as `recon transfer`
(reconciliation.operator.provider_actions, through app.operator_door): the intent is recorded
before the request goes out, with its one audit row naming the request's `by` (else the admin
token), the answer after, and the transfer is polled to terminal by the workers.

A caller should send its own `Idempotency-Key` (a UUID): a retry under it is answered from the
store once the gateway has answered, and resent under the recorded gateway key while the first
answer is unknown, so a retried call never creates a second transfer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Annotated, Any, Final, Literal

import msgspec
from litestar import Request, Response, Router, post
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, HeaderParameter, JSONBody

from app import state_keys
from app.auth import admin_guard
from app.operator_door import perform_at_provider
from foundation import AmountError, Settings, check_digits
from reconciliation.operator import provider_actions
from reconciliation.transfers import (
    ClientKeyReusedError,
    PreviouslyRefusedError,
    RequestedTransfer,
    StoreIdempotencyKeys,
    TrackedTransfer,
)
from upstream import (
    Conflict,
    Destination,
    Forbidden,
    GatewayClient,
    HoldingAddress,
    InvalidInput,
    NotFound,
    ProviderError,
    RateLimited,
    RetryPolicy,
    TransferAccepted,
    TransferDenied,
    TransferRequest,
    Unauthorized,
    Unavailable,
    ValueUnit,
    fee_instruction,
)

#: A caller is waiting on the answer: a few quick retries, then an honest "unknown".
API_RETRY: Final = RetryPolicy(max_attempts=4, base_delay=0.2, max_delay=2.0, deadline=20.0)


class HoldingIn(msgspec.Struct, frozen=True, rename="camel"):
    """One balance: its account, endpoint and holding references."""

    account_ref: uuid.UUID
    endpoint_ref: uuid.UUID
    holding_ref: uuid.UUID

    def address(self) -> HoldingAddress:
        return HoldingAddress(
            account_ref=self.account_ref,
            endpoint_ref=self.endpoint_ref,
            holding_ref=self.holding_ref,
        )


class TransferIn(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A transfer to ask for: amounts in integer minor units (a JSON number without fraction)."""

    source: HoldingIn
    destination: HoldingIn
    amount_minor_units: Annotated[int, msgspec.Meta(gt=0)]
    currency: Annotated[str, msgspec.Meta(pattern="^[A-Z]{3}$")] = "NGN"
    #: Who pays the application fee, sent as the fee instruction (upstream.wire.fees).
    fee_bearer: Literal["sender_pays", "application_pays", "receiver_pays", "split"] | None = None
    #: A quote `value` as the gateway's quote read returned it, passed back whole: a fee
    #: charged other than its fee is then a fee_mismatch.
    accepted_quote: dict[str, Any] | None = None
    #: Who asks, for the audit trail (the admin token names no one); not part of the request
    #: the gateway sees, so a retry naming someone else is still the same request.
    by: str | None = None

    def request(self) -> TransferRequest:
        check_digits(self.amount_minor_units)  # AmountError (400) past what the store keeps
        return TransferRequest(
            source=self.source.address(),
            destination=Destination.internal(self.destination.address()),
            value_unit=ValueUnit.fiat(self.currency),
            amount_minor_units=self.amount_minor_units,
            fee_instruction=fee_instruction(self.fee_bearer) if self.fee_bearer else None,
        )


class TrackIn(msgspec.Struct, frozen=True):
    """Who asks to follow a transfer, for the audit trail; the body is optional."""

    by: str | None = None


class TransferOut(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What became of the request; `answeredFromStore` when a retry found it answered."""

    outcome: str
    transfer_ref: uuid.UUID
    idempotency_key: uuid.UUID
    stage: str | None
    denial_reason: str | None
    answered_from_store: bool

    @classmethod
    def of(cls, done: RequestedTransfer) -> TransferOut:
        creation = done.creation
        stage = creation.transfer.stage if isinstance(creation, TransferAccepted) else None
        if isinstance(creation, TransferDenied):
            stage = creation.transfer.stage
        return cls(
            outcome=done.outcome,
            transfer_ref=done.transfer_ref,
            idempotency_key=done.idempotency_key,
            stage=stage,
            denial_reason=done.denial_reason,
            answered_from_store=creation is None,
        )


class TrackedOut(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A transfer now followed until terminal, and its status when asked."""

    transfer_ref: uuid.UUID
    origin: str
    newly_tracked: bool
    status: str | None
    is_terminal: bool
    is_successful: bool | None

    @classmethod
    def of(cls, tracked: TrackedTransfer) -> TrackedOut:
        return cls(
            transfer_ref=tracked.transfer_ref,
            origin=tracked.origin,
            newly_tracked=tracked.newly_tracked,
            status=tracked.status,
            is_terminal=tracked.is_terminal,
            is_successful=tracked.is_successful,
        )


@post("/transfers", sync_to_thread=True, status_code=200)
def create_transfer(
    data: JSONBody[TransferIn],
    state: State,
    gateway: NamedDependency[GatewayClient],
    client_key: Annotated[uuid.UUID | None, HeaderParameter(name="Idempotency-Key")] = None,
) -> TransferOut:
    """Ask the gateway for a transfer and follow it: reserved, denied or replayed (all 200)."""
    done = perform_at_provider(
        state,
        data.by,
        provider_actions.request_transfer,
        gateway,
        data.request(),
        client_key=client_key,
        accepted_quote=data.accepted_quote,
    )
    return TransferOut.of(done)


@post("/transfers/{transfer_ref:uuid}/track", sync_to_thread=True, status_code=200)
def track(
    transfer_ref: FromPath[uuid.UUID],
    state: State,
    gateway: NamedDependency[GatewayClient],
    data: JSONBody[TrackIn | None] = None,
) -> TrackedOut:
    """Follow a transfer created elsewhere (origin `imported`) until its status is terminal."""
    by = data.by if data else None
    return TrackedOut.of(
        perform_at_provider(state, by, provider_actions.track_transfer, gateway, transfer_ref)
    )


def _problem(status: int, detail: str) -> Response[dict[str, Any]]:
    return Response({"status_code": status, "detail": detail}, status_code=status)


#: (errors, HTTP status, what the caller should do) for each refusal, most specific first.
_REFUSALS: Final[tuple[tuple[tuple[type[Exception], ...], int, str], ...]] = (
    ((ClientKeyReusedError,), 409, ""),
    ((AmountError,), 400, ""),
    ((PreviouslyRefusedError,), 422, ""),
    ((NotFound,), 404, ""),
    ((InvalidInput, Conflict), 422, " Correct the request; the same one will be refused again."),
    (
        (Unavailable, RateLimited),
        503,
        " The outcome is unknown and the intent is recorded: retry with the same body and "
        "Idempotency-Key; nothing moves twice.",
    ),
    ((Unauthorized, Forbidden), 502, " recon's gateway credentials were refused."),
    ((ProviderError,), 502, ""),
)


def _refused(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    """A clear answer for every typed failure of the service or the gateway (never a 500)."""
    for errors, status, advice in _REFUSALS:
        if isinstance(exc, errors):
            return _problem(status, f"{exc}{advice}")
    raise exc


def routes(settings: Settings) -> Router:
    """The transfer routes, behind the admin guard, with a gateway client per request."""

    def gateway(state: State) -> Iterator[GatewayClient]:
        keys = StoreIdempotencyKeys(state[state_keys.SESSION_FACTORY])
        with GatewayClient(
            settings.provider.gateway_url,
            settings.provider.gateway_api_key.reveal(),
            idempotency=keys,
            retry=API_RETRY,
        ) as client:
            yield client

    handled: tuple[type[Exception], ...] = (
        AmountError,
        ClientKeyReusedError,
        PreviouslyRefusedError,
        ProviderError,
    )
    return Router(
        path="/",
        route_handlers=[create_transfer, track],
        guards=[admin_guard],
        dependencies={
            # A generator: the client is closed once the response is sent.
            "gateway": Provide(gateway),
        },
        exception_handlers=dict.fromkeys(handled, _refused),
        tags=["transfers"],
    )
