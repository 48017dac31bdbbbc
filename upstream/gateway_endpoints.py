"""Gateway operations on endpoints: programmable endpoints (create, list, read, readiness,
suspend/resume) and receiving endpoints (create, current).

Each write returns its object, or `WriteReplayed` when the gateway answers a repeated
Idempotency-Key with a replay record instead (a provider choice: upstream.wire.replays); the key
is settled either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

import msgspec

from upstream.gateway_base import ENDPOINT_PAGE_MAX, RESUME_REASONS, SUSPEND_REASONS, GatewayBase
from upstream.idempotency import Outcome
from upstream.wire.common import Result, ValueUnit
from upstream.wire.decoding import decode
from upstream.wire.endpoints import (
    Endpoint,
    EndpointCommand,
    EndpointCreated,
    EndpointPage,
    EndpointRead,
    EndpointRequest,
    EndpointRow,
    LifecycleAnswer,
    LifecycleApplied,
    LifecycleGuard,
    Readiness,
    ScopedReadiness,
)
from upstream.wire.receiving import Activation, CurrentReceiving, ReceivingRequest
from upstream.wire.replays import WriteReplayed


class EndpointOperations(GatewayBase):
    """The endpoint half of the gateway client."""

    # -- programmable endpoints -------------------------------------------------------------

    def create_programmable_endpoint(
        self, request: EndpointRequest
    ) -> Result[EndpointCreated] | WriteReplayed:
        """POST /programmable-endpoints: the endpoint, or a replay of an earlier create."""
        body = request.to_wire()
        key, env = self._write("endpoint.create", "/programmable-endpoints", body, body)
        if replayed := self._replay_of("endpoint.create", key, env):
            return replayed
        command = decode(env.body.get("command") or {}, EndpointCommand, "response.body.command")
        read = env.read(Endpoint, "endpoint", key)
        created = EndpointCreated(
            occurrence=command.occurrence,
            provisioning_status=command.provisioning_status,
            endpoint=read.value,
        )
        result = read.carrying(created)
        self._keys.completed(
            key,
            Outcome.CREATED,
            str(result.value.endpoint.endpoint_ref),
            http_status=env.http_status,
        )
        return result

    def list_programmable_endpoints(
        self, *, page_size: int = 50, after_endpoint_ref: UUID | None = None
    ) -> Result[EndpointPage]:
        """GET /programmable-endpoints: one page of the register."""
        if not 1 <= page_size <= ENDPOINT_PAGE_MAX:
            raise ValueError(f"page_size must be between 1 and {ENDPOINT_PAGE_MAX}")
        params = {"pageSize": str(page_size)}
        if after_endpoint_ref is not None:
            params["afterEndpointRef"] = str(after_endpoint_ref)
        env = self._read("endpoint.list", "GET", "/programmable-endpoints", params=params)
        return env.read(EndpointPage)

    def iter_programmable_endpoints(
        self, *, page_size: int = ENDPOINT_PAGE_MAX
    ) -> Iterator[EndpointRow]:
        """Every row, following afterEndpointRef until a page shorter than page_size."""
        after: UUID | None = None
        while True:
            page = self.list_programmable_endpoints(page_size=page_size, after_endpoint_ref=after)
            yield from page.value.rows
            if len(page.value.rows) < page_size:
                return
            after = page.value.rows[-1].endpoint_ref

    def get_programmable_endpoint(self, endpoint_ref: UUID) -> Result[EndpointRead]:
        """GET /programmable-endpoints/{ref}: the endpoint with its current lifecycle guard."""
        env = self._read("endpoint.read", "GET", f"/programmable-endpoints/{endpoint_ref}")
        return env.read(EndpointRead)

    def endpoint_readiness(self, endpoint_ref: UUID) -> Result[Readiness]:
        """GET .../effective-operation-readiness: why each operation family is ready or not."""
        env = self._read(
            "endpoint.readiness",
            "GET",
            f"/programmable-endpoints/{endpoint_ref}/effective-operation-readiness",
        )
        scoped = env.read(ScopedReadiness)
        ready = scoped.value.result
        return env.read(Readiness) if ready is None else scoped.carrying(ready)

    def endpoint_lifecycle(
        self, endpoint_ref: UUID, operation: str, reason: str, guard: LifecycleGuard
    ) -> Result[LifecycleApplied] | WriteReplayed:
        """POST .../lifecycle. A stale guard raises StaleGuard and is never retried.

        A replay answered with the first answer comes back as that answer (`replayed` true); one
        answered with a replay record as `WriteReplayed` (read the endpoint for its posture).
        """
        allowed = {"suspend": SUSPEND_REASONS, "resume": RESUME_REASONS}.get(operation)
        if allowed is None:
            raise ValueError("operation must be 'suspend' or 'resume'")
        if reason not in allowed:
            raise ValueError(f"{operation} takes a reason in {', '.join(allowed)}")
        body = {"operation": operation, "reason": reason, "lifecycleGuard": guard.to_wire()}
        material = {"endpointRef": str(endpoint_ref), **body}
        key, env = self._write(
            "endpoint.lifecycle",
            f"/programmable-endpoints/{endpoint_ref}/lifecycle",
            body,
            material,
        )
        if replayed := self._replay_of("endpoint.lifecycle", key, env):
            return replayed
        command = decode(env.body.get("command") or {}, EndpointCommand, "response.body.command")
        read = env.read(LifecycleAnswer, "endpoint", key)
        applied = msgspec.structs.replace(
            read.value.result.applied or LifecycleApplied(),
            kind=read.value.result.kind,
            occurrence=command.occurrence,
            lifecycle_status=command.lifecycle_status,
            replayed=bool(command.replayed),
        )
        result = read.carrying(applied)
        self._keys.completed(key, Outcome.APPLIED, str(endpoint_ref), http_status=env.http_status)
        return result

    def suspend_endpoint(
        self, endpoint_ref: UUID, guard: LifecycleGuard, reason: str = "operator_hold"
    ) -> Result[LifecycleApplied] | WriteReplayed:
        """Suspend with the guard from the latest read."""
        return self.endpoint_lifecycle(endpoint_ref, "suspend", reason, guard)

    def resume_endpoint(
        self, endpoint_ref: UUID, guard: LifecycleGuard, reason: str = "operator_cleared"
    ) -> Result[LifecycleApplied] | WriteReplayed:
        """Resume with the guard from the latest read."""
        return self.endpoint_lifecycle(endpoint_ref, "resume", reason, guard)

    # -- receiving endpoints ----------------------------------------------------------------

    def create_receiving_endpoint(
        self, request: ReceivingRequest
    ) -> Result[Activation] | WriteReplayed:
        """POST /receiving-endpoints: provision one for an owner and unit (or a replay)."""
        body = request.to_wire()
        key, env = self._write("receiving.create", "/receiving-endpoints", body, body)
        if replayed := self._replay_of("receiving.create", key, env):
            return replayed
        result = env.read(Activation, "activation", key)
        self._keys.completed(
            key, Outcome.CREATED, str(result.value.activation_ref), http_status=env.http_status
        )
        return result

    def current_receiving_endpoint(
        self, owner_ref: UUID, owner_kind: str, value_unit: ValueUnit
    ) -> Result[CurrentReceiving]:
        """GET /receiving-endpoints/current. Unit members that do not apply are sent empty."""
        params = {
            "ownerKind": owner_kind,
            "ownerRef": str(owner_ref),
            "valueUnitKind": value_unit.kind,
            "currency": value_unit.currency or "",
            "asset": value_unit.asset or "",
            "network": value_unit.network or "",
            "instrumentRef": value_unit.instrument_ref or "",
        }
        env = self._read("receiving.current", "GET", "/receiving-endpoints/current", params=params)
        return env.read(CurrentReceiving)
