"""The gateway client's foundation: credentials, the pooled core, keyed writes, capabilities.

Split from the operations so each module stays small: `GatewayBase` owns the one `HttpCore` and
the Idempotency-Key discipline every write follows (ask `IdempotencyKeys` first, which records
the key before the request goes out; retry only under that key; close it on a final answer).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

import httpx

from upstream.errors import Conflict, InvalidInput, NotFound, ProviderError
from upstream.idempotency import IdempotencyKeys, MemoryIdempotencyKeys, Outcome
from upstream.pooled_client import PooledClient, optional_throttle
from upstream.retry import RetryPolicy
from upstream.transport import (
    DEFAULT_LIMITS,
    DEFAULT_TIMEOUT,
    Call,
    ErrorDetails,
    HttpCore,
    Reply,
    join_base,
)
from upstream.wire.common import Envelope, parse_envelope
from upstream.wire.decoding import decode
from upstream.wire.evidence import Evidence
from upstream.wire.replays import REPLAY_MEMBER, WriteReplayed, parse_write_replay

# Operation -> capability the key needs (spec part 4). Used to name it in Forbidden.
CAPABILITIES: Mapping[str, str] = {
    "transfer.create": "TransferCreate",
    "transfer.quote": "TransferQuoteRead",
    "transfer.status": "TransferStatusRead",
    "endpoint.create": "ProgrammableEndpointCreate",
    "endpoint.list": "ProgrammableEndpointList",
    "endpoint.read": "ProgrammableEndpointRead",
    "endpoint.readiness": "ProgrammableEndpointRead",
    "endpoint.lifecycle": "ProgrammableEndpointLifecycleManage",
    "receiving.create": "ReceivingEndpointCreate",
    "receiving.current": "ReceivingEndpointRead",
    "environment.read": "EnvironmentStatusRead",
    "balance.current": "BalanceSnapshotRead",
    "balance.activity": "BalancePostedActivityRead",
    "sandbox.inbound_credit": "SandboxInboundCreditSimulationCreate",
}
SUSPEND_REASONS = ("operator_hold", "provider_restriction", "compliance_hold")
RESUME_REASONS = ("operator_cleared",)
ENDPOINT_PAGE_MAX = 100


def read_problem(data: object) -> ErrorDetails:
    """Read the gateway error wrapper `{status, problem: {kind, code, message, evidence}}`."""
    if not isinstance(data, dict) or not isinstance(data.get("problem"), dict):
        return ErrorDetails()
    problem: dict[str, Any] = data["problem"]
    try:
        evidence = decode(problem.get("evidence") or [], tuple[Evidence, ...], "problem.evidence")
    except ProviderError:
        evidence = ()
    return ErrorDetails(
        kind=problem.get("kind") if isinstance(problem.get("kind"), str) else None,
        code=problem.get("code") if isinstance(problem.get("code"), str) else None,
        message=problem.get("message") if isinstance(problem.get("message"), str) else None,
        evidence=evidence,
    )


class GatewayBase(PooledClient):
    """Construction, lifetime and request plumbing shared by every gateway operation."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        idempotency: IdempotencyKeys | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        limits: httpx.Limits = DEFAULT_LIMITS,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        requests_per_second: float | None = None,
    ) -> None:
        self._keys: IdempotencyKeys = idempotency or MemoryIdempotencyKeys()
        self._core = HttpCore(
            api="the gateway",
            base_url=join_base(base_url, "/v1"),
            auth_headers={"Authorization": f"Bearer {api_key}"},
            secrets={"gateway API key": api_key},
            read_envelope=read_problem,
            credential_hint="gateway API key",
            transport=transport,
            timeout=timeout,
            limits=limits,
            policy=retry or RetryPolicy(),
            sleep=sleep,
            rng=rng or random.Random(),
            throttle=optional_throttle(requests_per_second),
        )

    # -- plumbing ---------------------------------------------------------------------------

    def _read(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Envelope:
        call = Call(
            operation=operation,
            method=method,
            path=path,
            params=params,
            body=body,
            safe=True,
            capability=CAPABILITIES[operation],
        )
        reply = self._core.send(call)
        return parse_envelope(reply.data, reply.status)

    def _write(
        self,
        operation: str,
        path: str,
        body: Mapping[str, Any],
        material: Mapping[str, Any],
        *,
        before_send: Callable[[UUID], None] | None = None,
    ) -> tuple[UUID, Envelope]:
        """Send a keyed write. The key is recorded before sending and closed on a final answer.

        A refusal that will not change on repeat (400, 404, 409) closes the key as rejected, so
        a corrected request gets a fresh one. Anything that may have been processed (timeouts,
        5xx, unreadable answers) leaves the key open: the next identical request reuses it and
        the gateway replays instead of acting twice.

        `before_send(key)` runs after the key is recorded and before anything goes out: the
        caller's chance to record its own intent under that key (a transfer we are asking for).
        If it raises, nothing is sent.
        """
        key = self._keys.key_for(operation, material)
        if before_send is not None:
            before_send(key)
        self._keys.sent(key)
        call = Call(
            operation=operation,
            method="POST",
            path=path,
            body=body,
            idempotency_key=key,
            safe=True,
            capability=CAPABILITIES[operation],
        )
        try:
            reply: Reply = self._core.send(call)
        except (InvalidInput, NotFound, Conflict) as exc:
            self._keys.completed(
                key,
                f"{Outcome.REJECTED}:{type(exc).__name__}",
                None,
                http_status=exc.http_status,
            )
            raise
        return key, parse_envelope(reply.data, reply.status)

    def _replay_of(self, operation: str, key: UUID, env: Envelope) -> WriteReplayed | None:
        """The replay outcome when the answer is a replay record (its key is settled), else None.

        Checked before the answer is read as the object, so a provider that replays every write
        with a record (upstream.wire.replays) neither fails the read nor leaves the key open.
        """
        raw = env.body.get(REPLAY_MEMBER)
        if raw is None:
            return None
        record = env.section(REPLAY_MEMBER)[0].value if isinstance(raw, dict) else {}
        replay = parse_write_replay(
            record,
            operation=operation,
            idempotency_key=key,
            http_status=env.http_status,
            evidence=env.all_evidence(REPLAY_MEMBER) if isinstance(raw, dict) else env.evidence,
        )
        subject = str(replay.subject_ref) if replay.subject_ref is not None else None
        self._keys.completed(key, Outcome.REPLAYED, subject, http_status=env.http_status)
        return replay
