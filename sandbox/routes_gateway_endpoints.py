"""Gateway programmable endpoints: create, list, read, effective readiness, lifecycle."""

from __future__ import annotations

import copy
from typing import Any

from litestar import Request, Response, get, post

from sandbox import config as c
from sandbox.endpoints import (
    ACTIVE,
    RESUME_REASONS,
    SUSPEND_REASONS,
    SUSPENDED,
    TEMPLATES,
    Endpoint,
)
from sandbox.envelopes import (
    ACCOUNTS,
    COMPLIANCE,
    conflict,
    invalid_input,
    json_response,
    not_found,
    read_body,
    success,
)
from sandbox.idempotency import Intake, replay_for
from sandbox.ids import is_uuid
from sandbox.routes_common import idempotent_write, read_write_body, stored_replay
from sandbox.state import SandboxState
from sandbox.validation import (
    page_size,
    query_uuid,
    refuse_fields,
    require,
    require_uuid,
    require_value_unit,
)

CREATE_DERIVED = (
    "providerRefs",
    "collectionRefs",
    "parentEndpointRefs",
    "providerAllocationKeys",
    "locatorPayloads",
    "providerSelectionHints",
)
LIFECYCLE_REFUSED = (
    "policyFingerprint",
    "expectedStateVersion",
    "expectedPolicyFingerprint",
    "commandRef",
    "providerRefs",
    "topologyRefs",
    "obligationRefs",
)


def scope_fields(state: SandboxState) -> dict[str, Any]:
    cfg = state.config
    return {
        "organisationRef": cfg.organisation_ref,
        "appRef": cfg.company_app_id,
        "environmentRef": cfg.environment_ref,
    }


def path_ref(request: Request[Any, Any, Any]) -> str:
    ref = str(request.path_params["endpointRef"]).lower()
    if not is_uuid(ref):
        raise invalid_input("Path `endpointRef` must be a UUID.")
    return ref


def lookup_kind(state: SandboxState, ref: str) -> tuple[str, Endpoint | None]:
    ep = state.endpoint(ref)
    if ep is not None and ep.programmable:
        return "found", ep
    if ep is not None or state.directory.is_collection_parent(ref):
        return "not_programmable_endpoint", None
    return "not_found", None


def parse_owner(body: dict[str, Any]) -> tuple[str, str]:
    owner = require(body, "owner")
    if not isinstance(owner, dict):
        raise invalid_input("`owner` must be an object.")
    if owner.get("kind") != "existing_account_owner":
        raise invalid_input("`owner.kind` must be `existing_account_owner`.")
    owner_kind = owner.get("ownerKind")
    if not isinstance(owner_kind, str) or not owner_kind:
        raise invalid_input("`owner.ownerKind` is required.")
    return require_uuid(owner, "ownerRef"), owner_kind


def parse_guard(body: dict[str, Any]) -> tuple[int, str]:
    guard = require(body, "lifecycleGuard")
    if not isinstance(guard, dict):
        raise invalid_input("`lifecycleGuard` must be an object.")
    version, fp = guard.get("stateVersion"), guard.get("fingerprint")
    if not isinstance(version, int) or isinstance(version, bool) or not isinstance(fp, str):
        raise invalid_input("`lifecycleGuard` needs integer `stateVersion` and `fingerprint`.")
    return version, fp


def endpoint_handlers(state: SandboxState) -> list[Any]:
    @post(
        "/programmable-endpoints",
        opt={"route_key": "POST /v1/programmable-endpoints", "capability": c.ENDPOINT_CREATE},
    )
    async def create_endpoint(request: Request[Any, Any, Any]) -> Response[bytes]:
        key, body = await read_write_body(request)

        def perform(intake: Intake) -> tuple[int, dict[str, Any]]:
            refuse_fields(body, CREATE_DERIVED)
            template = require(body, "template")
            if template not in TEMPLATES:
                raise invalid_input(f"`template` must be one of {', '.join(TEMPLATES)}.")
            for program in ("thresholdProgram", "transientProgram"):
                if body.get(program) is not None:
                    raise invalid_input(f"`{program}` does not apply to template `{template}`.")
            owner_ref, owner_kind = parse_owner(body)
            currency = require_value_unit(body)
            ep = state.create_endpoint(template, owner_ref, owner_kind, currency)
            intake.subject_ref = ep.endpoint_ref
            receipt = state.ids.new()
            content = success(
                200,
                {
                    "command": {"occurrence": "first_accepted", "provisioningStatus": "created"},
                    "endpoint": read_body(ep.render(with_guard=False), receipt, ACCOUNTS),
                },
                [receipt],
            )
            return 200, content

        route = "POST /v1/programmable-endpoints"
        replay = replay_for(state.config.variant.write_replay, route, stored_replay)
        return idempotent_write(state, key, route, body, perform, replay)

    @get(
        "/programmable-endpoints",
        opt={"route_key": "GET /v1/programmable-endpoints", "capability": c.ENDPOINT_LIST},
    )
    async def list_endpoints(request: Request[Any, Any, Any]) -> Response[bytes]:
        query = request.query_params
        cfg = state.config
        size = page_size(query.get("pageSize"), cfg.endpoint_page_default, cfg.endpoint_page_max)
        after = query_uuid(query, "afterEndpointRef", required=False)
        with state.lock:
            if after is not None and lookup_kind(state, after)[0] != "found":
                raise invalid_input("`afterEndpointRef` names no programmable endpoint.")
            rows = [ep.render_row() for ep in state.directory.page(size, after)]
            receipt = state.ids.new()
        value = {**scope_fields(state), "rows": rows}
        return json_response(success(200, read_body(value, receipt, ACCOUNTS), [receipt]), 200)

    @get(
        "/programmable-endpoints/{endpointRef:str}",
        opt={
            "route_key": "GET /v1/programmable-endpoints/{endpointRef}",
            "capability": c.ENDPOINT_READ,
        },
    )
    async def read_endpoint(request: Request[Any, Any, Any]) -> Response[bytes]:
        ref = path_ref(request)
        with state.lock:
            kind, ep = lookup_kind(state, ref)
            result = {
                "kind": kind,
                "endpoint": ep.render(with_guard=True) if ep else None,
                "replacementLineage": {
                    "predecessorEndpointRef": None,
                    "successorEndpointRef": None,
                },
                "thresholdSettlementLifecycle": None,
                "transientDrainLifecycle": None,
                "endpointRef": None if ep else ref,
            }
            receipt = state.ids.new()
        value = {**scope_fields(state), "result": result}
        return json_response(success(200, read_body(value, receipt, ACCOUNTS), [receipt]), 200)

    @get(
        "/programmable-endpoints/{endpointRef:str}/effective-operation-readiness",
        opt={
            "route_key": "GET /v1/programmable-endpoints/{endpointRef}/effective-operation-readiness",
            "capability": c.ENDPOINT_READ,
        },
    )
    async def readiness(request: Request[Any, Any, Any]) -> Response[bytes]:
        ref = path_ref(request)
        with state.lock:
            kind, ep = lookup_kind(state, ref)
            result = {
                "kind": kind,
                "endpoint": ep.render(with_guard=False) if ep else None,
                "operationFamilies": ep.readiness() if ep else [],
            }
            receipt = state.ids.new()
        value = {**scope_fields(state), "result": result}
        return json_response(success(200, read_body(value, receipt, COMPLIANCE), [receipt]), 200)

    @post(
        "/programmable-endpoints/{endpointRef:str}/lifecycle",
        opt={
            "route_key": "POST /v1/programmable-endpoints/{endpointRef}/lifecycle",
            "capability": c.ENDPOINT_LIFECYCLE,
        },
    )
    async def lifecycle(request: Request[Any, Any, Any]) -> Response[bytes]:
        ref = path_ref(request)
        key, body = await read_write_body(request)

        def perform(intake: Intake) -> tuple[int, dict[str, Any]]:
            refuse_fields(body, LIFECYCLE_REFUSED)
            operation = require(body, "operation")
            reason = require(body, "reason")
            allowed: tuple[str, ...]
            if operation == "suspend":
                allowed, source_posture, target = SUSPEND_REASONS, ACTIVE, SUSPENDED
            elif operation == "resume":
                allowed, source_posture, target = RESUME_REASONS, SUSPENDED, ACTIVE
            else:
                raise invalid_input("`operation` must be `suspend` or `resume`.")
            if reason not in allowed:
                raise invalid_input(
                    f"`reason` for {operation} must be one of {', '.join(allowed)}."
                )
            version, fp = parse_guard(body)
            ep = lookup_kind(state, ref)[1]
            if ep is None:
                raise not_found(f"No programmable endpoint {ref}.")
            if (version, fp) != (ep.state_version, ep.guard()["fingerprint"]):
                raise conflict(
                    "StaleLifecycleGuard",
                    "The lifecycle guard is stale: read the endpoint again, decide again, and "
                    "submit a new command with a new Idempotency-Key.",
                )
            if ep.posture != source_posture:
                raise conflict(
                    "LifecycleTransitionRejected",
                    f"Cannot {operation} an endpoint whose posture is {ep.posture}.",
                )
            intake.subject_ref = ref
            previous, previous_version = ep.posture, ep.state_version
            ep.posture, ep.state_version = target, ep.state_version + 1
            applied = {
                "endpointRef": ref,
                "previousPosture": previous,
                "currentPosture": target,
                "previousStateVersion": previous_version,
                "currentStateVersion": ep.state_version,
                "lifecycleGuard": ep.guard(),
                "reason": reason,
            }
            receipt = state.ids.new()
            value = {**scope_fields(state), "result": {"kind": "applied", "applied": applied}}
            content = success(
                200,
                {
                    "command": {
                        "occurrence": "first_accepted",
                        "lifecycleStatus": "applied",
                        "replayed": False,
                    },
                    "endpoint": read_body(value, receipt, ACCOUNTS),
                },
                [receipt],
            )
            return 200, content

        def first_again(intake: Intake) -> tuple[int, dict[str, Any]]:
            status, content = stored_replay(intake)
            again = copy.deepcopy(content)
            again["body"]["command"]["replayed"] = True
            return status, again

        route = "POST /v1/programmable-endpoints/{endpointRef}/lifecycle"
        replay = replay_for(state.config.variant.write_replay, route, first_again)
        operation_key = f"POST /v1/programmable-endpoints/{ref}/lifecycle"
        return idempotent_write(state, key, operation_key, body, perform, replay)

    return [create_endpoint, list_endpoints, read_endpoint, readiness, lifecycle]
