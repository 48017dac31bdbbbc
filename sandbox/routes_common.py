"""What every gateway write shares: the idempotent intake around the actual work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Request, Response

from sandbox.envelopes import json_response
from sandbox.idempotency import IdempotencyStore, Intake
from sandbox.state import SandboxState
from sandbox.validation import parse_json_object

# perform(intake) -> (http status, response content); it may raise GatewayError, in which case
# nothing is remembered and the key stays free.
Perform = Callable[[Intake], tuple[int, dict[str, Any]]]
# replay(intake) -> (http status, response content) for a repeated key with equal material.
Replay = Callable[[Intake], tuple[int, dict[str, Any]]]


async def read_write_body(request: Request[Any, Any, Any]) -> tuple[str, dict[str, Any]]:
    """Idempotency-Key first (400 when missing or malformed), then the JSON body."""
    key = IdempotencyStore.check_key(request.headers.get("idempotency-key"))
    body = parse_json_object(await request.body())
    return key, body


def stored_replay(intake: Intake) -> tuple[int, dict[str, Any]]:
    """Default replay: the first answer again, as it was."""
    assert intake.response is not None
    return intake.status, intake.response


def idempotent_write(
    state: SandboxState,
    key: str,
    operation: str,
    body: dict[str, Any],
    perform: Perform,
    replay: Replay = stored_replay,
) -> Response[bytes]:
    """Replay an earlier intake under ``key``, refuse changed material, or perform once."""
    with state.lock:
        now = state.clock.now_ms()
        earlier = state.idempotency.lookup(key, operation, body, now)
        if earlier is not None:
            status, content = replay(earlier)
            return json_response(content, status)
        intake = Intake(operation, "", now, state.ids.new(), state.ids.new())
        status, content = perform(intake)
        record = state.idempotency.remember(
            key, operation, body, now, intake.intake_ref, intake.envelope_ref
        )
        record.status, record.response, record.subject_ref = status, content, intake.subject_ref
        return json_response(content, status)
