"""Operator commands that move money on the gateway: `recon transfer ...` and `recon credit ...`.

`transfer create`, `transfer track` and `credit simulate` go through
reconciliation.operator.provider_actions (`transfer` the same service as `POST /transfers`), so
each leaves one audit row naming who acted (`--by`, else the user running the command): the
transfer is recorded, then followed to terminal by the workers' poller.

Kept apart from `recon check` (recon.cli.provider_commands) so the two can change independently;
the client set-up, error handling and parameter types are shared from there.

Exit status: 0 done; 1 refused by the provider (a denied transfer, invalid input); 2
configuration; 3 provider unreachable.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from foundation import format_money, said_back
from recon.cli.amounts import amount_options, minor_units
from recon.cli.operator_door import BY, act_at_provider
from recon.cli.provider_commands import (
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    HOLDING,
    exit_with,
    gateway_and_store,
    gateway_client,
    provider_errors,
    provider_settings,
    resolve_holding,
)
from recon.cli.terminal import say
from reconciliation.operator import provider_actions
from reconciliation.transfers import DENIED
from upstream import (
    BEARERS,
    CreditRequest,
    Destination,
    GatewayClient,
    HoldingAddress,
    Quote,
    RateLimited,
    TransferAccepted,
    TransferDenied,
    TransferReplayed,
    TransferRequest,
    Unavailable,
    ValueUnit,
    WriteReplayed,
    fee_instruction,
    read_fees,
)

F = TypeVar("F", bound=Callable[..., Any])


def _receipts(evidence: tuple[Any, ...]) -> str:
    return ", ".join(f"{e.receipt_ref}{f' ({e.source})' if e.source else ''}" for e in evidence)


# -- recon transfer ---------------------------------------------------------------------------


@click.group()
def transfer() -> None:
    """Create, quote and follow transfers on the gateway."""


@dataclass(frozen=True, slots=True)
class PlannedTransfer:
    """The request to send, and the sentence that says it to a person before it goes."""

    request: TransferRequest
    sentence: str


def _planned_transfer(
    client: GatewayClient,
    source: HoldingAddress | str,
    to: HoldingAddress | str,
    amount: int,
    currency: str,
    fee_bearer: str | None = None,
) -> PlannedTransfer:
    """The transfer request, holdings looked up by account number where one was given."""
    source_address, source_label = resolve_holding(client, source)
    to_address, to_label = resolve_holding(client, to)
    request = TransferRequest(
        source=source_address,
        destination=Destination.internal(to_address),
        value_unit=ValueUnit.fiat(currency),
        amount_minor_units=amount,
        fee_instruction=fee_instruction(fee_bearer) if fee_bearer else None,
    )
    return PlannedTransfer(
        request, f"{said_back(amount, currency)} from {source_label} to {to_label}"
    )


#: Said under every option that names a holding: where a person finds what to type.
HOLDING_HELP = (
    "its bank account number (looked up on the gateway), or ACCOUNT_REF:ENDPOINT_REF:HOLDING_REF; "
    "`recon endpoints list` and `recon endpoints show ENDPOINT_REF` print both"
)


def _transfer_options(func: F) -> F:
    for option in reversed(
        [
            click.option(
                "--from",
                "source",
                type=HOLDING,
                required=True,
                help=f"Source holding: {HOLDING_HELP}.",
            ),
            click.option(
                "--to",
                "to",
                type=HOLDING,
                required=True,
                help=f"Destination holding: {HOLDING_HELP}.",
            ),
            amount_options,
            click.option("--currency", default="NGN", show_default=True),
            click.option(
                "--fee-bearer",
                type=click.Choice(BEARERS),
                default=None,
                help="Who pays the application fee (sent as the fee instruction); without it "
                "the provider's default applies.",
            ),
        ]
    ):
        func = option(func)
    return func


def _quoted_fee_line(quote: Quote) -> str:
    """`fee: 25.00 NGN (application_fee, sender_pays)`, none, or unknown, from a quote."""
    if quote.no_fee_reason and not quote.totals and not quote.lines:
        return f"fees: none ({quote.no_fee_reason})"
    reading = read_fees(quote.totals, quote.lines)
    unit = str(quote.value_unit)
    fee = reading.charged_in(unit)
    if fee is None:
        return "fee: unknown (the quote's fee elements could not all be read; shown below)"
    detail = ", ".join(part for part in (reading.kind, reading.bearer) if part)
    return f"fee: {format_money(fee, unit)}" + (f" ({detail})" if detail else "")


#: Said when a create's answer was lost: the intent and its key are stored, so a rerun is safe.
RERUN_IS_SAFE = (
    "The transfer's outcome is unknown; its intent and Idempotency-Key are recorded. Run the "
    "same command again: it is resent under the same key and the gateway replays it (nothing "
    "moves twice)."
)


@transfer.command("create")
@_transfer_options
@click.option(
    "--accept-quote",
    is_flag=True,
    help="Quote first and create against that quote (sent whole as acceptedQuote): a fee "
    "charged other than the quoted one is then a fee_mismatch alert.",
)
@click.option(
    "--yes",
    is_flag=True,
    help="Send without asking (for scripts). Without it, recon says the amount back in words "
    "and its fee, then asks before anything is sent.",
)
@BY
@provider_errors
def transfer_create(
    source: HoldingAddress | str,
    to: HoldingAddress | str,
    amount_major: str | None,
    amount_minor: int | None,
    currency: str,
    fee_bearer: str | None,
    accept_quote: bool,
    yes: bool,
    by: str | None,
) -> None:
    """Create a transfer and follow it until terminal.

    The amount is said back in figures and words before anything is sent, then quoted, to say
    the fee it will be charged. Its intent and Idempotency-Key are stored before the request
    goes out: rerunning the same command after a crash replays instead of moving twice, and
    the transfer is still followed.
    """
    settings = provider_settings()
    unit = currency.upper()
    amount = minor_units(amount_major, amount_minor, unit)
    with gateway_and_store(settings) as (client, sessions):
        planned = _planned_transfer(client, source, to, amount, unit, fee_bearer)
        say(f"sending {planned.sentence}")
        fee_line, accepted = _quote_before_create(client, planned.request, required=accept_quote)
        say(fee_line)
        if not yes:
            _ask_before_sending()
        try:
            done = act_at_provider(
                sessions,
                by,
                provider_actions.request_transfer,
                client,
                planned.request,
                accepted_quote=accepted,
            )
        except (Unavailable, RateLimited) as exc:
            exit_with(EXIT_UNREACHABLE, f"{exc} {RERUN_IS_SAFE}")
    creation = done.creation
    moved = format_money(amount, unit)
    match creation:
        case TransferAccepted():
            t = creation.transfer
            say(f"accepted: transfer {t.transfer_ref} of {moved} {t.stage} (revision {t.revision})")
        case TransferReplayed():
            say(f"already sent: the gateway replayed transfer {done.transfer_ref} of {moved}")
        case TransferDenied():
            reason = done.denial_reason or "no reason"
            say(f"denied: transfer {done.transfer_ref} of {moved}: {reason}; nothing moved")
    say(f"idempotency key: {done.idempotency_key}")
    if creation is not None and creation.evidence:
        say(f"receipts: {_receipts(creation.evidence)}")
    if done.outcome != DENIED:
        say("recorded: the workers poll it until its status is terminal")
    else:
        say("recorded: denied transfers are terminal at once")
        sys.exit(EXIT_REFUSED)


def _ask_before_sending() -> None:
    """The person confirms what was said back; anything but yes (or no answer at all, as from a
    script without --yes) sends nothing."""
    try:
        sure = click.confirm("send it?", default=False, err=True)
    except click.Abort:
        sure = False
    if not sure:
        exit_with(EXIT_REFUSED, "not sent: nothing moved (answer y to send; a script passes --yes)")


def _quote_before_create(
    client: GatewayClient, request: TransferRequest, *, required: bool
) -> tuple[str, dict[str, object] | None]:
    """The line saying the fee the transfer will be charged, from a quote of the same
    material, and the quote to accept when `required`. A quote that fails only stops the
    create when it was to be accepted."""
    try:
        quote = client.quote_transfer(request).value
    except (Unavailable, RateLimited) as exc:
        if required:
            raise
        return f"fee: not known before creating (the quote failed: {exc})", None
    line = _quoted_fee_line(quote) + (", as quoted and accepted" if required else ", as quoted")
    return line, quote.wire if required else None


@transfer.command("track")
@click.argument("transfer_ref", type=click.UUID)
@BY
@provider_errors
def transfer_track(transfer_ref: uuid.UUID, by: str | None) -> None:
    """Follow a transfer created elsewhere (origin `imported`) until its status is terminal."""
    with gateway_and_store(provider_settings()) as (client, sessions):
        tracked = act_at_provider(
            sessions, by, provider_actions.track_transfer, client, transfer_ref
        )
    if tracked.newly_tracked:
        say(f"tracking: transfer {tracked.transfer_ref} (origin {tracked.origin})")
    else:
        say(f"already followed: transfer {tracked.transfer_ref} (origin {tracked.origin})")
    if tracked.is_terminal:
        ok = "successful" if tracked.is_successful else "not successful"
        say(f"status: {tracked.status}; terminal, {ok}")
    else:
        say(f"status: {tracked.status or 'not read yet'}; the workers poll it until terminal")


@transfer.command("quote")
@_transfer_options
@provider_errors
def transfer_quote(
    source: HoldingAddress | str,
    to: HoldingAddress | str,
    amount_major: str | None,
    amount_minor: int | None,
    currency: str,
    fee_bearer: str | None,
) -> None:
    """Quote fees and totals for a transfer; reserves nothing."""
    settings = provider_settings()
    unit = currency.upper()
    amount = minor_units(amount_major, amount_minor, unit)
    with gateway_client(settings) as client:
        planned = _planned_transfer(client, source, to, amount, unit, fee_bearer)
        say(f"quoting {planned.sentence}")
        quote = client.quote_transfer(planned.request).value
    say(f"quote basis: {quote.quote_basis_transfer_ref}")
    quoted_unit = str(quote.value_unit)
    say(
        f"amount: {format_money(quote.amount_minor_units, quoted_unit)} (minor units "
        f"{quote.amount_minor_units})"
    )
    say(_quoted_fee_line(quote))
    for label, items in (("totals", quote.totals), ("lines", quote.lines)):
        for item in items:
            say(f"{label}: {item}")


@transfer.command("status")
@click.argument("transfer_ref", type=click.UUID)
@provider_errors
def transfer_status(transfer_ref: uuid.UUID) -> None:
    """Where a transfer is, and whether it is done."""
    with gateway_client(provider_settings()) as client:
        result = client.transfer_status(transfer_ref)
    s = result.value
    done = "terminal" if s.is_terminal else "not terminal yet"
    ok = "successful" if s.is_successful else "not successful"
    say(f"transfer {s.transfer_ref}: {s.status} ({s.reason or '-'}); {done}, {ok}")
    say(f"revision: {s.revision}")
    if s.fees is not None:
        say(f"fees: {s.fees.status} ({s.fees.reason or '-'})")
        for label, items in (("totals", s.fees.totals), ("lines", s.fees.lines)):
            for item in items:
                say(f"fee {label}: {item}")


# -- recon credit -----------------------------------------------------------------------------


@click.group()
def credit() -> None:
    """Sandbox-only: simulate money arriving."""


@credit.command("simulate")
@click.option("--to", "to", type=HOLDING, required=True, help=f"Holding to credit: {HOLDING_HELP}.")
@amount_options
@click.option("--currency", default="NGN", show_default=True)
@BY
@provider_errors
def credit_simulate(
    to: HoldingAddress | str,
    amount_major: str | None,
    amount_minor: int | None,
    currency: str,
    by: str | None,
) -> None:
    """Simulate an inbound credit. Refused unless the gateway says this is a sandbox.

    The amount is said back in figures and words before the simulation is sent. Sandbox money,
    but moved on a person's word: the audit trail records whose.
    """
    settings = provider_settings()
    unit = currency.upper()
    amount = minor_units(amount_major, amount_minor, unit)
    with gateway_and_store(settings) as (client, sessions):
        target, label = resolve_holding(client, to)
        say(f"crediting {said_back(amount, unit)} to {label}")
        credit = CreditRequest(
            target=target, value_unit=ValueUnit.fiat(unit), amount_minor_units=amount
        )
        result = act_at_provider(sessions, by, provider_actions.simulate_credit, client, credit)
    if isinstance(result, WriteReplayed):
        made = f" {result.subject_ref}" if result.subject_ref else ""
        say(f"already sent: the gateway replayed simulation{made}; nothing credited twice")
        say(f"idempotency key: {result.idempotency_key}")
        return
    sim = result.value
    credited = format_money(sim.amount_minor_units, str(sim.value_unit))
    say(f"accepted: simulation {sim.simulation_ref} of {credited} {sim.stage}")
    say(f"posting receipt: {sim.accounts_posting_receipt_ref}")
    say(f"idempotency key: {result.idempotency_key}")


COMMANDS = [transfer, credit]
