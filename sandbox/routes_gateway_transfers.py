"""Gateway transfers: create (reserve or deny), quote, status."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post

from sandbox import config as c
from sandbox.auth import require_capability
from sandbox.config import format_timestamp
from sandbox.envelopes import (
    ENGINE,
    invalid_input,
    json_response,
    not_found,
    read_body,
    success,
)
from sandbox.fees import BEARERS, render_fees
from sandbox.idempotency import SUBJECT_MEMBERS, Intake, replay_body
from sandbox.ids import fingerprint, is_uuid
from sandbox.routes_common import idempotent_write, read_write_body
from sandbox.state import SandboxState
from sandbox.transfers import RESERVED
from sandbox.validation import (
    parse_json_object,
    require,
    require_amount,
    require_uuid,
    require_value_unit,
)

BEARER_FEATURE = {
    "application_pays": c.FEE_APPLICATION_PAYS,
    "receiver_pays": c.FEE_RECEIVER_PAYS,
    "split": c.FEE_SPLIT,
}
GUARD_KINDS = ("provider_fee", "gas_fee")


def parse_destination(body: dict[str, Any]) -> dict[str, Any]:
    dest = require(body, "destination")
    if not isinstance(dest, dict):
        raise invalid_input("`destination` must be an object.")
    if dest.get("kind") != "internal-endpoint":
        raise invalid_input("`destination.kind` must be `internal-endpoint`.")
    return {
        "kind": "internal-endpoint",
        "accountRef": require_uuid(dest, "accountRef"),
        "endpointRef": require_uuid(dest, "endpointRef"),
        "holdingRef": require_uuid(dest, "holdingRef"),
    }


def check_fee_instruction(
    state: SandboxState, capabilities: frozenset[str], fee: Any
) -> str | None:
    """Gate the fee features by capability (403); inner names are docs/decisions.md's choice.

    Returns the bearer an application-fee instruction names (it overrides the environment's
    default bearer), else None. A guard is accepted and caps nothing: no external cost applies.
    """
    if fee is None:
        return None
    if not isinstance(fee, dict):
        raise invalid_input("`feeInstruction` must be an object.")
    kind = fee.get("kind")
    needed: list[str] = []
    bearer = None
    if kind == "request_application_fee":
        bearer = fee.get("bearer")
        if bearer not in BEARERS:
            raise invalid_input(f"`feeInstruction.bearer` must be one of {', '.join(BEARERS)}.")
        needed.append(c.FEE_APP_FEE)
        if bearer in BEARER_FEATURE:
            needed.append(BEARER_FEATURE[bearer])
    elif kind == "request_external_cost_guard":
        if fee.get("guardKind") not in GUARD_KINDS:
            raise invalid_input(f"`feeInstruction.guardKind` must be one of {GUARD_KINDS}.")
        needed.append(c.FEE_EXTERNAL_COST_GUARD)
    else:
        raise invalid_input(
            "`feeInstruction.kind` must be `request_application_fee` or "
            "`request_external_cost_guard`."
        )
    for name in needed:
        require_capability(state, capabilities, name)
    return bearer


#: Members a quote echoes from its request: an accepted quote must echo this request's.
QUOTED_MATERIAL = (
    "sourceAccountRef",
    "sourceEndpointRef",
    "sourceHoldingRef",
    "destination",
    "valueUnit",
    "amountMinorUnits",
)


def check_accepted_quote(body: dict[str, Any]) -> None:
    """`acceptedQuote` is a quote value as the quote read returned it, for this transfer.

    The spec passes it so the initiation is judged against the basis shown to the user; a
    quote for other material (another amount, holding or unit) cannot be that basis.
    """
    accepted = body.get("acceptedQuote")
    if accepted is None:
        return
    if not isinstance(accepted, dict):
        raise invalid_input("`acceptedQuote` must be an object: the quote read's `value`.")
    if not is_uuid(accepted.get("quoteBasisTransferRef")):
        raise invalid_input(
            "`acceptedQuote.quoteBasisTransferRef` must be a UUID: pass the quote read's "
            "`value` whole."
        )
    for name in QUOTED_MATERIAL:
        if name in accepted and accepted[name] != body.get(name):
            raise invalid_input(
                f"`acceptedQuote.{name}` differs from this transfer's `{name}`: the quote was "
                "made for another transfer; quote this one again."
            )


def parse_transfer_material(
    state: SandboxState, capabilities: frozenset[str], body: dict[str, Any]
) -> tuple[tuple[str, str, str], dict[str, Any], str, int, str | None]:
    source = (
        require_uuid(body, "sourceAccountRef"),
        require_uuid(body, "sourceEndpointRef"),
        require_uuid(body, "sourceHoldingRef"),
    )
    destination = parse_destination(body)
    currency = require_value_unit(body)
    amount = require_amount(body)
    bearer = check_fee_instruction(state, capabilities, body.get("feeInstruction"))
    return source, destination, currency, amount, bearer


def transfer_handlers(state: SandboxState) -> list[Any]:
    @post(
        "/transfers",
        opt={"route_key": "POST /v1/transfers", "capability": c.TRANSFER_CREATE},
    )
    async def create_transfer(request: Request[Any, Any, Any]) -> Response[bytes]:
        key, body = await read_write_body(request)
        capabilities: frozenset[str] = request.state.capabilities

        def perform(intake: Intake) -> tuple[int, dict[str, Any]]:
            source, destination, currency, amount, bearer = parse_transfer_material(
                state, capabilities, body
            )
            check_accepted_quote(body)
            receipt = state.ids.new()
            transfer = state.create_transfer(
                source,
                destination,
                currency,
                amount,
                receipt,
                fingerprint("transfer-initiation-material", body),
                bearer,
            )
            intake.subject_ref = transfer.transfer_ref
            status = 202 if transfer.phase == RESERVED else 200
            content = success(
                status, {"transfer": read_body(transfer.render(), receipt, ENGINE)}, [receipt]
            )
            return status, content

        def replay(intake: Intake) -> tuple[int, dict[str, Any]]:
            # The spec: 202 with `body.replay` and empty evidence, whatever the first answer was.
            return replay_body(intake, 202, SUBJECT_MEMBERS["POST /v1/transfers"])

        return idempotent_write(state, key, "POST /v1/transfers", body, perform, replay)

    @post(
        "/transfers/quote",
        opt={"route_key": "POST /v1/transfers/quote", "capability": c.TRANSFER_QUOTE_READ},
    )
    async def quote_transfer(request: Request[Any, Any, Any]) -> Response[bytes]:
        body = parse_json_object(await request.body())
        capabilities: frozenset[str] = request.state.capabilities
        if "acceptedQuote" in body:
            raise invalid_input("`acceptedQuote` belongs to transfer create, not to a quote.")
        source, destination, currency, amount, bearer = parse_transfer_material(
            state, capabilities, body
        )
        with state.lock:
            src, dst = state.check_transfer(source, destination, currency)
            fee = state.assess_fee(src, dst, amount, bearer, charged=False)
            now = format_timestamp(state.clock.now_ms())
            receipt = state.ids.new()
            value = {
                "quoteBasisTransferRef": state.ids.new(),
                "operationId": state.ids.new(),
                "sourceAccountRef": source[0],
                "sourceEndpointRef": source[1],
                "sourceHoldingRef": source[2],
                "destination": destination,
                "valueUnit": {"kind": "fiat", "currency": currency},
                "amountMinorUnits": str(amount),
                "requestedAt": now,
                "observedAt": now,
                "noFeeReason": "no_configured_fee",
                "totals": [],
                "lines": [],
                "externalCostEvidence": [],
            }
            if fee is not None:
                del value["noFeeReason"]
                shape = state.config.variant.fee_line_shape
                value.update(render_fees(shape, fee[0], fee[1], currency))
        return json_response(success(200, read_body(value, receipt, ENGINE), [receipt]), 200)

    @get(
        "/transfers/{transferRef:str}/status",
        opt={
            "route_key": "GET /v1/transfers/{transferRef}/status",
            "capability": c.TRANSFER_STATUS_READ,
        },
    )
    async def transfer_status(request: Request[Any, Any, Any]) -> Response[bytes]:
        ref = str(request.path_params["transferRef"]).lower()
        if not is_uuid(ref):
            raise invalid_input("Path `transferRef` must be a UUID.")
        with state.lock:
            transfer = state.transfers.get(ref)
            if transfer is None:
                raise not_found(f"No transfer {ref}.")
            value = transfer.render_status()
            receipt = state.ids.new()
        return json_response(success(200, read_body(value, receipt, ENGINE), [receipt]), 200)

    return [create_transfer, quote_transfer, transfer_status]
