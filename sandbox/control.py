"""The sandbox-only control API under ``/_sandbox`` (no authentication: the sandbox binds to
loopback and is never a real provider).

It lets a test or an operator bend the world at runtime: faults, transfer outcomes, keys,
events on demand, the clock, bulk scenarios, and the delivery log. Errors are plain
``{"error": message}`` with 400 or 404; this API is not part of either spec.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from litestar import Request, Response, Router, delete, get, post

from sandbox.bulk import build_bulk
from sandbox.config import ALL_CAPABILITIES, SANDBOX_KEY_PREFIX
from sandbox.envelopes import GatewayError, json_response
from sandbox.faults import Fault
from sandbox.fees import FeeScheduleError, schedule_from_wire
from sandbox.ids import is_uuid
from sandbox.ledger import CREDIT, append_row, render_entry
from sandbox.signing import public_key_text
from sandbox.state import SandboxState
from sandbox.transfers import OUTCOMES
from sandbox.webhooks import WEBHOOK_STATUSES


class ControlError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def _body(request: Request[Any, Any, Any]) -> dict[str, Any]:
    raw = await request.body()
    try:
        value = json.loads(raw or b"{}")
    except ValueError as exc:
        raise ControlError(400, "body is not JSON") from exc
    if not isinstance(value, dict):
        raise ControlError(400, "body must be a JSON object")
    return value


def _fault(body: dict[str, Any], target_field: str) -> Fault:
    kind = body.get("kind")
    if not isinstance(kind, str):
        raise ControlError(400, "kind is required")
    seconds = body.get("seconds")
    count = body.get("count")
    return Fault(
        target=str(body.get(target_field) or "*"),
        kind=kind,
        rate=float(body.get("rate", 1.0)),
        count=int(count) if count is not None else None,
        seconds=float(seconds) if seconds is not None else None,
        status=int(body.get("status", 503)),
        when=str(body.get("when", "after")),
    )


def control_router(state: SandboxState) -> Router:
    @get("/state")
    async def summary() -> Response[bytes]:
        with state.lock:
            data = {
                "endpoints": len(state.directory.endpoints),
                "holdings": len(state.holdings),
                "postings": sum(len(h.rows) for h in state.holdings.values()),
                "transfers": len(state.transfers),
                "webhooks": [
                    h.render() | {"webhookId": h.webhook_id} for h in state.webhooks.values()
                ],
                "pendingJobs": state.scheduler.pending(),
                "clockMs": state.clock.now_ms(),
                "keys": {k: sorted(v) for k, v in state.keys.items()},
            }
        return json_response(data, 200)

    @post("/reset")
    async def reset() -> Response[bytes]:
        state.reset()
        return json_response({"reset": True}, 200)

    @post("/clock/advance")
    async def advance(request: Request[Any, Any, Any]) -> Response[bytes]:
        seconds = float((await _body(request)).get("seconds", 0))
        state.clock.advance(seconds)
        return json_response({"clockMs": state.clock.now_ms()}, 200)

    @post("/run-due", sync_to_thread=True)
    def run_due() -> Response[bytes]:
        return json_response({"ran": state.run_due()}, 200)

    @post("/settle-now", sync_to_thread=True)
    def settle_now() -> Response[bytes]:
        return json_response({"ran": state.settle_now()}, 200)

    @get("/faults")
    async def list_faults() -> Response[bytes]:
        book = state.faults
        data = {
            "routes": [f.to_wire() for f in book.route_faults],
            "deliveries": [f.to_wire() for f in book.delivery_faults],
        }
        return json_response(data, 200)

    @post("/faults/routes")
    async def add_route_fault(request: Request[Any, Any, Any]) -> Response[bytes]:
        fault = _fault(await _body(request), "route")
        try:
            state.faults.add_route(fault)
        except ValueError as exc:
            raise ControlError(400, str(exc)) from exc
        return json_response(fault.to_wire(), 201)

    @post("/faults/deliveries")
    async def add_delivery_fault(request: Request[Any, Any, Any]) -> Response[bytes]:
        fault = _fault(await _body(request), "eventType")
        try:
            state.faults.add_delivery(fault)
        except ValueError as exc:
            raise ControlError(400, str(exc)) from exc
        return json_response(fault.to_wire(), 201)

    @delete("/faults", status_code=200)
    async def clear_faults() -> Response[bytes]:
        state.faults.clear()
        return json_response({"cleared": True}, 200)

    @get("/fees")
    async def get_fees() -> Response[bytes]:
        with state.lock:
            schedule = state.fee_schedule
            data = {
                "schedule": schedule.to_wire() if schedule else None,
                "applicationFeeHoldings": [
                    {
                        "accountRef": h.account_ref,
                        "endpointRef": h.endpoint_ref,
                        "holdingRef": h.holding_ref,
                        "valueUnit": h.value_unit,
                    }
                    for h in state.fee_holdings.values()
                ],
            }
        return json_response(data, 200)

    @post("/fees")
    async def set_fees(request: Request[Any, Any, Any]) -> Response[bytes]:
        """Replace the fee schedule; transfers already created keep the fee they were assessed."""
        try:
            schedule = schedule_from_wire(await _body(request))
        except FeeScheduleError as exc:
            raise ControlError(400, str(exc)) from exc
        with state.lock:
            state.fee_schedule = schedule
        return json_response({"schedule": schedule.to_wire()}, 200)

    @delete("/fees", status_code=200)
    async def clear_fees() -> Response[bytes]:
        with state.lock:
            state.fee_schedule = None
        return json_response({"schedule": None}, 200)

    @post("/transfers/outcomes")
    async def set_outcome(request: Request[Any, Any, Any]) -> Response[bytes]:
        body = await _body(request)
        outcome = body.get("outcome")
        if outcome not in OUTCOMES:
            raise ControlError(400, "outcome must be settle, fail or hold")
        ref = body.get("transferRef")
        if ref is None:
            state.outcomes.queue_next(outcome)
            return json_response({"queued": outcome}, 200)
        if not is_uuid(ref) or ref.lower() not in state.transfers:
            raise ControlError(404, "no such transfer")
        if body.get("now"):
            state.finalize(ref.lower(), outcome)
        else:
            state.outcomes.fix(ref.lower(), outcome)
        return json_response({"transferRef": ref.lower(), "outcome": outcome}, 200)

    @post("/events/kyc-verified")
    async def kyc_verified(request: Request[Any, Any, Any]) -> Response[bytes]:
        ref = str((await _body(request)).get("endpointRef", "")).lower()
        try:
            event_id = state.emit_kyc_verified(ref)
        except GatewayError as exc:
            raise ControlError(404, exc.message) from exc
        return json_response({"eventId": event_id}, 201)

    @post("/keys")
    async def add_key(request: Request[Any, Any, Any]) -> Response[bytes]:
        body = await _body(request)
        key = body.get("key")
        caps = body.get("capabilities", "ALL")
        if not isinstance(key, str) or not key.startswith(SANDBOX_KEY_PREFIX):
            raise ControlError(400, f"key must start with {SANDBOX_KEY_PREFIX}")
        chosen = ALL_CAPABILITIES if caps == "ALL" else frozenset(caps)
        unknown = chosen - ALL_CAPABILITIES
        if unknown:
            raise ControlError(400, f"unknown capabilities: {sorted(unknown)}")
        with state.lock:
            state.keys[key] = chosen
        return json_response({"key": key, "capabilities": sorted(chosen)}, 201)

    @post("/scenarios/bulk")
    async def bulk(request: Request[Any, Any, Any]) -> Response[bytes]:
        data = await _body(request)
        holdings = build_bulk(
            state,
            holdings=int(data.get("holdings", 1000)),
            postings=int(data.get("postings", 1_000_000)),
            seed=data.get("seed"),
        )
        return json_response({"holdings": holdings}, 201)

    @post("/postings/backdated")
    async def backdated_posting(request: Request[Any, Any, Any]) -> Response[bytes]:
        """Post a credit at `postedAt` (or `secondsBefore` now), silently (no webhook): a
        provider correcting its ledger behind a reader's cursor, which only a full re-read
        (recon audit) finds."""
        body = await _body(request)
        holding_ref = str(body.get("holdingRef", ""))
        amount = body.get("amountMinorUnits")
        seconds = body.get("secondsBefore", 3600)
        if not isinstance(amount, str) or not amount.isdigit() or int(amount) <= 0:
            raise ControlError(400, "amountMinorUnits must be a string of positive minor units")
        if not isinstance(seconds, int | float) or seconds <= 0:
            raise ControlError(400, "secondsBefore must be a positive number of seconds")
        at = body.get("postedAt")
        try:
            at_ms = round(datetime.fromisoformat(at).timestamp() * 1000) if at else None
        except (TypeError, ValueError) as exc:
            raise ControlError(400, "postedAt must be an ISO 8601 time with a zone") from exc
        with state.lock:
            holding = state.holdings.get(holding_ref)
            if holding is None:
                raise ControlError(404, f"no holding {holding_ref}")
            posted = at_ms if at_ms is not None else state.clock.now_ms() - round(seconds * 1000)
            row = (
                posted,
                state.ids.new_int(),
                state.ids.new_int(),
                state.ids.new_int(),
                int(amount),
                CREDIT,
            )
            append_row(holding, row, 0)
            entry = render_entry(holding, row)
        return json_response(entry, 201)

    @get("/deliveries")
    async def deliveries(request: Request[Any, Any, Any]) -> Response[bytes]:
        webhook_id = request.query_params.get("webhookId")
        event_type = request.query_params.get("eventType")
        with state.lock:
            rows = [
                a.to_wire()
                for a in state.deliveries
                if (webhook_id is None or a.webhook_id == webhook_id)
                and (event_type is None or a.event_type == event_type)
            ]
        return json_response({"deliveries": rows}, 200)

    @get("/events")
    async def events() -> Response[bytes]:
        with state.lock:
            return json_response({"events": list(state.events)}, 200)

    @get("/webhooks/{webhookId:str}/public-key")
    async def public_key(request: Request[Any, Any, Any]) -> Response[bytes]:
        hook = state.webhooks.get(str(request.path_params["webhookId"]))
        if hook is None:
            raise ControlError(404, "no such webhook")
        return json_response({"publicKey": public_key_text(hook.secret)}, 200)

    @post("/webhooks/{webhookId:str}/status")
    async def set_webhook_status(request: Request[Any, Any, Any]) -> Response[bytes]:
        status = (await _body(request)).get("status")
        if status not in WEBHOOK_STATUSES:
            raise ControlError(400, f"status must be one of {WEBHOOK_STATUSES}")
        with state.lock:
            hook = state.webhooks.get(str(request.path_params["webhookId"]))
            if hook is None:
                raise ControlError(404, "no such webhook")
            hook.status = status
            hook.consecutive_failures = 0
            return json_response(hook.render(), 200)

    def on_error(_: Request[Any, Any, Any], exc: ControlError) -> Response[bytes]:
        return json_response({"error": exc.message}, exc.status)

    return Router(
        path="/_sandbox",
        route_handlers=[
            summary,
            reset,
            advance,
            run_due,
            settle_now,
            list_faults,
            add_route_fault,
            add_delivery_fault,
            clear_faults,
            get_fees,
            set_fees,
            clear_fees,
            set_outcome,
            kyc_verified,
            add_key,
            bulk,
            backdated_posting,
            deliveries,
            events,
            public_key,
            set_webhook_status,
        ],
        exception_handlers={ControlError: on_error},
    )
