"""The sandbox's whole world, in memory, behind one re-entrant lock.

Routes, background jobs and tests all change state through the methods here while holding
``state.lock``; nothing is shared with recon's store. The money moves (reservation, settlement,
release, inbound posting) and the events they raise are all in this file so the ledger rules
read in one place.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from sandbox.clock import Clock
from sandbox.config import SandboxConfig
from sandbox.endpoints import ACTIVE, Directory, Endpoint
from sandbox.envelopes import conflict, invalid_input, not_found
from sandbox.events import (
    ACCOUNT_CREATED,
    KYC_VERIFIED,
    PAYMENT_RECEIVED,
    TRANSACTION_COMPLETED,
    TRANSACTION_FAILED,
    account_data,
    money_data,
)
from sandbox.faults import FaultBook
from sandbox.fees import Assessment, FeeLine, FeeSchedule, FeeStyle, fee_lines
from sandbox.idempotency import IdempotencyStore
from sandbox.ids import IdSource, uuid_int, uuid_text
from sandbox.ledger import (
    CREDIT,
    DEBIT,
    JOURNAL_KIND,
    Holding,
    append_row,
    posting_time,
    render_entry,
)
from sandbox.scheduler import BackgroundRunner, Scheduler
from sandbox.transfers import (
    DENIED,
    FAILED,
    HELD,
    OPEN_PHASES,
    RESERVED,
    SETTLED,
    OutcomeRule,
    Transfer,
)
from sandbox.webhooks import Attempt, Webhook, WebhookHub


class SandboxState:
    """Everything the sandbox knows; see the module docstring for the locking rule."""

    def __init__(self, config: SandboxConfig | None = None, clock: Clock | None = None) -> None:
        self.config = config or SandboxConfig()
        self.clock = clock or Clock()
        self.lock = threading.RLock()
        self.scheduler = Scheduler(self.clock)
        self.faults = FaultBook(self.config.seed)
        self._runner = BackgroundRunner(
            self.scheduler,
            self.clock,
            self.config.background_tick_seconds,
            self.config.delivery_workers,
        )
        self.keys: dict[str, frozenset[str]] = dict(self.config.gateway_keys)
        self._init_world()

    def _init_world(self) -> None:
        cfg = self.config
        self.ids = IdSource(cfg.seed)
        self.directory = Directory(self.ids)
        self.holdings: dict[str, Holding] = {}
        self.transfers: dict[str, Transfer] = {}
        self.simulations: dict[str, dict[str, Any]] = {}
        self.idempotency = IdempotencyStore(round(cfg.idempotency_retention_seconds * 1000))
        self.outcomes = OutcomeRule(cfg.seed, cfg.transfer_failure_probability)
        self.hub = WebhookHub(cfg, self.clock, self.ids, self.scheduler, self.faults, self.lock)
        self.fee_schedule: FeeSchedule | None = cfg.fee_schedule
        # The application's own fee holding per currency (application_pays debits it): in
        # `holdings` so its activity reads like any other, but under no endpoint.
        self.fee_holdings: dict[str, Holding] = {}

    # --- life cycle -----------------------------------------------------------------

    def start_background(self) -> None:
        self._runner.start()

    def stop_background(self) -> None:
        self._runner.stop()

    def close(self) -> None:
        self.stop_background()
        self.hub.close()

    def reset(self) -> None:
        """Forget every endpoint, posting, transfer, webhook and fault; keep config and keys."""
        with self.lock:
            self.scheduler.clear()
            self.faults.clear()
            self.faults.reseed(self.config.seed)
            old_hub = self.hub
            self._init_world()
            old_hub.close()

    def run_due(self) -> int:
        """Run, in the caller's thread, everything the clock says is due; count the jobs."""
        return self.scheduler.run_due()

    def settle_now(self) -> int:
        """Run every pending job however far ahead, and catch every projection up."""
        ran = self.scheduler.run_due(everything=True)
        with self.lock:
            for holding in self.holdings.values():
                holding.flush_projection()
        return ran

    # --- inspection ------------------------------------------------------------------

    @property
    def webhooks(self) -> dict[str, Webhook]:
        return self.hub.webhooks

    @property
    def deliveries(self) -> deque[Attempt]:
        return self.hub.log

    @property
    def events(self) -> deque[dict[str, Any]]:
        return self.hub.events

    def postings(self, holding_ref: str) -> list[dict[str, Any]]:
        """Every committed posting of a holding, oldest first, as activity entries."""
        with self.lock:
            holding = self.holdings[holding_ref]
            return [render_entry(holding, row) for row in holding.rows]

    def posted_sum(self, holding_ref: str) -> int:
        with self.lock:
            return self.holdings[holding_ref].settled

    # --- endpoints --------------------------------------------------------------------

    def create_endpoint(
        self, template: str, owner_ref: str, owner_kind: str, currency: str, *, emit: bool = True
    ) -> Endpoint:
        with self.lock:
            ep = self.directory.create(template, owner_ref, owner_kind, currency)
            self.holdings[ep.holding_ref] = Holding(
                ep.holding_ref, ep.account_ref, ep.endpoint_ref, currency
            )
            if emit:
                self.hub.emit(ACCOUNT_CREATED, account_data(ep))
            return ep

    def endpoint(self, endpoint_ref: str) -> Endpoint | None:
        return self.directory.endpoints.get(endpoint_ref)

    def emit_kyc_verified(self, endpoint_ref: str) -> str:
        with self.lock:
            ep = self.directory.endpoints.get(endpoint_ref)
            if ep is None:
                raise not_found(f"No endpoint {endpoint_ref}.")
            return self.hub.emit(KYC_VERIFIED, account_data(ep))

    def holding_at(self, account_ref: str, endpoint_ref: str, holding_ref: str) -> Holding:
        """The holding named by all three refs, or 404 when any of them names nothing."""
        holding = self.holdings.get(holding_ref)
        if holding is None or (holding.account_ref, holding.endpoint_ref) != (
            account_ref,
            endpoint_ref,
        ):
            raise not_found(
                f"No holding {holding_ref} under account {account_ref}, endpoint {endpoint_ref}."
            )
        return holding

    def _active_endpoint(self, holding: Holding) -> Endpoint:
        ep = self.directory.endpoints[holding.endpoint_ref]
        if ep.posture != ACTIVE:
            raise conflict(
                "EndpointSuspended",
                f"Endpoint {ep.endpoint_ref} is {ep.posture} and refuses new operations.",
            )
        return ep

    # --- money ---------------------------------------------------------------------

    def _post_journals(
        self, journals: list[list[tuple[Holding, int, int, str]]], receipt: int
    ) -> int:
        """Commit journals sharing one receiptRef and one postedAt: a journalRef each, a line
        per leg (holding, side, amount, journalKind); legs of zero and empty journals vanish."""
        rows: list[tuple[tuple[Holding, int, int, str], int, int]] = []
        for legs in journals:
            kept = [leg for leg in legs if leg[2]]
            if kept:
                journal = self.ids.new_int()
                rows.extend((leg, self.ids.new_int(), journal) for leg in kept)
        holdings = [leg[0] for leg, _, _ in rows]
        posted = posting_time(holdings, self.clock.now_ms(), receipt, [r[1] for r in rows])
        lag_ms = round(self.config.projection_lag_seconds * 1000)
        for (holding, side, amount, kind), line, journal in rows:
            append_row(holding, (posted, receipt, line, journal, amount, side), lag_ms, kind)
        return posted

    def check_transfer(
        self, source: tuple[str, str, str], destination: dict[str, Any], currency: str
    ) -> tuple[Holding, Holding]:
        """References and units of a transfer or quote; the refusals docs/decisions.md names."""
        src = self.holding_at(*source)
        dst = self.holding_at(
            destination["accountRef"], destination["endpointRef"], destination["holdingRef"]
        )
        if src is dst:
            raise invalid_input("Source and destination are the same holding.")
        for holding, side in ((src, "source"), (dst, "destination")):
            if holding.currency != currency:
                raise invalid_input(
                    f"`valueUnit` {currency} does not match the {side} holding's unit "
                    f"{holding.currency}."
                )
        return src, dst

    def application_fee_holding(self, currency: str) -> Holding:
        """The application's fee holding in `currency`, made on first use (no endpoint lists it).

        It may go below zero: the provider bills the application for what it owes.
        """
        holding = self.fee_holdings.get(currency)
        if holding is None:
            holding = Holding(self.ids.new(), self.ids.new(), self.ids.new(), currency)
            self.fee_holdings[currency] = self.holdings[holding.holding_ref] = holding
        return holding

    def assess_fee(
        self, src: Holding, dst: Holding, amount: int, bearer: str | None, *, charged: bool
    ) -> tuple[Assessment, list[FeeLine]] | None:
        """The fee the schedule puts on a transfer and its evidence lines; None when free.

        A fee that would take the whole amount from the receiver is refused (400): the
        receiver's credit would be nothing or less.
        """
        schedule = self.fee_schedule
        assessment = schedule.assess(amount, bearer, charged=charged) if schedule else None
        if assessment is None:
            return None
        if assessment.receiver_share >= amount:
            raise invalid_input(
                f"The fee of {assessment.fee} minor units under `{assessment.bearer}` would "
                f"withhold {assessment.receiver_share} of the {amount} sent: raise the amount "
                "or choose another bearer."
            )
        app_ref = (
            self.application_fee_holding(src.currency).holding_ref
            if assessment.application_share
            else ""
        )
        return assessment, fee_lines(assessment, src.holding_ref, dst.holding_ref, app_ref)

    def create_transfer(
        self,
        source: tuple[str, str, str],
        destination: dict[str, Any],
        currency: str,
        amount: int,
        requested_by: str,
        material_fingerprint: str,
        bearer: str | None = None,
    ) -> Transfer:
        """Reserve the amount plus the sender's fee share, or deny; finality is scheduled after."""
        with self.lock:
            src, dst = self.check_transfer(source, destination, currency)
            self._active_endpoint(src)
            self._active_endpoint(dst)
            fee = self.assess_fee(src, dst, amount, bearer, charged=True)
            held = amount + (fee[0].sender_share if fee else 0)
            reserve = src.available >= held
            variant = self.config.variant
            transfer = Transfer(
                transfer_ref=self.ids.new(),
                source=source,
                destination=destination,
                currency=currency,
                amount=amount,
                requested_by=requested_by,
                material_fingerprint=material_fingerprint,
                now_ms=self.clock.now_ms(),
                phase=RESERVED if reserve else DENIED,
                vocabulary=variant.status_vocabulary,
            )
            if fee is not None:
                transfer.fee, transfer.fee_lines = fee
                transfer.fee_style = FeeStyle(
                    variant.fee_layout, variant.fee_journal_kind, variant.fee_line_shape
                )
            self.transfers[transfer.transfer_ref] = transfer
            if reserve:
                transfer.reservation_ref = self.ids.new()
                src.reservations[transfer.reservation_ref] = held
                self.outcomes.claim_next(transfer.transfer_ref)
                ref = transfer.transfer_ref
                self.scheduler.after(
                    self.config.transfer_finality_delay_seconds, lambda: self.finalize(ref)
                )
            return transfer

    def _settlement_journals(
        self, transfer: Transfer, src: Holding, dst: Holding
    ) -> list[list[tuple[Holding, int, int, str]]]:
        """The principal's legs and the fee legs, in one journal or two (`fee_layout`).

        receiver_pays nets the fee into the one credit (gross - fee); split posts the
        receiver's share as a withholding debit beside the full credit; every other share is a
        debit of its own on the holding that pays it.
        """
        fee, style = transfer.fee, transfer.fee_style
        netted = fee.receiver_share if fee and fee.bearer == "receiver_pays" else 0
        principal = [
            (src, DEBIT, transfer.amount, JOURNAL_KIND),
            (dst, CREDIT, transfer.amount - netted, JOURNAL_KIND),
        ]
        fee_legs = [
            (self.holdings[line.holding_ref], DEBIT, line.amount, style.kind_of(line.leg))
            for line in self._fee_lines_posted(transfer)
        ]
        if style.layout == "own-journal":
            return [principal, fee_legs]
        if style.own_receipt:
            return [principal]  # the fee legs go under receipts of their own (_post_fees_apart)
        return [principal + fee_legs]

    @staticmethod
    def _fee_lines_posted(transfer: Transfer) -> list[FeeLine]:
        """The fee lines that become legs: receiver_pays nets its withholding into the credit."""
        fee = transfer.fee
        netted = fee is not None and fee.bearer == "receiver_pays"
        return [line for line in transfer.fee_lines if not (netted and line.leg == "withholding")]

    def _post_fees_apart(self, transfer: Transfer) -> None:
        """`own-receipt` layouts: each fee leg in a journal under a receipt of its own (so the
        split's withholding is on another receipt than its debit), posted in the same instant
        as the transfer or just after; `own-receipt` names each receipt in its fee line."""
        style = transfer.fee_style
        for line in self._fee_lines_posted(transfer):
            leg = (self.holdings[line.holding_ref], DEBIT, line.amount, style.kind_of(line.leg))
            receipt = self.ids.new_int()
            self._post_journals([[leg]], receipt)
            if style.names_receipt:
                line.receipt_ref = uuid_text(receipt)

    def finalize(self, transfer_ref: str, outcome: str | None = None) -> None:
        """The rail's answer: settle (post both legs) or fail; either way release the reservation.

        "hold" leaves the money reserved; under a vocabulary with a status of its own for a held
        transfer (`alternate`) the transfer moves to it, still not terminal.
        """
        with self.lock:
            transfer = self.transfers.get(transfer_ref)
            if transfer is None or transfer.phase not in OPEN_PHASES:
                return
            decided = outcome or self.outcomes.decide(transfer_ref)
            if decided == "hold":
                if transfer.phase == RESERVED and transfer.vocabulary_holds_apart():
                    transfer.move(HELD)
                return
            src = self.holdings[transfer.source[2]]
            dst = self.holdings[transfer.destination["holdingRef"]]
            if transfer.reservation_ref is not None:
                src.reservations.pop(transfer.reservation_ref, None)
            src_ep = self.directory.endpoints[src.endpoint_ref]
            if decided == "settle":
                receipt = self.ids.new_int()
                self._post_journals(self._settlement_journals(transfer, src, dst), receipt)
                if transfer.fee_style.own_receipt:
                    self._post_fees_apart(transfer)
                transfer.move(SETTLED)
                transfer.receipt_ref = uuid_text(receipt)
                data = money_data(
                    src_ep,
                    transfer_ref=transfer_ref,
                    receipt_ref=transfer.receipt_ref,
                    amount_minor=transfer.amount,
                    status="SUCCESSFUL",
                    narration=f"Transfer {transfer_ref}",
                )
                self.hub.emit(TRANSACTION_COMPLETED, data)
            else:
                transfer.move(FAILED)
                data = money_data(
                    src_ep,
                    transfer_ref=transfer_ref,
                    receipt_ref=None,
                    amount_minor=transfer.amount,
                    status="FAILED",
                    narration=f"Transfer {transfer_ref} rejected by the rail",
                )
                self.hub.emit(TRANSACTION_FAILED, data)

    def accept_inbound_credit(self, holding: Holding, amount: int, posting_receipt: str) -> None:
        """Schedule the posting of an accepted simulation (the spec's asynchronous projection)."""
        ep = self._active_endpoint(holding)
        if not ep.receives_external:
            raise invalid_input(
                "Inbound credits need an endpoint whose receive posture is "
                "`external_and_internal` (template `customer_balance_collection_child`)."
            )

        def land() -> None:
            self.post_inbound_credit(holding.holding_ref, amount, posting_receipt)

        self.scheduler.after(self.config.inbound_posting_delay_seconds, land)

    def post_inbound_credit(self, holding_ref: str, amount: int, receipt_ref: str) -> None:
        with self.lock:
            holding = self.holdings[holding_ref]
            self._post_journals([[(holding, CREDIT, amount, JOURNAL_KIND)]], uuid_int(receipt_ref))
            ep = self.directory.endpoints[holding.endpoint_ref]
            data = money_data(
                ep,
                transfer_ref=None,
                receipt_ref=receipt_ref,
                amount_minor=amount,
                status="SUCCESSFUL",
                narration="Inbound credit (sandbox simulation)",
            )
            self.hub.emit(PAYMENT_RECEIVED, data)
