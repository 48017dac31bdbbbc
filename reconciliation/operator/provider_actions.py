"""A person's actions that ask the provider for something, each with its one audit row.

Asking for a transfer, following one made elsewhere, suspending or resuming an endpoint,
registering the webhook or rotating its secret, and simulating a sandbox credit: the CLI's
`recon transfer create|track`, `recon endpoints suspend|resume`, `recon webhooks
register|rotate` and `recon credit simulate`, and the JSON API's `POST /transfers` and
`POST /transfers/{ref}/track`. A door runs each with `OperatorService.perform_at_provider`.

The provider's answer cannot share a transaction with the store, so each action says which of
its transactions carries the row, by one rule: the row goes with what the store keeps of the
change. Where recon records a decision before asking (a transfer's intent, invariant 6), the
row is written with that record, so a decision to move money is on the trail before any money
can move, even if the process dies while the request is out. Where recon keeps nothing before
the answer (an endpoint's posture, a sandbox credit, a webhook registration), the row is
written once the provider has accepted, so the trail never claims a change the provider
refused; a crash between the answer and that commit leaves the change without its row, and the
provider's own record (the endpoint's state version, the webhook list) says what happened.
Rows are never updated afterwards: where the outcome comes later, the row's subject names the
record that carries it.

A refusal before anything is asked (a name that names no one, an endpoint without a lifecycle
guard, a live environment for a sandbox credit) is `ActionRefusedError` and leaves no row; the
provider's own errors reach the door unchanged, for the answer the door already gives them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from sqlalchemy.orm import Session, sessionmaker

import reconciliation.operator.audit_trail as audit
from foundation import Settings, format_money
from reconciliation.notifications.registration import (
    RegistrationResult,
    WithRegistration,
    ensure_registered,
    process_owner,
    rotate_secret,
)
from reconciliation.operator.actions import ActionRefusedError
from reconciliation.operator.audit_trail import Actor
from reconciliation.postings import HoldingIdentity, holding_identities
from reconciliation.store.db import transaction
from reconciliation.transfers import requests as transfers
from reconciliation.transfers.requests import RequestedTransfer, TrackedTransfer
from upstream import (
    CompanyClient,
    CreditRequest,
    GatewayClient,
    LifecycleApplied,
    Result,
    Simulation,
    StaleGuard,
    TransferRequest,
    WriteReplayed,
)

#: Audit action names, as the trail shows them.
REQUESTED_TRANSFER: Final = "requested transfer"
TRACKED_TRANSFER: Final = "tracked transfer"
ENDPOINT_CHANGED: Final = {"suspend": "suspended endpoint", "resume": "resumed endpoint"}
REGISTERED_WEBHOOK: Final = "registered webhook"
ROTATED_WEBHOOK_SECRET: Final = "rotated webhook secret"
SIMULATED_CREDIT: Final = "simulated inbound credit"


def request_transfer(
    store: sessionmaker[Session],
    actor: Actor,
    gateway: GatewayClient,
    request: TransferRequest,
    *,
    client_key: uuid.UUID | None = None,
    accepted_quote: Mapping[str, Any] | None = None,
) -> RequestedTransfer:
    """Ask the gateway for a transfer (reconciliation.transfers.requests); the row is written
    in the transaction of its intent, before the request goes out.

    Its subject names the intent by its Idempotency-Key; the intent, not the row, then takes
    the outcome (reserved, denied, replayed, or rejected with the gateway's reason) and the
    transfer it made. A rerun or a caller's retry under the same key completes the same
    decision and adds no row, as it adds no intent; a request refused before its intent (a
    caller's key reused for another request, or naming one refused earlier) adds none either.
    """
    moved = format_money(request.amount_minor_units, str(request.value_unit))

    def with_intent(session: Session, key: uuid.UUID) -> None:
        # Each holding as people name it (the account number a person typed, and its name),
        # its holdingRef beside it as evidence; a holding recon has not discovered yet by ref.
        refs = [str(request.source.holding_ref), str(request.destination.holding_ref)]
        names = holding_identities(session, refs)
        source, dest = (_named(names[r]) for r in refs)
        what = f"{moved} from holding {source} to holding {dest}"
        subject = f"transfer intent {key}"
        audit.record(session, actor=actor, action=REQUESTED_TRANSFER, subject=subject, reason=what)

    return transfers.request_transfer(
        gateway,
        store,
        request,
        via=actor.door,
        client_key=client_key,
        accepted_quote=accepted_quote,
        with_intent=with_intent,
    )


def _named(holding: HoldingIdentity) -> str:
    """`0123456789 ADA OBI STORES (holdingRef ...)`, or the bare ref when its account is not
    known."""
    return f"{holding.label} (holdingRef {holding.ref})" if holding.named else holding.ref


def track_transfer(
    store: sessionmaker[Session], actor: Actor, gateway: GatewayClient, transfer_ref: uuid.UUID
) -> TrackedTransfer:
    """Follow a transfer made elsewhere until terminal; the row is written in the transaction
    that starts following it (or brings it forward to be polled now, when already followed).
    An unknown reference is the gateway's NotFound, and nothing is written."""

    def with_tracked(session: Session, tracked: TrackedTransfer) -> None:
        if tracked.newly_tracked:
            found = f"newly followed (origin {tracked.origin})"
        elif tracked.is_terminal:
            found = "already followed and terminal: nothing to poll"
        else:
            found = "already followed: polled now"
        subject = f"transfer {transfer_ref}"
        audit.record(session, actor=actor, action=TRACKED_TRANSFER, subject=subject, reason=found)

    return transfers.track_transfer(gateway, store, transfer_ref, with_tracked=with_tracked)


def change_endpoint(
    store: sessionmaker[Session],
    actor: Actor,
    gateway: GatewayClient,
    endpoint_ref: uuid.UUID,
    operation: str,
    reason: str,
) -> Result[LifecycleApplied] | WriteReplayed:
    """Suspend or resume an endpoint with the guard of a fresh read; the row is written once
    the gateway has applied the command (or replayed one it had applied), so a refused or
    stale command leaves none."""
    read = gateway.get_programmable_endpoint(endpoint_ref).value
    if read.endpoint is None or read.endpoint.lifecycle_guard is None:
        raise ActionRefusedError(f"endpoint {endpoint_ref}: {read.kind.replace('_', ' ')}")
    try:
        result = gateway.endpoint_lifecycle(
            endpoint_ref, operation, reason, read.endpoint.lifecycle_guard
        )
    except StaleGuard as exc:
        raise ActionRefusedError(f"{exc} Ask again to act on the new state.") from None
    if isinstance(result, WriteReplayed):
        done = f"{reason}: the gateway had applied this command before (replayed)"
    else:
        a = result.value
        done = (
            f"{reason}: {a.previous_posture} -> {a.current_posture} "
            f"(state version {a.previous_state_version} -> {a.current_state_version})"
        )
    _record_accepted(store, actor, ENDPOINT_CHANGED[operation], f"endpoint {endpoint_ref}", done)
    return result


def simulate_credit(
    store: sessionmaker[Session], actor: Actor, gateway: GatewayClient, credit: CreditRequest
) -> Result[Simulation] | WriteReplayed:
    """Simulate money arriving, only where the gateway says it is a sandbox; the row is written
    once the gateway has taken the simulation in. Sandbox money, but moved on a person's word,
    so the trail says whose: a sandbox shared by a team has the same question to answer."""
    env = gateway.environment().value
    if not env.is_sandbox:
        raise ActionRefusedError(
            f"refused: the gateway environment is {env.environment_kind}, not a sandbox; "
            "inbound credits can only be simulated in a sandbox"
        )
    result = gateway.simulate_inbound_credit(credit)
    moved = format_money(credit.amount_minor_units, str(credit.value_unit))
    if isinstance(result, WriteReplayed):
        done = f"{moved}: the gateway had taken it in before (replayed); nothing credited twice"
    else:
        done = f"{moved}: simulation {result.value.simulation_ref}"
    _record_accepted(store, actor, SIMULATED_CREDIT, f"holding {credit.target.holding_ref}", done)
    return result


def _record_accepted(
    store: sessionmaker[Session], actor: Actor, action: str, subject: str, reason: str
) -> None:
    """The row of a change recon keeps nothing of, in its own transaction once the gateway
    has accepted it (the module docstring says why then)."""
    with transaction(store) as session:
        audit.record(session, actor=actor, action=action, subject=subject, reason=reason)


def register_webhook(
    store: sessionmaker[Session],
    actor: Actor,
    settings: Settings,
    client: CompanyClient,
    wait_seconds: float,
) -> RegistrationResult:
    """Make sure one ACTIVE webhook delivers to our receiver (registration.ensure_registered);
    the row is written in the transaction that records the webhook found or made, once the
    company API has answered. Finding one already there is recorded too: the person asked."""
    return ensure_registered(
        settings,
        store,
        client,
        owner=process_owner(),
        wait_seconds=wait_seconds,
        with_registration=_webhook_row(
            actor,
            REGISTERED_WEBHOOK,
            lambda r: "registered now" if r.created else "already registered: none created",
        ),
    )


def rotate_webhook_secret(
    store: sessionmaker[Session],
    actor: Actor,
    settings: Settings,
    client: CompanyClient,
    wait_seconds: float,
) -> RegistrationResult:
    """Register a new webhook with a new secret (registration.rotate_secret); the row is
    written in the transaction that records it and starts the older secrets' overlap."""
    hours = settings.webhooks.rotation_overlap_seconds / 3600
    return rotate_secret(
        settings,
        store,
        client,
        owner=process_owner(),
        wait_seconds=wait_seconds,
        with_registration=_webhook_row(
            actor,
            ROTATED_WEBHOOK_SECRET,
            lambda _: f"the older secrets stay accepted for {hours:g} h",
        ),
    )


def _webhook_row(
    actor: Actor, action: str, done: Callable[[RegistrationResult], str]
) -> WithRegistration:
    """The audit row of a registration, written with the record of the webhook it names."""

    def with_registration(session: Session, result: RegistrationResult) -> None:
        audit.record(
            session,
            actor=actor,
            action=action,
            subject=f"webhook {result.webhook_id}",
            reason=f"{done(result)} ({result.url})",
        )

    return with_registration
