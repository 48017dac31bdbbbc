"""Provider variants: every choice the two specs leave "not shown", as one value the sandbox plays.

The real provider may choose differently from us wherever the specs are silent, so the sandbox
plays several plausible providers, not one guess. A `ProviderVariant` fixes each such choice;
`PRESETS` names a few coherent providers (our original guesses are one of them, `recon`), and a
spec string such as ``standard,page_cap=50`` takes a preset and overrides single choices.
docs/decisions.md lists every choice, the values a provider could plausibly take, and what
recon does under each.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Final, Literal, get_args, get_origin, get_type_hints

PayloadShape = Literal["recon", "standard-webhooks", "flat"]
DeliveryIdStyle = Literal["body-id", "message-id"]
BodyOutcome = Literal["status", "event-type"]
LastPageCursor = Literal["last-entry", "null", "absent"]
OverCap = Literal["reject", "clamp"]
StatusVocabulary = Literal["recon", "alternate"]
WriteReplay = Literal["transfer-only", "every-write"]
CompanyEnvelope = Literal["data", "wrapped"]
RetryAfterForm = Literal["seconds", "http-date"]
RetryPolicyFields = Literal["recon", "strict-other"]
UnitAssetMember = Literal["asset", "currency"]
FeeLayout = Literal["same-journal", "own-journal", "own-receipt", "own-receipt-unlinked"]
FeeJournalKind = Literal["transfer_settlement", "distinct"]
FeeLineShape = Literal["flat", "nested", "major"]


@dataclass(frozen=True, slots=True)
class ProviderVariant:
    """One provider's answer to each "not shown" of the specs."""

    name: str = "recon"

    # --- webhook deliveries (company spec: payload shape and headers not shown) -------------
    #: Body of a delivery: recon's original guess, Standard Webhooks' recommended
    #: `{id, type, timestamp, data}` with minor-unit strings, or a flat object.
    payload_shape: PayloadShape = "recon"
    #: `webhook-id` header: the body's own id, or a message id of its own (`msg_...`).
    delivery_id: DeliveryIdStyle = "body-id"
    #: Where a body says how the money event ended: a `status` member, or only its event type
    #: (`TRANSACTION_FAILED`...), with no status member anywhere in the body.
    body_outcome: BodyOutcome = "status"

    # --- balance activity (gateway spec: cursor field names, page cap, directions) ----------
    #: `nextCursor` on the last page: the last entry's position, null, or no member at all.
    last_page_cursor: LastPageCursor = "last-entry"
    #: Most entries one activity page holds.
    page_cap: int = 200
    #: A `pageSize` above the cap: refused with 400, or served clamped to the cap.
    over_cap: OverCap = "reject"
    #: `sortDirection` values accepted (the spec shows only `newest_first`).
    sort_directions: tuple[str, ...] = ("newest_first", "oldest_first")

    # --- transfers (gateway spec: stages and statuses beyond those listed not shown) --------
    #: Names of terminal statuses and stages after reservation.
    status_vocabulary: StatusVocabulary = "recon"
    #: Which writes answer a same-key replay with a replay body instead of the original object.
    write_replay: WriteReplay = "transfer-only"

    # --- company API (success envelope and status codes not shown) ---------------------------
    #: Success body of the webhook operations: `{data}` or the error envelope's full shape.
    company_envelope: CompanyEnvelope = "wrapped"
    #: HTTP status of a successful webhook registration.
    register_status: int = 201
    #: HTTP status of a refused company request (bad input): 400, 422, or 200 with
    #: `success: false` in the envelope. Wrong credentials stay 401 (the spec shows it).
    company_refusal_status: int = 400
    #: `retryPolicy` members understood at registration: ours (`maxAttempts`,
    #: `initialDelaySeconds`, `backoffMultiplier`; others ignored), or another provider's
    #: (`maxRetries`, `retryIntervalSeconds`) that refuses any member it does not know.
    retry_policy_fields: RetryPolicyFields = "recon"

    # --- both APIs (Retry-After: the gateway spec names it for 429 only) ---------------------
    #: Send Retry-After with a 503 (the spec mentions it for no status at all).
    retry_after_on_503: bool = False
    #: Form of every Retry-After sent (429, and 503 when sent): delta-seconds or an HTTP date.
    retry_after_form: RetryAfterForm = "seconds"

    # --- value units (gateway spec: only fiat shown; `asset` named as a query parameter) ------
    #: Member of a non-fiat `valueUnit` that carries its asset: `asset` (the query parameter's
    #: name) or `currency` (the member fiat uses).
    unit_asset_member: UnitAssetMember = "asset"

    # --- fees (gateway spec: element shapes, ledger layout and journal kinds not shown) ------
    #: Fee legs as lines of the transfer's own journal, in a journal of their own that shares
    #: the transfer's receiptRef (the receipt evidences the one operation), or in a journal
    #: under a receipt of their own (the split's withholding leg on yet another receipt), the
    #: status read's fee lines naming that receipt (`own-receipt`) or nothing linking the two
    #: (`own-receipt-unlinked`: only the holding, the amount and the instant tie them).
    fee_layout: FeeLayout = "same-journal"
    #: `journalKind` of fee legs: the principal's `transfer_settlement`, or kinds of their own
    #: (`application_fee_assessment`, `receiver_fee_withholding`) that recon has never seen.
    fee_journal_kind: FeeJournalKind = "transfer_settlement"
    #: Element shape of fee `totals`/`lines` (quote and status): minor units with a value unit,
    #: a nested amount object, or a major-unit decimal string with a currency.
    fee_line_shape: FeeLineShape = "flat"


#: Named providers: our first guesses, and two that choose differently wherever they may.
PRESETS: Final[dict[str, ProviderVariant]] = {
    "recon": ProviderVariant(),
    "standard": ProviderVariant(
        name="standard",
        payload_shape="standard-webhooks",
        delivery_id="message-id",
        body_outcome="event-type",
        last_page_cursor="null",
        page_cap=100,
        over_cap="clamp",
        sort_directions=("newest_first",),
        status_vocabulary="alternate",
        write_replay="every-write",
        company_envelope="wrapped",
        register_status=201,
        company_refusal_status=422,
        retry_after_on_503=True,
        fee_layout="own-receipt",
        fee_journal_kind="distinct",
        fee_line_shape="nested",
    ),
    "sparse": ProviderVariant(
        name="sparse",
        payload_shape="flat",
        delivery_id="message-id",
        last_page_cursor="absent",
        page_cap=50,
        over_cap="clamp",
        sort_directions=("newest_first",),
        status_vocabulary="alternate",
        write_replay="every-write",
        company_envelope="data",
        register_status=201,
        company_refusal_status=200,
        retry_after_on_503=True,
        unit_asset_member="currency",
        fee_layout="own-receipt-unlinked",
        fee_journal_kind="distinct",
        fee_line_shape="major",
    ),
}


class VariantError(ValueError):
    """A variant spec names no preset or sets a choice to a value it cannot take."""


def parse_variant(spec: str) -> ProviderVariant:
    """`preset[,choice=value...]`, for example ``standard`` or ``recon,last_page_cursor=null``."""
    head, *overrides = [part.strip() for part in spec.split(",") if part.strip()] or ["recon"]
    if head not in PRESETS:
        raise VariantError(f"unknown provider variant {head!r}: choose one of {', '.join(PRESETS)}")
    variant = PRESETS[head]
    fields = {f.name: f for f in dataclasses.fields(ProviderVariant)}
    changes: dict[str, object] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or key not in fields or key == "name":
            raise VariantError(
                f"bad variant override {item!r}: expected choice=value with a choice among "
                + ", ".join(n for n in fields if n != "name")
            )
        current = getattr(variant, key)
        changes[key] = _convert(key, raw, current)
    if changes:
        variant = dataclasses.replace(variant, **changes)  # type: ignore[arg-type]
        variant = dataclasses.replace(variant, name=spec)
    return variant


def _convert(key: str, raw: str, current: object) -> object:
    if isinstance(current, bool):
        if raw not in ("true", "false"):
            raise VariantError(f"{key} takes true or false, not {raw!r}")
        return raw == "true"
    if isinstance(current, int):
        if not raw.isdigit() or int(raw) < 1:
            raise VariantError(f"{key} takes a whole number > 0, not {raw!r}")
        return int(raw)
    if isinstance(current, tuple):
        return tuple(v for v in raw.split("+") if v)
    hint = get_type_hints(ProviderVariant)[key]
    allowed = get_args(hint) if get_origin(hint) is Literal else ()
    if allowed and raw not in allowed:
        raise VariantError(f"{key} takes one of {', '.join(allowed)}, not {raw!r}")
    return raw


#: The variable that picks the variant a sandbox plays when its config does not say: the test
#: matrix and `make demo VARIANT=...` set it once for every sandbox they start.
VARIANT_VARIABLE: Final = "RECON_SANDBOX_VARIANT"


def variant_from_environment() -> ProviderVariant:
    """The variant RECON_SANDBOX_VARIANT names, or our first guesses (`recon`) when unset."""
    return parse_variant(os.environ.get(VARIANT_VARIABLE, "recon"))
