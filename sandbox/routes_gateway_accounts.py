"""Gateway receiving endpoints, sandbox inbound credits, and environment status."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post

from sandbox import config as c
from sandbox.config import format_timestamp
from sandbox.endpoints import RECEIVING, Endpoint
from sandbox.envelopes import (
    ACCOUNTS,
    EVENTS,
    SECURITY,
    invalid_input,
    json_response,
    not_found,
    read_body,
    success,
)
from sandbox.idempotency import Intake, replay_for
from sandbox.ids import fingerprint
from sandbox.routes_common import idempotent_write, read_write_body, stored_replay
from sandbox.state import SandboxState
from sandbox.units import unit_key
from sandbox.validation import require_amount, require_uuid, require_value_unit

UNIT_QUERY_PARTS = ("asset", "network", "instrumentRef")


def current_view(ep: Endpoint) -> dict[str, Any]:
    activation = ep.activation or {}
    return {
        "resource": {
            "activationRef": activation.get("activationRef"),
            "endpointRef": ep.endpoint_ref,
            "ownerRef": ep.owner_ref,
            "ownerKind": ep.owner_kind,
            "capabilityRef": activation.get("capabilityRef"),
            "holdingUnits": [ep.value_unit],
            "availability": "Available",
            "freshness": "Current",
        },
        "account": {
            "accountRef": ep.account_ref,
            "ownerRef": ep.owner_ref,
            "ownerKind": ep.owner_kind,
            "endpointRef": ep.endpoint_ref,
            "holdingRefs": [ep.holding_ref],
        },
    }


def account_handlers(state: SandboxState) -> list[Any]:
    @post(
        "/receiving-endpoints",
        opt={"route_key": "POST /v1/receiving-endpoints", "capability": c.RECEIVING_CREATE},
    )
    async def create_receiving(request: Request[Any, Any, Any]) -> Response[bytes]:
        key, body = await read_write_body(request)

        def perform(intake: Intake) -> tuple[int, dict[str, Any]]:
            owner_ref = require_uuid(body, "ownerRef")
            owner_kind = body.get("ownerKind")
            if not isinstance(owner_kind, str) or not owner_kind:
                raise invalid_input("`ownerKind` is required.")
            currency = require_value_unit(body)
            index = (owner_kind, owner_ref, currency)
            existing = state.directory.receiving_current.get(index)
            if existing is not None:
                ep = state.directory.endpoints[existing]
            else:
                ep = state.create_endpoint(RECEIVING, owner_ref, owner_kind, currency)
                state.directory.receiving_current[index] = ep.endpoint_ref
            receipt = state.ids.new()
            activation = {
                "activationRef": state.ids.new(),
                "accountRef": ep.account_ref,
                "endpointRef": ep.endpoint_ref,
                "holdingRefs": [ep.holding_ref],
                "ownerRef": owner_ref,
                "ownerKind": owner_kind,
                "capabilityRef": state.ids.new(),
                "valueUnit": ep.value_unit,
                "requestEvidenceRef": receipt,
                "readinessReceiptRef": state.ids.new(),
                "idempotencyKey": key,
            }
            ep.activation = activation
            intake.subject_ref = ep.endpoint_ref
            content = success(
                200, {"activation": read_body(activation, receipt, ACCOUNTS)}, [receipt]
            )
            return 200, content

        route = "POST /v1/receiving-endpoints"
        replay = replay_for(state.config.variant.write_replay, route, stored_replay)
        return idempotent_write(state, key, route, body, perform, replay)

    @get(
        "/receiving-endpoints/current",
        opt={"route_key": "GET /v1/receiving-endpoints/current", "capability": c.RECEIVING_READ},
    )
    async def current_receiving(request: Request[Any, Any, Any]) -> Response[bytes]:
        query = request.query_params
        for name in ("ownerKind", "ownerRef", "valueUnitKind"):
            if not query.get(name):
                raise invalid_input(f"Query parameter `{name}` is required.")
        missing = [p for p in UNIT_QUERY_PARTS if p not in query]
        kind = query["valueUnitKind"]
        if kind == "fiat":
            currency = query.get("currency") or ""
            if len(currency) != 3:
                raise invalid_input("`currency` is required for a fiat value unit.")
            if missing or any(query[p] for p in UNIT_QUERY_PARTS):
                raise invalid_input(
                    "`asset`, `network` and `instrumentRef` do not apply to fiat: send them "
                    "empty, not omitted."
                )
        else:
            parts = {p: query[p] for p in UNIT_QUERY_PARTS if query.get(p)}
            try:
                currency = unit_key({"kind": kind, **parts}, "query")
            except ValueError as exc:
                raise invalid_input(str(exc)) from None
        owner_ref = query["ownerRef"].lower()
        with state.lock:
            ref = state.directory.receiving_current.get((query["ownerKind"], owner_ref, currency))
            if ref is None:
                raise not_found("No receiving endpoint for that owner and value unit.")
            value = current_view(state.directory.endpoints[ref])
            receipt = state.ids.new()
        return json_response(success(200, read_body(value, receipt, ACCOUNTS), [receipt]), 200)

    @post(
        "/sandbox/inbound-credits",
        opt={
            "route_key": "POST /v1/sandbox/inbound-credits",
            "capability": c.INBOUND_CREDIT_CREATE,
        },
    )
    async def inbound_credit(request: Request[Any, Any, Any]) -> Response[bytes]:
        key, body = await read_write_body(request)

        def perform(intake: Intake) -> tuple[int, dict[str, Any]]:
            account_ref = require_uuid(body, "accountRef")
            endpoint_ref = require_uuid(body, "endpointRef")
            holding_ref = require_uuid(body, "holdingRef")
            currency = require_value_unit(body)
            amount = require_amount(body)
            holding = state.holding_at(account_ref, endpoint_ref, holding_ref)
            if holding.currency != currency:
                raise invalid_input(
                    f"`valueUnit` {currency} does not match the holding's unit {holding.currency}."
                )
            posting_receipt = state.ids.new()
            state.accept_inbound_credit(holding, amount, posting_receipt)
            receipt = state.ids.new()
            simulation_ref = state.ids.new()
            value: dict[str, Any] = {
                "simulationRef": simulation_ref,
                "acceptedAt": format_timestamp(state.clock.now_ms()),
                "stage": "EvidencePublished",
                "revision": 1,
                "materialFingerprint": fingerprint("sandbox-simulation-material", body),
                "targetAccountRef": account_ref,
                "targetEndpointRef": endpoint_ref,
                "targetHoldingRef": holding_ref,
                "valueUnit": holding.value_unit,
                "amountMinorUnits": str(amount),
                "requestedBy": receipt,
                "accountsPostingReceiptRef": posting_receipt,
                "eventReceiptRefs": [state.ids.new()],
            }
            state.simulations[simulation_ref] = value
            intake.subject_ref = simulation_ref
            content = success(202, {"simulation": read_body(value, receipt, EVENTS)}, [receipt])
            return 202, content

        route = "POST /v1/sandbox/inbound-credits"
        replay = replay_for(state.config.variant.write_replay, route, stored_replay)
        return idempotent_write(state, key, route, body, perform, replay)

    @get(
        "/environment",
        opt={"route_key": "GET /v1/environment", "capability": c.ENVIRONMENT_READ},
    )
    async def environment() -> Response[bytes]:
        cfg = state.config
        value = {
            "organisationRef": cfg.organisation_ref,
            "applicationRef": cfg.company_app_id,
            "environmentRef": cfg.environment_ref,
            "environmentKind": cfg.environment_kind,
            "displayName": cfg.environment_display_name,
            "appStatus": "Active",
            "environmentStatus": "Active",
            "allowedActions": ["ViewEnvironmentShell"],
            "unavailableParts": list(cfg.environment_unavailable_parts),
        }
        receipt = state.ids.new()
        return json_response(success(200, read_body(value, receipt, SECURITY), [receipt]), 200)

    return [create_receiving, current_receiving, inbound_credit, environment]
